"""AgentBench's OS-interaction tasks, as inspect_evals ships them, written as Harbor folders.

The data (``agent_bench_os.json``: dev, ``agent_bench_os_test.json``: test) and the check
scripts (``scripts/check/*.py``, ``scripts/checking/*.sh``, ``scripts/example/*.sh``) are read
from inspect_evals' package (``inspect_evals/agent_bench/data``: an installed package, its
wheel, or an unpacked copy) at generation time only; nothing of inspect_evals runs later.

What follows inspect_evals (``agent_bench_os_dataset.py``, ``utils.py``,
``agent_bench_os_scorer.py``, read to match their behaviour):

- paths ``/root`` and ``/usr`` in a record become ``/home/agent``, the agent's home and working
  directory; the machine's login shell is bash (``SHELL ["/bin/bash", "-l", "-c"]``); an
  ``init`` runs at build time (commands, a one-line instruction or a script), ``<random-string>``
  is a UUID (drawn from the task's id here, so builds repeat), ``bin/find`` tasks get a copy of
  find in ``~/bin``, and ``user`` makes the agent that user;
- scoring: ``match`` compares the answer with the expected text; a ``check`` list runs the
  ``example`` command (as root, in the home) for the expected answer and the suite's
  comparison script (``integer-match.py``, ``string-match.py``, ``size-match.py``) on the
  answer and it; a ``check`` command or file must exit 0.

Where a Harbor folder differs: the agent has no final message, so an answer is the content of
``/answer/answer.txt`` (surrounding whitespace stripped); the image is Debian's bookworm-slim
with the offline package list, not a pinned ``python`` image built with the network; and the
checks run nothing of the agent's as root: the suite's commands run in bash without start-up
files (a login shell would run the agent's ``~/.profile``), a check file (which calls the
command the agent wrote) runs as ``nobody``, and ``runuser -l USER -c`` in a check becomes
``runuser -u USER -- bash --noprofile --norc -c`` (``LOGIN_AS``).

Skipped, with the reason in the manifest: tasks that start a background program with the
machine (``start``, ``init_at_start``: a Harbor folder has no such hook), tasks whose init
script comes from a clone of AgentBench's git repository (``init: {file: ...}``: needs the
network), and tasks with neither an expected answer nor an example to make an oracle from.
Tasks whose oracle does not score 1 (or whose untouched machine scores more than 0) on this
base are found by the validation, not here (see README.md).
"""

from __future__ import annotations

import importlib.util
import json
import random
import re
import shlex
import uuid
import zipfile
from pathlib import Path
from typing import Any

from palaestra.wire.harbor import (
    AgentConfig,
    EnvironmentConfig,
    TaskConfig,
    TaskFolder,
    VerifierConfig,
    folder_digest,
    write_task,
)
from scripts.datasets.terminal.spec import CHECK_PRELUDE, TEST_SCRIPT, constants

DATA = "inspect_evals/agent_bench/data"
SPLITS = {"dev": "agent_bench_os.json", "test": "agent_bench_os_test.json"}
HOME = "/home/agent"
ANSWER = "/answer/answer.txt"
PACKAGES = (
    "python3 git procps file jq gawk bc sqlite3 zip unzip tree less xxd bsdextrautils cron "
    "ca-certificates"
)
SOURCE = "inspect_evals:agent_bench_os"
EXCLUDED_FILE = Path(__file__).with_name("agentbench_excluded.jsonl")
"""Tasks the validation found cannot score on this base (oracle below 1 or null above 0), one
JSON object a line: ``id`` and ``reason``. Generation leaves them out, listed as skipped."""


def excluded() -> dict[str, str]:
    """``EXCLUDED_FILE`` as id to reason."""
    if not EXCLUDED_FILE.is_file():
        return {}
    rows = [json.loads(line) for line in EXCLUDED_FILE.read_text().splitlines() if line.strip()]
    return {row["id"]: row["reason"] for row in rows}


CHECK = """
# The suite's commands run in bash without start-up files (a login shell would run the
# agent's ~/.profile as root) and with an environment of the check's own. The example and
# the state checks run as root; a check script calls the program the agent wrote, so it runs
# as nobody, who can write nothing the verifier reads.
SHELL_ENV = {"PATH": PATH, "HOME": HOME, "PYTHONNOUSERSITE": "1"}

def shell(command, user=None):
    argv = ["/bin/bash", "--noprofile", "--norc", "-c", "cd " + HOME + " && " + command]
    return run(argv, user=user, env=SHELL_ENV)

def passed():
    answer = read(ANSWER)
    answer = None if answer is None else answer.strip()
    if "check" not in EVALUATION:
        return answer is not None and answer == str(EVALUATION["match"]).strip()
    check = EVALUATION["check"]
    if isinstance(check, dict) and "file" in check:
        done = shell("bash /tests/scripts/" + check["file"], user=NOBODY)
        return done is not None and done.returncode == 0
    if isinstance(check, dict) and "code" in check:
        done = shell(check["code"])
        return done is not None and done.returncode == 0
    if len(check) == 1 and isinstance(check[0], str):
        done = shell(check[0])
        return done is not None and done.returncode == 0
    if answer is None:
        return False
    params = [answer]
    for item in check:
        if item is None:
            if "match" in EVALUATION:
                params.append(str(EVALUATION["match"]))
                continue
            example = EVALUATION["example"]
            code = example["code"] if isinstance(example, dict) else example
            done = shell(code)
            if done is None or done.returncode != 0:
                return False
            params.append(done.stdout.strip())
        elif isinstance(item, dict) and "file" in item:
            script = "/tests/scripts/" + item["file"]
            done = run(["/usr/bin/python3", "-I", "-S", script, *params], env=SHELL_ENV)
            if done is None or done.returncode != 0:
                return False
            if done.stdout.strip():
                params.append(done.stdout.strip())
    return True

finish(passed())
"""
LOGIN_AS = re.compile(r"runuser -l (\S+) -c ")
"""A check that runs a command as another user through a login shell (which would run that
user's start-up files, which the agent can write): the same command without them."""


