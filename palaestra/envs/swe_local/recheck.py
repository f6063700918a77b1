"""Re-check manifest lines in the machine's root filesystem: the null run fails, the oracle
passes; with ``--measure``, measure the lines' ``test_seconds`` and flags again.

For each line: its ``bug`` is applied to a working copy of the package and FAIL_TO_PASS and
PASS_TO_PASS run together, as ``tests/test.sh`` runs them: every FAIL_TO_PASS must fail (the
untouched machine scores 0); then the gold ``patch`` is applied and every id must pass (the
oracle scores 1). ``--measure`` also measures the gold state of the test file three times
(with the probe's call data, kept per release) and the broken state twice, and rewrites the
line's ``test_seconds`` (the timed gold run of its ids), ``flaky`` (outcomes that differ between
runs of a state), ``slow`` and ``off_target`` (no FAIL_TO_PASS test calls a changed function)
in the manifest.

Usage::

    python -m palaestra.envs.swe_local.recheck --rootfs ROOT --work DIR [--manifest DIR]
        [--shard 0/2] [--measure] [--filter ...]

Prints one line per task (``ok`` or what went wrong) and exits 1 if any is wrong.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from palaestra import ConfigError
from palaestra.envs.swe_local import manifest
from palaestra.envs.swe_local.flags import Observations, flags, off_target
from palaestra.envs.swe_local.generate import merge
from palaestra.envs.swe_local.languages.python import package_of
from palaestra.envs.swe_local.selection import parse_filter, selected
from palaestra.envs.swe_local.validate import Runner
from palaestra.envs.swe_local.worker import Gold, Unit, function_index, gold_state


def _patch(runner: Runner, diff: str) -> None:
    subprocess.run(
        ["patch", "-s", "-p1"], input=diff.encode(), cwd=runner.work, check=True, timeout=60
    )


def targets(runner: Runner, line: Mapping[str, Any]) -> set[str]:
    """The changed functions as the probe names them (``file:firstline`` in the original)."""
    found = set()
    for module in line["files"]:
        source = runner.original(str(module)).read_text(encoding="utf-8")
        for first, (name, _node) in function_index(source).items():
            if name in line["functions"]:
                found.add(f"{module}:{first}")
    return found


def recheck(
    runner: Runner, line: Mapping[str, Any], timeout: float, *, measure: bool = False
) -> tuple[str, dict[str, Any] | None]:
    """``ok`` or what is wrong with ``line``; with ``measure``, the line measured again:
    the gold state of its test file (``worker.gold_state``: three runs, the probe's call data,
    kept per release), two runs of the broken state, one timed run of the gold ids."""
    failing, passing = list(line["FAIL_TO_PASS"]), list(line["PASS_TO_PASS"])
    both = failing + passing
    package = package_of(str(line["repo"]))
    runner.prepare(package)
    gold: Gold | None = None
    if measure:
        test_file = failing[0].partition("::")[0]
        unit = Unit(
            str(line["repo"]), package, str(line["source"]), str(line["version"]), test_file, 0
        )
        gold = gold_state(runner, unit, runner.work.parent, timeout)
    broken = Observations()
    seconds = 0.0
    try:
        _patch(runner, str(line["bug"]))
        for attempt in range(2 if measure else 1):
            null = runner.run(both, timeout=timeout)
            if null is None:
                return "null run: no report (timed out?)", None
            broken.add(null.outcomes, both)
            still = [n for n in failing if null.outcomes.get(n) not in ("failed", "error")]
            if still and attempt == 0:
                return f"null run: {still[0]} does not fail", None
        _patch(runner, str(line["patch"]))
        started = time.monotonic()
        oracle = runner.run(both, timeout=timeout)
        seconds = round(time.monotonic() - started, 2)
        if oracle is None:
            return "oracle run: no report (timed out?)", None
        broke = [n for n in both if oracle.outcomes.get(n) != "passed"]
        if broke:
            return f"oracle run: {broke[0]} is {oracle.outcomes.get(broke[0], 'missing')}", None
    finally:
        for module in line["files"]:
            runner.restore(str(module))
    if not measure:
        return "ok", None
    measured = {**line, "test_seconds": seconds, "measured": True}
    covered = gold.baseline.covered if gold is not None else {}
    off = off_target(covered, failing, targets(runner, line)) if gold is not None else False
    flaky = broken.disagree(both) or (gold is not None and gold.runs.disagree(both))
    measured["flags"] = {
        **flags(measured, flaky=flaky, off=off),
        "duplicate_of": line["flags"]["duplicate_of"],
    }
    return "ok", manifest.sealed(measured)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m palaestra.envs.swe_local.recheck")
    parser.add_argument("--manifest", type=Path, default=manifest.SHIPPED)
    parser.add_argument("--rootfs", type=Path)
    parser.add_argument("--work", type=Path, default=Path("/tmp/swe-local-recheck"))
    parser.add_argument("--shard", default="0/1")
    parser.add_argument("--filter", default="")
    parser.add_argument("--measure", action="store_true", help="measure and rewrite the lines")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args(argv)
    shard, shards = (int(part) for part in args.shard.split("/"))
    runner = Runner(args.work, args.rootfs)
    try:
        lines = manifest.read_directory(args.manifest)
        if args.filter:
            lines = selected(lines, parse_filter(args.filter))
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    bad = 0
    chosen = lines[shard::shards]
    if args.measure:  # a resumed run measures only what is left
        chosen = [line for line in chosen if line.get("measured") is False]
    for line in chosen:
        verdict, measured = recheck(runner, line, args.timeout, measure=args.measure)
        bad += verdict != "ok"
        if measured is not None:
            merge(args.manifest, [measured])
        extra = ""
        if measured is not None:
            raised = [name for name, value in measured["flags"].items() if value]
            extra = f" {measured['test_seconds']:.1f}s {' '.join(raised)}"
        print(f"{line['instance_id']} {verdict}{extra}", flush=True)
    print(f"{len(chosen) - bad} of {len(chosen)} ok", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
