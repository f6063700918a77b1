"""An environment's tasks written as Harbor task folders (``palaestra tasks ENV --format harbor``).

A Harbor task is checked from the machine the agent leaves behind, after the agent is gone:
``tests/test.sh`` sees files, never the model's messages or tool calls. So only an environment
whose reward can be computed from a file can be written honestly. Such an environment ships a
``harbor_check.py`` in its package: a standard-library script, ``check.py ANSWER_FILE
TASK_JSON``, printing the reward its ``verify`` gives a final answer with that text (its tests
assert the two agree). Each folder then holds:

- ``instruction.md``: the task's last user message, and where to leave the final answer
  (``/app/answer.txt``);
- ``task.toml``: palaestra's budgets, one CPU, no network (Harbor's default is public); the
  tests run in a machine of their own (Harbor's ``separate`` verifier, what ``harbor init``
  writes and ``harbor lint`` asks for), given the answer file as the task's one artifact;
- ``environment/Dockerfile``: a Debian base with python3 and a non-root user ``agent``, who
  owns ``/app`` (see ``DOCKERFILE``);
- ``tests/``: ``test.sh``, the environment's ``check.py`` and the task row (``task.json``,
  which holds the expected answer: the agent never sees ``tests/``);
- ``solution/solve.sh``: writes the final message of the environment's gold actions, when
  it has them.

An environment that runs Harbor task folders already (``terminal``, ``swe_local``, any
``HarborEnvironment`` with its folders) is written as copies of its folders: they are Harbor
tasks as they are (the first ``num_tasks`` by name when given). A copy whose tests read the
machine the agent leaves (a shared verifier: terminal's check files, processes and state
anywhere in it, which no separate machine given a few artifacts could see) says so to
Harbor's linter in its own ``task.toml``: ``[metadata.harbor.lint] ignore =
["shared-verifier"]``, Harbor's per-task lint configuration (``shared_verifier_said``), so
``harbor lint`` passes on the folders written.

Any other environment is refused with one line saying why (its verify reads the trajectory).
"""

from __future__ import annotations

import os
import shutil
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from palaestra.collection.assembly import FoundEnvironment
from palaestra.environment.base import Environment
from palaestra.environment.kinds.harbor import HarborEnvironment
from palaestra.errors import ConfigError
from palaestra.run.export import found_environment, task_rows, task_source
from palaestra.types import JsonDict, message_text
from palaestra.wire.harbor import (
    CONFIG,
    AgentConfig,
    EnvironmentConfig,
    StepConfig,
    TaskConfig,
    TaskFolder,
    VerifierConfig,
    write_task,
)
from palaestra.wire.rows import PARAMS

CHECK_MODULE = "harbor_check.py"
"""The file an environment's package ships to be written as Harbor folders."""
ANSWER_FILE = "/app/answer.txt"

DOCKERFILE = """\
# The machine: a Debian base with python3 (the tests run check.py with it).
# palaestra's sandbox providers build debian:bookworm-slim offline from Debian's packages
# (mmdebstrap), python3 included, so the RUN below does nothing there; elsewhere it installs
# python3 from Debian's archive.
FROM debian:bookworm-slim
RUN command -v python3 >/dev/null || (apt-get update \\
    && apt-get install -y --no-install-recommends python3 \\
    && rm -rf /var/lib/apt/lists/*)
RUN useradd --create-home agent && mkdir -p /app && chown agent /app
WORKDIR /app
"""
AGENT_USER = "agent"
"""The agent works as this user, not root; the tests run as the image's default (root)."""

TEST_SCRIPT = f"""\
#!/bin/bash
# The reward: the environment's own check of the final answer the agent left in
# {ANSWER_FILE} (handed to this machine as the task's artifact). Written beside, then moved:
# a crashed check leaves no reward (an error, not 0).
set -euo pipefail
mkdir -p /logs/verifier
python3 /tests/check.py {ANSWER_FILE} /tests/task.json > /logs/verifier/reward.txt.partial
mv /logs/verifier/reward.txt.partial /logs/verifier/reward.txt
"""