def _checked(evaluation: dict[str, Any]) -> dict[str, Any]:
    """``evaluation`` with its check code's ``runuser -l USER -c`` run without start-up files."""
    check = evaluation.get("check")
    if isinstance(check, dict) and isinstance(check.get("code"), str):
        code = LOGIN_AS.sub(r"runuser -u \1 -- /bin/bash --noprofile --norc -c ", check["code"])
        return {**evaluation, "check": {**check, "code": code}}
    return evaluation


class _Data:
    """inspect_evals' ``agent_bench/data``: from the installed package, a wheel or a folder."""

    def __init__(self, source: Path) -> None:
        self.zip: zipfile.ZipFile | None = None
        self.root: Path | None = None
        if str(source) == "installed":
            spec = importlib.util.find_spec("inspect_evals")
            if spec is None or not spec.submodule_search_locations:
                raise ValueError("inspect_evals is not installed (pass its wheel instead)")
            self.root = Path(next(iter(spec.submodule_search_locations))) / "agent_bench" / "data"
        elif source.suffix == ".whl":
            self.zip = zipfile.ZipFile(source)
        elif (source / DATA).is_dir():
            self.root = source / DATA
        else:
            self.root = source
        if not self.exists(SPLITS["dev"]):
            raise ValueError(f"{source}: no AgentBench OS data ({DATA}/{SPLITS['dev']})")

    def exists(self, name: str) -> bool:
        if self.zip is not None:
            return f"{DATA}/{name}" in self.zip.namelist()
        assert self.root is not None
        return (self.root / name).is_file()

    def text(self, name: str) -> str:
        if self.zip is not None:
            return self.zip.read(f"{DATA}/{name}").decode("utf-8")
        assert self.root is not None
        return (self.root / name).read_text(encoding="utf-8")


