"""SWE-bench-format instances as Harbor task folders that run in the user's own images.

For users who have the real SWE-bench images elsewhere (they cannot be built here: they hold
each repository at its commit with its own environment). One JSON object per line, with
SWE-bench's fields: ``instance_id``, ``repo``, ``base_commit``, ``patch`` (the gold fix),
``test_patch``, ``problem_statement``, ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` (lists, or JSON
text of lists, as the Hugging Face dataset stores them); optional ``version``, ``image_name``
(else ``--image`` with ``{instance_id}`` and ``{id_1776}``, SWE-bench's own image naming,
``__`` spelled ``_1776_``) and ``test_cmd`` (else ``--test-cmd``). Each folder:

- ``environment/Dockerfile``: ``FROM <image>``, ``WORKDIR /testbed`` (the image holds the
  repository at ``base_commit``, as SWE-bench's do);
- ``tests/test.sh``: puts the test files back at ``base_commit``, applies ``test_patch``
  (``tests/test.patch``), runs ``test_cmd`` on FAIL_TO_PASS and PASS_TO_PASS; reward 1 iff it
  exits 0. The node ids are passed as arguments, which suits pytest repositories; a repository
  with another runner (Django's ``runtests.py``) needs its own ``test_cmd``;
- ``solution/solve.sh``: applies ``patch``.

SWE-smith's files are not this format (their ``patch`` is the bug, not the fix): refused, as
any instance missing a field is, with one line naming the file, line and field.

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

from palaestra.errors import ConfigError
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
TEST_CMD = "python -m pytest -p no:cacheprovider -rA"
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
        for name in REQUIRED:
            if item.get(name) in (None, ""):
                raise ConfigError(f"{where}: field '{name}' is missing (SWE-bench's format)")
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


def test_script(instance: dict[str, Any], test_cmd: str) -> str:
    """``tests/test.sh`` (see the module docstring)."""
    files = " ".join(shlex.quote(name) for name in _changed_files(instance["test_patch"]))
    ids = " ".join(
        shlex.quote(node) for node in instance["FAIL_TO_PASS"] + instance["PASS_TO_PASS"]
    )
    restore = (
        f"git checkout -q {shlex.quote(instance['base_commit'])} -- {files} 2>/dev/null || true\n"
        if files
        else ""
    )
    return (
        "#!/bin/bash\n"
        "# The reward: the instance's FAIL_TO_PASS and PASS_TO_PASS after its test_patch.\n"
        "# Written beside, then moved: a crashed check leaves no reward (an error, not 0).\n"
        "set -o pipefail\n"
        "mkdir -p /logs/verifier\n"
        "cd /testbed\n"
        "if [ -f /opt/miniconda3/bin/activate ]; then\n"
        "    source /opt/miniconda3/bin/activate && conda activate testbed\n"
        "fi\n"
        f"{restore}"
        "reward=0\n"
        "if git apply -v /tests/test.patch; then\n"
        f"    {test_cmd} {ids} && reward=1\n"
        "fi\n"
        'echo "$reward" > /logs/verifier/reward.txt.partial\n'
        "mv /logs/verifier/reward.txt.partial /logs/verifier/reward.txt\n"
    )


def task_folder(instance: dict[str, Any], image: str, test_cmd: str) -> TaskFolder:
    """One instance as a Harbor folder in its own image."""
    if MARKER in instance["patch"]:
        raise ConfigError(f"{instance['instance_id']}: the patch contains {MARKER}")
    config = TaskConfig(
        metadata={
            "category": "swe",
            "repo": instance["repo"],
            "base_commit": instance["base_commit"],
            **({"version": str(instance["version"])} if instance.get("version") else {}),
        },
        source=f"swebench:{instance['instance_id']}",
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
    fix = instance["patch"] if instance["patch"].endswith("\n") else instance["patch"] + "\n"
    test_patch = instance["test_patch"]
    return TaskFolder(
        config=config,
        instruction=instruction,
        dockerfile=f"FROM {image}\nWORKDIR /testbed\n",
        test_script=test_script(instance, test_cmd),
        tests={
            "test.patch": test_patch if test_patch.endswith("\n") else test_patch + "\n",
            "config.json": json.dumps(
                {key: instance[key] for key in REQUIRED if key not in ("patch", "test_patch")}
                | {"image": image},
                indent=1,
            )
            + "\n",
        },
        solve_script=(
            "#!/bin/bash\n# The oracle: the instance's gold patch.\nset -euo pipefail\n"
            f"cd /testbed\ngit apply -v - <<'{MARKER}'\n{fix}{MARKER}\n"
        ),
    )


def convert(source: Path, output: Path, *, image: str = IMAGE, test_cmd: str = TEST_CMD) -> int:
    """Write a folder per instance of ``source`` into ``output`` (new or empty); the number."""
    instances = read_instances(source)
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise ConfigError(f"{output} exists and is not an empty directory")
    for instance in instances:
        command = instance.get("test_cmd") or test_cmd
        write_task(
            task_folder(instance, image_for(instance, image), command),
            output / instance["instance_id"],
        )
    return len(instances)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m palaestra.envs.swe_local.swebench")
    parser.add_argument("instances", type=Path, help="SWE-bench instances, one JSON per line")
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
