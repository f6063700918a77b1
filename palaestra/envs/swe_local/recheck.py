"""Re-check task folders in the machine's root filesystem: the null run fails, the oracle passes.

For each folder: its ``environment/bug.patch`` is applied to a working copy of the package,
FAIL_TO_PASS must all fail (the untouched machine scores 0); then the fix of ``solve.sh`` is
applied, FAIL_TO_PASS and PASS_TO_PASS must all pass (the oracle scores 1). The ids are run
as ``tests/test.sh`` runs them (a list of node ids, not the whole file).

Usage::

    python -m palaestra.envs.swe_local.recheck --rootfs ROOT --work DIR TASKS [--shard 0/2]

Prints one line per folder (``ok`` or what went wrong) and exits 1 if any is wrong.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from palaestra.envs.swe_local.folders import BUG_PATCH, FIX_MARKER
from palaestra.envs.swe_local.validate import Runner


def fix_patch(folder: Path) -> str:
    """The patch ``solution/solve.sh`` applies."""
    solve = (folder / "solution" / "solve.sh").read_text(encoding="utf-8")
    match = re.search(rf"<<'{FIX_MARKER}'\n(.*){FIX_MARKER}\n", solve, re.DOTALL)
    if match is None:
        raise ValueError(f"{folder}: solve.sh holds no patch")
    return match.group(1)


def _patch(runner: Runner, diff: str) -> None:
    subprocess.run(
        ["patch", "-s", "-p1"], input=diff.encode(), cwd=runner.work, check=True, timeout=60
    )


def recheck(runner: Runner, folder: Path, timeout: float) -> str:
    """``ok``, or what is wrong with ``folder``."""
    config = json.loads((folder / "tests" / "config.json").read_text(encoding="utf-8"))
    bug = (folder / "environment" / BUG_PATCH).read_text(encoding="utf-8")
    module = bug.splitlines()[0].removeprefix("--- a/")
    failing, passing = config["FAIL_TO_PASS"], config["PASS_TO_PASS"]
    runner.prepare(module.split("/", 1)[0])
    try:
        _patch(runner, bug)
        null = runner.run(failing, timeout=timeout)
        if null is None:
            return "null run: no report (timed out?)"
        still = [n for n in failing if null.outcomes.get(n) not in ("failed", "error")]
        if still:
            return f"null run: {still[0]} does not fail"
        _patch(runner, fix_patch(folder))
        oracle = runner.run(failing + passing, timeout=timeout)
        if oracle is None:
            return "oracle run: no report (timed out?)"
        broken = [n for n in failing + passing if oracle.outcomes.get(n) != "passed"]
        if broken:
            return f"oracle run: {broken[0]} is {oracle.outcomes.get(broken[0], 'missing')}"
        return "ok"
    finally:
        runner.restore(module)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m palaestra.envs.swe_local.recheck")
    parser.add_argument("tasks", type=Path)
    parser.add_argument("--rootfs", type=Path)
    parser.add_argument("--work", type=Path, default=Path("/tmp/swe-local-recheck"))
    parser.add_argument("--shard", default="0/1")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args(argv)
    shard, shards = (int(part) for part in args.shard.split("/"))
    runner = Runner(args.work, args.rootfs)
    folders = sorted(p for p in args.tasks.iterdir() if p.is_dir())[shard::shards]
    bad = 0
    for folder in folders:
        verdict = recheck(runner, folder, args.timeout)
        bad += verdict != "ok"
        print(f"{folder.name} {verdict}", flush=True)
    print(f"{len(folders) - bad} of {len(folders)} ok", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
