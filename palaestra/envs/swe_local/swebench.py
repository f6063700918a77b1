"""SWE-bench-format instances (and SWE-smith's and SWE-rebench's rows) as Harbor task folders
that run in the user's own images.

For users who have the images elsewhere (they cannot be built here: they hold each repository
at its commit with its own environment). One JSON object per line, in one of three formats,
told apart per line (``row_format``):

- **SWE-bench**: ``instance_id``, ``repo``, ``base_commit``, ``patch`` (the gold fix),
  ``test_patch``, ``problem_statement``, ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` (lists, or JSON
  text of lists, as the Hugging Face dataset stores them); optional ``version``,
  ``image_name`` (else ``--image`` with ``{instance_id}`` and ``{id_1776}``, SWE-bench's own
  image naming, ``__`` spelled ``_1776_``) and ``test_cmd`` (else ``--test-cmd``).
- **SWE-rebench**: SWE-bench's fields, plus ``docker_image`` (its pre-built image, used as
  ``image_name``) and ``install_config`` (its ``test_cmd``, text or a list of commands, is the
  test command); ``meta`` and ``license_name`` are kept in the task's metadata.
- **SWE-smith**: ``instance_id``, ``repo``, ``patch`` (the *bug*: applied to the image's
  clean repository it breaks FAIL_TO_PASS), ``FAIL_TO_PASS``, ``PASS_TO_PASS``,
  ``problem_statement`` and ``image_name`` (no ``base_commit``, no ``test_patch``). The bug is
  applied and committed in the Dockerfile, so the agent starts from a clean ``git status``;
  the gold patch is its reverse.

Each folder:

- ``environment/Dockerfile``: ``FROM <image>``, ``WORKDIR /testbed`` (the image holds the
  repository, as SWE-bench's and SWE-smith's do), plus the bug's commit for a SWE-smith row;
- ``tests/test.sh``: puts the test files back (at ``base_commit``; for SWE-smith at the bug's
  commit, ``HEAD`` when the box starts), applies ``test_patch`` (SWE-bench and SWE-rebench),
  runs the test command on FAIL_TO_PASS and PASS_TO_PASS; reward 1 iff it exits 0. The ids are
  passed as arguments, which suits pytest repositories; another runner needs its own
  ``test_cmd``;
- ``solution/solve.sh``: applies the gold patch (SWE-smith: reverses the bug).

A missing or bad field is refused with one line naming the file, line and field.

Usage::

    python -m palaestra.envs.swe_local.swebench INSTANCES.jsonl OUT_DIR [--image TEMPLATE]
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from palaestra import ConfigError
from palaestra.wire.harbor import (
    AgentConfig,
    EnvironmentConfig,
    TaskConfig,
    TaskFolder,
    VerifierConfig,
    write_task,
)

REQUIRED = (
    "instance_id",
    "repo",
    "base_commit",
    "patch",
    "test_patch",
    "problem_statement",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
)
IMAGE = "swebench/sweb.eval.x86_64.{id_1776}:latest"
SMITH_REQUIRED = (
    "instance_id",
    "repo",
    "patch",
    "problem_statement",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "image_name",
)
TEST_CMD = "python -m pytest -p no:cacheprovider -rA"
BUG = "bug.patch"
BASE_FILE = "/etc/palaestra-base-commit"
"""Where a SWE-smith task's image records the bug's commit (outside the repository)."""
MARKER = "PALAESTRA_PATCH"


def read_instances(path: Path) -> list[dict[str, Any]]:
    """The instances of ``path`` (JSON lines; blank lines skipped); a one-line ``ConfigError``
    naming the file, line and field at the first bad one."""
    instances = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise ConfigError(f"{where}: not a JSON object: {error.msg}") from None
        if not isinstance(item, dict):
            raise ConfigError(f"{where}: not a JSON object")
        kind = row_format(item)
        item["_format"] = kind
        required, named = (
            (SMITH_REQUIRED, "SWE-smith's format")
            if kind == "swe-smith"
            else (REQUIRED, "SWE-bench's format")
        )
        for name in required:
            if item.get(name) in (None, ""):
                raise ConfigError(f"{where}: field '{name}' is missing ({named})")
        if kind == "swe-rebench":
            _rebench(item, where)
        for name in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            item[name] = _test_list(item[name], f"{where}: field '{name}'")
        if not item["FAIL_TO_PASS"]:
            raise ConfigError(f"{where}: field 'FAIL_TO_PASS' is empty: nothing would check a fix")
        if not isinstance(item["instance_id"], str) or "/" in item["instance_id"]:
            raise ConfigError(f"{where}: field 'instance_id' must be a name without '/'")
        instances.append(item)
    if not instances:
        raise ConfigError(f"{path}: no instances")
    return instances


def row_format(item: dict[str, Any]) -> str:
    """``swe-smith`` (an image and a bug, no ``test_patch`` or ``base_commit``),
    ``swe-rebench`` (SWE-bench's fields with ``install_config`` or ``docker_image``), else
    ``swe-bench``."""
    if "test_patch" not in item and "base_commit" not in item and "image_name" in item:
        return "swe-smith"
    if "install_config" in item or "docker_image" in item:
        return "swe-rebench"
    return "swe-bench"


def _rebench(item: dict[str, Any], where: str) -> None:
    """SWE-rebench's image and test command in SWE-bench's fields (``image_name``,
    ``test_cmd``), unless the row sets those itself."""
    image = item.get("docker_image")
    if image not in (None, "") and not item.get("image_name"):
        if not isinstance(image, str):
            raise ConfigError(f"{where}: field 'docker_image' must be an image name")
        item["image_name"] = image
    config = item.get("install_config")
    if config is None:
        return
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except json.JSONDecodeError:
            raise ConfigError(f"{where}: field 'install_config' is text but not JSON") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{where}: field 'install_config' must be an object")
    command = config.get("test_cmd")
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        command = " && ".join(command)
    if command not in (None, "") and not isinstance(command, str):
        raise ConfigError(f"{where}: field 'install_config.test_cmd' must be text or a list")
    if command and not item.get("test_cmd"):
        item["test_cmd"] = command


def _test_list(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ConfigError(f"{where} is text but not a JSON list") from None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where} must be a list of test ids")
    return value


def image_for(instance: dict[str, Any], template: str) -> str:
    """The instance's ``image_name``, else ``template`` filled in."""
    given = instance.get("image_name")
    if isinstance(given, str) and given:
        return given
    identifier = instance["instance_id"]
    return template.format(instance_id=identifier, id_1776=identifier.replace("__", "_1776_"))


def _changed_files(diff: str) -> list[str]:
    return sorted({line[6:].strip() for line in diff.splitlines() if line.startswith("+++ b/")})


def _test_files(instance: dict[str, Any]) -> list[str]:
    """The files the tests live in: those ``test_patch`` changes, else (SWE-smith) those the
    test ids name (``path::test``)."""
    if instance["_format"] != "swe-smith":
        return _changed_files(instance["test_patch"])
    ids = instance["FAIL_TO_PASS"] + instance["PASS_TO_PASS"]
    return sorted({node.partition("::")[0] for node in ids if "::" in node})


def test_script(instance: dict[str, Any], test_cmd: str) -> str:
    """``tests/test.sh`` (see the module docstring)."""
    smith = instance["_format"] == "swe-smith"
    files = " ".join(shlex.quote(name) for name in _test_files(instance))
    ids = " ".join(
        shlex.quote(node) for node in instance["FAIL_TO_PASS"] + instance["PASS_TO_PASS"]
    )
    base = f'"$(cat {BASE_FILE})"' if smith else shlex.quote(instance["base_commit"])
    restore = f"git checkout -q {base} -- {files} 2>/dev/null || true\n" if files else ""
    run = (
        f"{test_cmd} {ids} && reward=1\n"
        if smith
        else f"if git apply -v /tests/test.patch; then\n    {test_cmd} {ids} && reward=1\nfi\n"
    )
    return (
        "#!/bin/bash\n"
        "# The reward: the instance's FAIL_TO_PASS and PASS_TO_PASS"
        + ("" if smith else " after its test_patch")
        + ".\n"
        "# Written beside, then moved: a crashed check leaves no reward (an error, not 0).\n"
        "set -o pipefail\n"
        "mkdir -p /logs/verifier\n"
        "cd /testbed\n"
        "if [ -f /opt/miniconda3/bin/activate ]; then\n"
        "    source /opt/miniconda3/bin/activate && conda activate testbed\n"
        "fi\n"
        f"{restore}"
        "reward=0\n"
        f"{run}"
        'echo "$reward" > /logs/verifier/reward.txt.partial\n'
        "mv /logs/verifier/reward.txt.partial /logs/verifier/reward.txt\n"
    )


def _dockerfile(instance: dict[str, Any], image: str) -> str:
    """``FROM`` the image; a SWE-smith row's bug applied and committed (the agent's base),
    its commit id kept where ``test.sh`` reads it."""
    text = f"FROM {image}\nWORKDIR /testbed\n"
    if instance["_format"] != "swe-smith":
        return text
    return text + (
        f"COPY {BUG} /tmp/{BUG}\n"
        f"RUN git apply /tmp/{BUG} && rm /tmp/{BUG} && git add -A \\\n"
        "    && git -c user.name=palaestra -c user.email=palaestra@localhost commit -qm base \\\n"
        f"    && git rev-parse HEAD > {BASE_FILE}\n"
    )


def task_folder(instance: dict[str, Any], image: str, test_cmd: str) -> TaskFolder:
    """One instance as a Harbor folder in its own image."""
    if MARKER in instance["patch"]:
        raise ConfigError(f"{instance['instance_id']}: the patch contains {MARKER}")
    smith = instance["_format"] == "swe-smith"
    metadata: dict[str, Any] = {
        "category": "swe",
        "format": instance["_format"],
        "repo": instance["repo"],
        **({"base_commit": instance["base_commit"]} if not smith else {}),
        **({"version": str(instance["version"])} if instance.get("version") else {}),
    }
    for extra in ("license_name", "meta"):
        if instance.get(extra) not in (None, ""):
            metadata[extra] = instance[extra] if extra != "meta" else json.dumps(instance[extra])
    config = TaskConfig(
        metadata=metadata,
        source=f"{instance['_format'].replace('-', '')}:{instance['instance_id']}",
        verifier=VerifierConfig(timeout_sec=1800.0),
        agent=AgentConfig(timeout_sec=3600.0),
        environment=EnvironmentConfig(
            build_timeout_sec=1800.0, network_mode="no-network", workdir="/testbed"
        ),
    )
    instruction = (
        f"{instance['problem_statement'].rstrip()}\n\n---\n\nThe repository "
        f"(`{instance['repo']}`) is at `/testbed`. Fix the issue in its code; do not change "
        "its tests.\n"
    )
    patch = instance["patch"] if instance["patch"].endswith("\n") else instance["patch"] + "\n"
    apply = "git apply -v -R -" if smith else "git apply -v -"
    tests: dict[str, str] = {}
    if not smith:
        test_patch = instance["test_patch"]
        tests["test.patch"] = test_patch if test_patch.endswith("\n") else test_patch + "\n"
    kept = [key for key in (*REQUIRED, "image_name") if key in instance]
    tests["config.json"] = (
        json.dumps(
            {key: instance[key] for key in kept if key not in ("patch", "test_patch")}
            | {"image": image, "format": instance["_format"]},
            indent=1,
        )
        + "\n"
    )
    return TaskFolder(
        config=config,
        instruction=instruction,
        dockerfile=_dockerfile(instance, image),
        test_script=test_script(instance, test_cmd),
        tests=tests,
        solve_script=(
            "#!/bin/bash\n# The oracle: the instance's gold patch"
            + (" (the bug, reversed)" if smith else "")
            + ".\nset -euo pipefail\n"
            f"cd /testbed\n{apply} <<'{MARKER}'\n{patch}{MARKER}\n"
        ),
    )


def convert(source: Path, output: Path, *, image: str = IMAGE, test_cmd: str = TEST_CMD) -> int:
    """Write a folder per instance of ``source`` into ``output`` (new or empty); the number."""
    instances = read_instances(source)
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise ConfigError(f"{output} exists and is not an empty directory")
    for instance in instances:
        command = instance.get("test_cmd") or test_cmd
        root = write_task(
            task_folder(instance, image_for(instance, image), command),
            output / instance["instance_id"],
        )
        if instance["_format"] == "swe-smith":
            text = instance["patch"]
            (root / "environment" / BUG).write_text(
                text if text.endswith("\n") else text + "\n", encoding="utf-8"
            )
    return len(instances)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m palaestra.envs.swe_local.swebench")
    parser.add_argument(
        "instances", type=Path, help="SWE-bench, SWE-rebench or SWE-smith rows, one JSON a line"
    )
    parser.add_argument("output", type=Path, help="a new folder for the task folders")
    parser.add_argument("--image", default=IMAGE, help=f"image name template (default {IMAGE})")
    parser.add_argument("--test-cmd", default=TEST_CMD, help="the command the ids are given to")
    args = parser.parse_args(argv)
    try:
        count = convert(args.instances, args.output, image=args.image, test_cmd=args.test_cmd)
    except (ConfigError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"{count} task folders in {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
