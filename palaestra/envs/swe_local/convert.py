"""Task folders of the earlier format (one Harbor folder per task) as manifest lines.

Usage::

    python -m palaestra.envs.swe_local.convert TASKS_DIR MANIFEST_DIR

Each folder gives one line: the bug (``environment/bug.patch``), the gold patch (``solve.sh``'s),
the test ids and base tree (``tests/config.json``), the statement (``instruction.md`` above its
``---``), the function (named in the statement), the release and the mutation (``task.toml``).
The flags a folder can give are computed (``leaks_fix``, ``duplicate_of``, ``difficulty``); the
measured ones (``flaky``, ``slow``, ``off_target``, ``test_seconds``) are false and 0, and the
line says ``"measured": false``, until ``recheck --measure`` runs over it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from palaestra import ConfigError
from palaestra.envs.swe_local import manifest
from palaestra.envs.swe_local.flags import difficulty, duplicates, flags
from palaestra.envs.swe_local.folders import BUG_PATCH, FIX_MARKER
from palaestra.wire.harbor import read_task


def line_from_folder(folder: Path) -> dict[str, Any]:
    """The manifest line of the task folder ``folder``."""
    task = read_task(folder)
    meta = task.config.metadata
    config = json.loads((folder / "tests" / "config.json").read_text(encoding="utf-8"))
    bug = (folder / "environment" / BUG_PATCH).read_text(encoding="utf-8")
    solve = (folder / "solution" / "solve.sh").read_text(encoding="utf-8")
    found = re.search(rf"<<'{FIX_MARKER}'\n(.*){FIX_MARKER}\n", solve, re.DOTALL)
    if found is None:
        raise ConfigError(f"{folder}: solve.sh holds no patch")
    gold = found.group(1)
    module = bug.splitlines()[0].removeprefix("--- a/")
    statement = task.instruction.split("\n---\n", 1)[0].rstrip() + "\n"
    named = re.search(r"Something is wrong with `([^`]+)`", statement)
    dotted = module.removesuffix(".py").replace("/", ".")
    if named is None or not named.group(1).startswith(f"{dotted}."):
        raise ConfigError(f"{folder}: instruction.md does not name the function")
    repo = folder.name.split("__", 1)[0]
    line: dict[str, Any] = {
        "instance_id": folder.name,
        "repo": repo,
        "language": "python",
        "source": str(meta["package"]),
        "version": str(meta["package_version"]),
        "kind": str(meta["mutation_kind"]),
        "kinds": [str(meta["mutation_kind"])],
        "files": [module],
        "functions": [named.group(1).removeprefix(f"{dotted}.")],
        "bug": bug,
        "patch": gold,
        "FAIL_TO_PASS": config["FAIL_TO_PASS"],
        "PASS_TO_PASS": config["PASS_TO_PASS"],
        "statement": statement,
        "difficulty": difficulty(gold),
        "test_seconds": 0.0,
        "seed": int(meta["seed"]),
        "base_tree": config["base_tree"],
        "mutation": str(meta["mutation"]),
        "measured": False,
    }
    line["flags"] = flags(line, flaky=False, off=False)
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m palaestra.envs.swe_local.convert")
    parser.add_argument("tasks", type=Path, help="a directory of task folders")
    parser.add_argument("out", type=Path, help="the manifest directory to add the lines to")
    args = parser.parse_args(argv)
    try:
        folders = sorted(p for p in args.tasks.iterdir() if p.is_dir())
        lines = [line_from_folder(folder) for folder in folders]
        duplicates(lines)
        total = manifest.add(args.out, lines)
    except (ConfigError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"{len(lines)} lines from {args.tasks}; {total} in the files of {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
