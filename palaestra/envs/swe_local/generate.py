"""Generate ``swe_local`` tasks: SWE-smith's recipe, offline, over Debian's packages.

For each repository (a Debian package that ships its test suite), test files are taken in a
seeded order; each is one unit of work (``worker.work_unit``): its gold state measured once,
then functions its passing tests call get seeded mutations, kept when some tests fail and the
rest pass, confirmed as the verifier runs them, and written as manifest lines with measured
flags. Units run in ``--jobs`` processes, each with its own working copy; the manifest is
written as units finish (so an interrupted run keeps what it validated), and a unit finished
once is skipped by a later run with the same work directory and seed (``done.jsonl``): a run
resumes where the last one stopped. It reports its yield: validated tasks per
repository-hour (the hours its workers spent on that repository).

Usage (see the README)::

    python -m palaestra.envs.swe_local.generate --rootfs ROOT --work DIR \\
        --repo sympy=70 --repo networkx=90 [--jobs 2] [--seed 0] [--minutes 60] \\
        [--manifest DIR]

Deterministic for a seed, except that a run near its time limit may keep a different set.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import multiprocessing
import random
import re
import signal
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from palaestra import ConfigError
from palaestra.envs.swe_local import manifest
from palaestra.envs.swe_local.flags import duplicates
from palaestra.envs.swe_local.languages.python import REPOS, package_of
from palaestra.envs.swe_local.validate import SITE, Runner
from palaestra.envs.swe_local.variants import make_variants, work_directory
from palaestra.envs.swe_local.worker import Options, Outcome, Unit, work_unit

DONE = "done.jsonl"


def test_files(site: Path, package: str) -> list[str]:
    """The package's test files (``test_*.py`` anywhere in it: ``tests/``, ``test/``,
    ``testsuite/``, beside the code), relative to ``site``, sorted."""
    return sorted(
        path.relative_to(site).as_posix()
        for path in (site / package).rglob("test_*.py")
        if "__pycache__" not in path.parts
    )


def package_version(rootfs: Path | None, deb: str) -> str:
    """The Debian version of the package ``deb`` in the machine (``dpkg``'s status file)."""
    status = (rootfs or Path("/")) / "var/lib/dpkg/status"
    block = next(
        (
            b
            for b in status.read_text(encoding="utf-8").split("\n\n")
            if f"Package: {deb}\n" in b + "\n"
        ),
        "",
    )
    match = re.search(r"^Version: (.+)$", block, re.MULTILINE)
    if match is None:
        raise SystemExit(f"{status}: no installed {deb}")
    return match.group(1)


def merge(root: Path, lines: list[dict[str, Any]]) -> None:
    """Add ``lines`` to their repositories' manifest files, re-marking duplicates there; under
    a lock, so a generator and a ``recheck --measure`` may write one manifest at once."""
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        by_repo[str(line["repo"])].append(line)
    root.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    with (Path(tempfile.gettempdir()) / f"palaestra-manifest-{key}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _merge(root, by_repo)


def _merge(root: Path, by_repo: Mapping[str, list[dict[str, Any]]]) -> None:
    for repo, new in by_repo.items():
        path = root / f"{repo}.jsonl"
        every = (
            {str(line["instance_id"]): line for line in manifest.read_file(path)}
            if path.is_file()
            else {}
        )
        every.update({str(line["instance_id"]): line for line in new})
        merged = list(every.values())
        duplicates(merged)
        manifest.write_file(path, merged)


# --- the workers ----------------------------------------------------------------------------

_runner: Runner | None = None


def _start_worker(slots: Any, work: Path, rootfs: Path | None) -> None:
    """A worker process: its own working copy (``work/w<slot>``), SIGTERM as an exit (so the
    working copy gets its original file back)."""
    global _runner
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _runner = Runner(work / f"w{slots.get()}", rootfs)


def _work(unit: Unit, options: Options, known: set[str]) -> Outcome:
    assert _runner is not None
    _runner.prepare(unit.package)
    return work_unit(_runner, unit, options, known)


def plan(args: argparse.Namespace, quotas: dict[str, int]) -> list[Unit]:
    """Every unit of the run, the repositories interleaved (each in its seeded order)."""
    site = (args.rootfs / SITE.lstrip("/")) if args.rootfs is not None else Path(SITE)
    per_repo: list[list[Unit]] = []
    for repo in quotas:
        info = REPOS[repo]
        version = package_version(args.rootfs, info.source)
        files = test_files(site, package_of(repo))
        random.Random(f"{args.seed}:{repo}").shuffle(files)
        per_repo.append(
            [Unit(repo, package_of(repo), info.source, version, f, args.seed) for f in files]
        )
    order: list[Unit] = []
    for index in range(max((len(units) for units in per_repo), default=0)):
        order.extend(units[index] for units in per_repo if index < len(units))
    return order


def _key(unit: Unit) -> str:
    return json.dumps([unit.repo, unit.version, unit.test_file, unit.seed])


class Tally:
    """The run's counts: per repository the units, tries, kept tasks and worker seconds."""

    def __init__(self, quotas: dict[str, int], already: Counter[str]) -> None:
        self.quotas = quotas
        self.already = already
        self.kept: Counter[str] = Counter()
        self.tried: Counter[str] = Counter()
        self.units: Counter[str] = Counter()
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.rejected: Counter[str] = Counter()
        self.runs: Counter[str] = Counter()
        self.started = time.monotonic()

    def add(self, outcome: Outcome) -> None:
        repo = outcome.unit.repo
        self.kept[repo] += len(outcome.lines)
        self.tried[repo] += outcome.tried
        self.units[repo] += 1
        self.seconds[repo] += outcome.seconds
        self.rejected.update(outcome.rejected)
        self.runs.update(outcome.runs)

    def full(self, repo: str) -> bool:
        return self.kept[repo] >= self.quotas[repo]

    def line(self) -> str:
        total = sum(self.kept.values())
        hours = sum(self.seconds.values()) / 3600
        rate = total / hours if hours else 0.0
        return f"kept {total}, {rate:.0f} tasks per repository-hour"

    def report(self) -> str:
        rows = [
            f"{'repository':20} {'units':>5} {'tried':>5} {'kept':>5} {'hours':>6} {'yield':>6}"
        ]
        for repo in self.quotas:
            hours = self.seconds[repo] / 3600
            rate = self.kept[repo] / hours if hours else 0.0
            rows.append(
                f"{repo:20} {self.units[repo]:5} {self.tried[repo]:5} {self.kept[repo]:5} "
                f"{hours:6.2f} {rate:6.1f}"
            )
        wall = (time.monotonic() - self.started) / 3600
        total = sum(self.kept.values())
        rows.append(
            f"kept {total} in {wall:.2f} h of wall time ({total / wall if wall else 0:.0f}/h)"
        )
        if self.runs:
            rows.append(
                f"first runs of mutations: {self.runs['warm']} warm, {self.runs['cold']} cold"
            )
        if self.rejected:
            rows.append(
                "rejected: " + ", ".join(f"{k} {n}" for k, n in self.rejected.most_common())
            )
        return "\n".join(rows)


def run(args: argparse.Namespace, quotas: dict[str, int]) -> Tally:
    """Generate into ``args.manifest`` until the quotas are met, the units run out or the
    time is up; the tally."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    args.work.mkdir(parents=True, exist_ok=True)
    done_path = args.work / DONE
    done = set(done_path.read_text(encoding="utf-8").splitlines()) if done_path.is_file() else set()
    existing = manifest.read_directory(args.manifest) if any(args.manifest.glob("*.jsonl")) else []
    known = {str(line["mutation"]) for line in existing if "mutation" in line}
    units = [unit for unit in plan(args, quotas) if _key(unit) not in done]
    tally = Tally(quotas, Counter())
    deadline = time.time() + 60 * args.minutes
    options = Options(
        per_file=args.per_file,
        tries_per_file=args.tries_per_file,
        max_fail=args.max_fail,
        timeout=args.timeout,
        max_file_seconds=args.max_file_seconds,
        warm=not args.cold,
        deadline=deadline,
    )
    context = multiprocessing.get_context("forkserver")
    slots = context.Manager().Queue()
    for slot in range(args.jobs):
        slots.put(slot)
    pending: Iterator[Unit] = iter(units)
    with (
        context.Pool(args.jobs, _start_worker, (slots, args.work, args.rootfs)) as pool,
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} files"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[status]}"),
            transient=False,
        ) as progress,
    ):
        bar = progress.add_task("generating", total=len(units), status="")
        running: list[Any] = []
        while True:
            while len(running) < args.jobs and time.time() < deadline:
                unit = next((u for u in pending if not tally.full(u.repo)), None)
                if unit is None:
                    break
                running.append(pool.apply_async(_work, (unit, options, set(known))))
            if not running:
                break
            finished = [job for job in running if job.ready()]
            if not finished:
                time.sleep(0.5)
                continue
            for job in finished:
                running.remove(job)
                outcome: Outcome = job.get()
                if outcome.lines:
                    merge(args.manifest, outcome.lines)
                    known.update(str(line["mutation"]) for line in outcome.lines)
                with done_path.open("a", encoding="utf-8") as file:
                    file.write(_key(outcome.unit) + "\n")
                tally.add(outcome)
                note = outcome.skipped or f"{len(outcome.lines)} kept of {outcome.tried}"
                progress.console.print(
                    f"{outcome.unit.repo} {outcome.unit.test_file}: {note} "
                    f"({outcome.seconds:.0f} s)",
                    highlight=False,
                )
                progress.update(bar, advance=1, status=tally.line())
    return tally


def variants(args: argparse.Namespace) -> int:
    """``--variant-of ID``: up to ``--count`` variants of the task ``ID`` (read from
    ``--from-manifest``) into ``--manifest``."""
    lines = {str(line["instance_id"]): line for line in manifest.read_directory(args.from_manifest)}
    line = lines.get(args.variant_of)
    if line is None:
        raise SystemExit(f"--variant-of: no task '{args.variant_of}' in {args.from_manifest}")
    if line["language"] != "python":
        raise SystemExit(f"--variant-of: {line['language']} tasks have no variant maker yet")
    runner = Runner(work_directory(args.work), args.rootfs)
    options = Options(
        tries_per_file=args.tries_per_file,
        max_fail=args.max_fail,
        timeout=args.timeout,
        max_file_seconds=args.max_file_seconds,
        deadline=time.time() + 60 * args.minutes,
    )
    outcome = make_variants(runner, line, args.count, args.seed, options)
    if outcome.lines:
        merge(args.manifest, outcome.lines)
    for made in outcome.lines:
        print(f"{made['instance_id']} ({made['kind']} in {made['functions'][0]})", flush=True)
    rejected = ", ".join(f"{k} {n}" for k, n in outcome.rejected.most_common())
    print(
        f"{len(outcome.lines)} variants of {args.variant_of} in {args.manifest} "
        f"({outcome.tried} tried{'; rejected: ' + rejected if rejected else ''})"
        + (f"; {outcome.skipped}" if outcome.skipped else ""),
        flush=True,
    )
    return 0 if outcome.lines else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m palaestra.envs.swe_local.generate")
    parser.add_argument("--rootfs", type=Path, help="the machine's root filesystem (mmdebstrap)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/swe-local-work"))
    parser.add_argument("--manifest", type=Path, default=manifest.SHIPPED)
    parser.add_argument("--repo", "--quota", action="append", default=[], help="REPO=N tasks")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--per-file", type=int, default=6)
    parser.add_argument("--tries-per-file", type=int, default=24)
    parser.add_argument("--max-fail", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--max-file-seconds", type=float, default=40.0)
    parser.add_argument("--minutes", type=float, default=600.0, help="stop after this long")
    parser.add_argument(
        "--cold", action="store_true", help="first runs in a fresh pytest each (no warm pytest)"
    )
    parser.add_argument("--variant-of", help="make held-out variants of this task instead")
    parser.add_argument("--from-manifest", type=Path, default=manifest.SHIPPED)
    parser.add_argument("--count", type=int, default=2, help="variants to make (--variant-of)")
    args = parser.parse_args(argv)
    try:
        if args.variant_of is not None:
            return variants(args)
        return _generate(parser, args)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _generate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    quotas: dict[str, int] = {}
    for item in args.repo:
        repo, _, count = item.partition("=")
        if repo not in REPOS or not count.isdigit():
            parser.error(f"--repo {item}: REPO=N with REPO one of {', '.join(sorted(REPOS))}")
        quotas[repo] = int(count)
    if not quotas:
        parser.error("at least one --repo REPO=N is needed")
    tally = run(args, quotas)
    print(tally.report(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