def _home(value: Any) -> Any:
    """inspect_evals' path rewrite: ``/root`` and ``/usr`` become the agent's home."""
    if isinstance(value, dict):
        return {key: _home(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_home(item) for item in value]
    if isinstance(value, str):
        return value.replace("/root", HOME).replace("/usr", HOME)
    return value


def skip_reason(record: dict[str, Any]) -> str | None:
    """Why the record cannot be a Harbor folder here, or None."""
    create = record.get("create")
    init = create.get("init") if isinstance(create, dict) else None
    steps = init if isinstance(init, list) else [init]
    if "start" in record or (isinstance(create, dict) and create.get("init_at_start")):
        return "starts a background program with the machine (no such hook in a Harbor folder)"
    if any(isinstance(step, dict) and "file" in step for step in steps):
        return "its init script comes from a clone of AgentBench's git repository (network)"
    evaluation = record["evaluation"]
    if "match" not in evaluation and "example" not in evaluation:
        return "no expected answer and no example to make an oracle from"
    return None


def _dockerfile(record: dict[str, Any], task_id: str) -> tuple[str, dict[str, str]]:
    """The Dockerfile, and the files of its context."""
    create = record.get("create")
    init = create.get("init") if isinstance(create, dict) else None
    rng = random.Random(task_id)
    lines = [
        f"# AgentBench OS task {task_id}, from inspect_evals (converted by palaestra).",
        "FROM debian:bookworm-slim",
        f"RUN apt-get update && apt-get install -y --no-install-recommends {PACKAGES}"
        " && rm -rf /var/lib/apt/lists/*",
        "RUN ln -sf /usr/bin/python3 /usr/local/bin/python"
        " && mkdir -p /answer && chmod 1777 /answer",
        'SHELL ["/bin/bash", "-l", "-c"]',
        f"WORKDIR {HOME}",
    ]
    context: dict[str, str] = {}
    user = None
    for step in init if isinstance(init, list) else [init]:
        if isinstance(step, dict) and "user" in step:
            user = step["user"]
    if user is None:
        lines.append(f"ENV HOME={HOME}")
    if "bin/find" in str(record):
        lines += [f"RUN mkdir -p {HOME}/bin", f"RUN cp /usr/bin/find {HOME}/bin/find"]
    for step in init if isinstance(init, list) else [init]:
        if isinstance(step, dict) and "code" in step:
            code = step["code"].replace("<random-string>", str(uuid.UUID(int=rng.getrandbits(128))))
            lines += [f"RUN {line}" for line in code.split("\n") if line.strip()]
        elif isinstance(step, str):
            if step.strip().startswith("#!/bin/bash") or "\n" in step.strip():
                context["init_script.sh"] = step
                lines += [
                    "COPY init_script.sh /tmp/init_script.sh",
                    "RUN bash /tmp/init_script.sh && rm /tmp/init_script.sh",
                ]
            else:
                lines.append(f"RUN {step.strip()}")
    if user is not None:
        lines.append(f"USER {user}")
    return "\n".join(lines) + "\n", context


def _solve(record: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """The oracle's body: the example (its output as the answer when one is asked for)."""
    evaluation = record["evaluation"]
    wants_answer = "match" in evaluation or (
        isinstance(evaluation.get("check"), list) and None in evaluation["check"]
    )
    example = evaluation.get("example")
    files: dict[str, str] = {}
    if example is None:
        return f"printf '%s\\n' {shlex.quote(str(evaluation['match']))} > {ANSWER}\n", files
    if isinstance(example, dict) and "file" in example:
        command = f"bash /solution/{example['file']}"
        files[example["file"]] = ""
    else:
        command = example["code"] if isinstance(example, dict) else str(example)
    run = f"bash --login -c {shlex.quote(f'cd {HOME} && {command}')}"
    if wants_answer:
        return f"answer=$({run})\nprintf '%s\\n' \"$answer\" > {ANSWER}\n", files
    return f"{run}\n", files


def convert(source: Path, output: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Write every convertible task of both splits under ``output``; (manifest entries, skipped)."""
    data = _Data(source)
    failing = excluded()
    entries: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for split, name in SPLITS.items():
        for record in json.loads(data.text(name)):
            task_id = f"agentbench-{split}-{int(record['id']):03d}"
            reason = skip_reason(record) or failing.get(task_id)
            if reason is not None:
                skipped.append({"id": task_id, "reason": reason})
                continue
            record = _home(record)
            folder = output / task_id
            _write(data, record, task_id, split, folder)
            entries.append(
                {
                    "id": task_id,
                    "family": "agentbench",
                    "kind": split,
                    "difficulty": None,
                    "source": SOURCE,
                    "digest": folder_digest(folder),
                }
            )
    return entries, skipped


def _write(data: _Data, record: dict[str, Any], task_id: str, split: str, folder: Path) -> None:
    evaluation = record["evaluation"]
    dockerfile, context = _dockerfile(record, task_id)
    solve, solve_files = _solve(record)
    wants_answer = "match" in evaluation or (
        isinstance(evaluation.get("check"), list) and None in evaluation["check"]
    )
    instruction = record["description"].strip() + "\n"
    if wants_answer:
        instruction += (
            f"\nWrite your answer, and nothing else, to `{ANSWER}`"
            " (that file is what is checked).\n"
        )
    agent_user = "root"
    create = record.get("create")
    init = create.get("init") if isinstance(create, dict) else None
    for step in init if isinstance(init, list) else [init]:
        if isinstance(step, dict) and "user" in step:
            agent_user = step["user"]
    scripts = sorted({item["file"] for item in _items(evaluation.get("check")) if "file" in item})
    tests = {f"scripts/{name}": data.text(f"scripts/{name}") for name in scripts}
    config = TaskConfig(
        metadata={
            "author_name": "AgentBench (THUDM), via inspect_evals",
            "category": "agentbench",
            "tags": ["terminal", "agentbench", split, *record.get("labels", [])],
            "id": task_id,
        },
        source=SOURCE,
        verifier=VerifierConfig(timeout_sec=600.0, user="root"),
        agent=AgentConfig(timeout_sec=900.0, user=agent_user),
        environment=EnvironmentConfig(
            build_timeout_sec=600.0,
            cpus=1,
            memory_mb=1024,
            storage_mb=2048,
            network_mode="no-network",
        ),
    )
    write_task(
        TaskFolder(
            config=config,
            instruction=instruction,
            dockerfile=dockerfile,
            test_script=TEST_SCRIPT,
            tests={
                "check.py": CHECK_PRELUDE
                + constants(HOME=HOME, ANSWER=ANSWER, EVALUATION=_checked(evaluation))
                + CHECK
            },
            solve_script="#!/bin/bash\n# The oracle: AgentBench's example solution.\n"
            "set -uo pipefail\n" + solve,
        ),
        folder,
    )
    for name, text in tests.items():
        target = folder / "tests" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for name, text in context.items():
        (folder / "environment" / name).write_text(text, encoding="utf-8")
    for name in solve_files:
        target = folder / "solution" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(data.text(f"scripts/{name}"), encoding="utf-8")


def _items(check: Any) -> list[dict[str, Any]]:
    if isinstance(check, dict):
        return [check]
    if isinstance(check, list):
        return [item for item in check if isinstance(item, dict)]
    return []