def export_harbor(
    env: str | Environment | type[Environment],
    output: str | os.PathLike[str],
    *,
    num_tasks: int | None = None,
    seed: int = 0,
    env_args: Mapping[str, Any] | None = None,
) -> int:
    """Write ``env``'s tasks as Harbor task folders in ``output``; the number written.

    The example tasks, or ``num_tasks`` generated with ``seed``, as ``export_tasks``. Folders
    are named ``<env>-<index>``. ``output`` must not exist or be empty; it is written whole
    (beside, then renamed) or not at all. An environment that cannot be checked from a file,
    or an unknown one, is a one-line ``ConfigError``.
    """
    found = found_environment(env, env_args)
    harbor = issubclass(found.cls, HarborEnvironment)
    check = None if harbor else check_script(found)
    path = Path(output)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise ConfigError(
            f"{path} exists and is not an empty directory: Harbor folders go in a new one"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    generated = path.with_name(f"{path.name}.{os.getpid()}.generated")
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        environment = found.build()
        temporary.mkdir()
        written = 0
        if isinstance(environment, HarborEnvironment):
            for name, task in sorted(environment.tasks.items())[:num_tasks]:
                shutil.copytree(task.path, temporary / name, symlinks=True)
                if _shares_verifier(task.config):
                    shared_verifier_said(temporary / name / CONFIG)
                written += 1
        else:
            assert check is not None
            source = task_source(found, num_tasks, seed, generated)
            for idx, row in enumerate(task_rows(source)):
                folder = task_folder(found.name, environment, row, check)
                write_task(folder, temporary / f"{found.name}-{idx:04d}")
                written += 1
        if path.exists():
            path.rmdir()
        os.replace(temporary, path)
    finally:
        generated.unlink(missing_ok=True)
        shutil.rmtree(temporary, ignore_errors=True)
    return written


LINT_IGNORE = "shared-verifier"
"""Harbor's lint rule asking for a separate verifier, which a task checking the agent's own
machine cannot have."""


def _shares_verifier(config: TaskConfig) -> bool:
    passes: list[StepConfig | None] = [*(config.steps or [])] or [None]
    return any(not config.separate_verifier(step) for step in passes)


def shared_verifier_said(path: Path) -> None:
    """Add ``[metadata.harbor.lint] ignore = ["shared-verifier"]`` to the ``task.toml`` at
    ``path`` (a copy): the task's tests need the agent's machine, by design. A file whose
    ``metadata.harbor`` is set already is left as its author wrote it."""
    text = path.read_text(encoding="utf-8")
    metadata = tomllib.loads(text).get("metadata")
    if isinstance(metadata, dict) and "harbor" in metadata:
        return
    added = (
        f"{text.rstrip()}\n\n"
        "# The tests check the machine the agent leaves (a shared verifier), by design.\n"
        f'[metadata.harbor.lint]\nignore = ["{LINT_IGNORE}"]\n'
    )
    tomllib.loads(added)  # still one TOML document (metadata is a table, not inline)
    path.write_text(added, encoding="utf-8")


def check_script(found: FoundEnvironment) -> str:
    """The text of the environment's ``harbor_check.py``; a one-line ``ConfigError`` naming
    why when it has none."""
    module = sys.modules.get(found.cls.__module__)
    file = getattr(module, "__file__", None)
    check = Path(file).parent / CHECK_MODULE if file else None
    if check is None or not check.is_file():
        raise ConfigError(
            f"environment '{found.name}' cannot be written as Harbor folders: its verify reads "
            f"the model's trajectory, and its package has no {CHECK_MODULE} to score a final "
            f"answer left in a file (calculator has one)"
        )
    return check.read_text(encoding="utf-8")


def task_folder(env_name: str, environment: Environment, row: JsonDict, check: str) -> TaskFolder:
    """One task row as a Harbor folder (see the module docstring)."""
    prompt = _prompt(row)
    instruction = (
        f"{prompt.rstrip()}\n\n"
        f"Write your final answer to `{ANSWER_FILE}`: that file is what is checked.\n"
    )
    config = TaskConfig(
        metadata={
            "author_name": "palaestra",
            "category": env_name,
            "tags": [env_name, *([str(row["kind"])] if isinstance(row.get("kind"), str) else [])],
        },
        source=f"palaestra:{env_name}",
        verifier=VerifierConfig(timeout_sec=60.0, environment_mode="separate"),
        agent=AgentConfig(timeout_sec=600.0, user=AGENT_USER),
        environment=EnvironmentConfig(
            build_timeout_sec=600.0,
            cpus=1,
            memory_mb=1024,
            storage_mb=2048,
            network_mode="no-network",
        ),
        artifacts=[ANSWER_FILE],
    )
    task = {key: value for key, value in row.items() if key != PARAMS}
    return TaskFolder(
        config=config,
        instruction=instruction,
        dockerfile=DOCKERFILE,
        test_script=TEST_SCRIPT,
        tests={"check.py": check, "task.json": orjson.dumps(task).decode() + "\n"},
        solve_script=_solve_script(environment, row),
    )


def _prompt(row: JsonDict) -> str:
    """The task's last user message, as text; a ``ConfigError`` when it has none."""
    given = row[PARAMS].get("input")
    if isinstance(given, str):
        return given
    for item in reversed(given or []):
        if isinstance(item, dict) and item.get("role") == "user":
            text = message_text(item)
            if text.strip():
                return text
    raise ConfigError("a task has no user message to write as instruction.md")


def _solve_script(environment: Environment, row: JsonDict) -> str | None:
    """The oracle: writes the last assistant message of the first gold path; None without."""
    paths = environment.gold_actions(row)
    if not paths:
        return None
    answers = [
        message_text(step)
        for step in paths[0]
        if isinstance(step, dict) and step.get("role") == "assistant"
    ]
    if not answers:
        return None
    marker = "PALAESTRA_ANSWER"
    if marker in answers[-1]:
        raise ConfigError(f"a gold answer contains {marker}: cannot write it as solve.sh")
    return (
        "#!/bin/bash\n"
        "# The oracle: the final answer of the environment's gold actions.\n"
        "set -euo pipefail\n"
        f"mkdir -p {Path(ANSWER_FILE).parent}\n"
        f"cat > {ANSWER_FILE} <<'{marker}'\n{answers[-1].rstrip()}\n{marker}\n"
    )
