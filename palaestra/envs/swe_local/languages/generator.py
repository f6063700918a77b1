"""The generator's loop for a compiled language, resumable: mutate, run, judge, write the line.

For a repository, source files are taken in a seeded order and each function's mutations
(``treesitter.py``) in a seeded order, at most ``PER_FUNCTION`` tried per function. Each
mutation is written into a working copy, the tests of its scope (Go: the file's package; Rust:
the crate's library and integration tests) run in bubblewrap, and the copy is put back. Kept
(``common.decide``) when 1 to 10 tests that passed on the original fail and the rest pass; a
mutation that does not build is discarded. A kept mutation is run a second time: a test whose
outcome differs between the two broken runs (or the two runs of the original) marks the task
flaky, and only tests that agree are listed. The failing tests' output becomes the statement.

Every mutation tried is recorded (``<work>/<repo>/tried.jsonl``) with its verdict, so a second
run with the same seed goes on where the first stopped; the repository's manifest file is
rewritten after each kept task.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from palaestra.envs.swe_local.languages.common import (
    Repo,
    Run,
    changed_lines,
    copy_base,
    debian_version,
    decide,
    leaks_fix,
    level,
    tree_id,
    unified,
)
from palaestra.envs.swe_local.languages.treesitter import (
    Function,
    Grammar,
    Mutation,
    apply,
    digest,
    functions,
    mutations,
)
from palaestra.envs.swe_local.manifest import read_file, sealed, write_file
from palaestra.envs.swe_local.validate import Verdict

MANIFEST_DIR = Path(__file__).resolve().parent.parent / "manifest"
PER_FUNCTION = 2
SLOW_SECONDS = 30.0
OUTPUT_LINES = 20
LINE_CHARS = 240


class Toolchain(ABC):
    """What the loop needs of one language."""

    name: str
    grammar: Grammar
    repos: dict[str, Repo]

    @abstractmethod
    def prepare(self, repo: Repo, work: Path) -> None:
        """Make the fresh copy ``work`` what the machine's ``/testbed`` is before git."""

    @abstractmethod
    def sources(self, work: Path) -> list[str]:
        """The files mutations may go into (repository-relative), sorted."""

    @abstractmethod
    def scope(self, repo: Repo, relative: str) -> str:
        """What to test for a mutation of ``relative``."""

    @abstractmethod
    def run(self, work: Path, cache: Path, scope: str, timeout: float) -> Run | None:
        """The tests of ``scope`` on ``work``; None on a timeout."""

    @abstractmethod
    def is_test_file(self, path: str) -> bool:
        """Whether the verifier puts ``path`` back as the base had it."""

    def eligible(self, work: Path, test_id: str, gold: str) -> bool:
        """Whether ``test_id`` may be listed for a bug in ``gold`` (its definition is not in a
        file the agent's fix is kept from)."""
        return True

    def test_source(self, work: Path, test_id: str) -> str:
        """The text of the test's own function (for the ``off_target`` measure), or ``""``."""
        return ""

    def describe(self, repo: Repo, scope: str) -> tuple[str, str]:
        """(what the repository is, how to run the scope's tests) for the statement."""
        return repo.name, ""


def _clean_output(text: str) -> list[str]:
    """A failing test's output as a user would paste it: no runner chatter, no addresses,
    no stack frames (which point at the changed line)."""
    kept: list[str] = []
    for line in text.splitlines():
        bare = line.strip()
        if bare.startswith(("=== RUN", "=== PAUSE", "=== CONT", "goroutine ", "created by ")):
            continue
        if line.startswith("\t/") or bare.startswith(("/testbed/", "note: run with")):
            continue
        if re.match(r"^\s*(\d+: )?(0x[0-9a-f]+ - )?[\w:<>]+(::\w+)+$", line):
            continue  # a Rust backtrace frame
        if re.match(r"^[^\s(]+\(.*\)$", line):
            continue  # a Go stack frame (``pkg.Func(0x...)``)
        line = re.sub(r"0x[0-9a-f]{6,}", "0x...", line.rstrip())
        kept.append(line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + " ...")
    return [line for line in kept if line.strip()]


def statement(tool: Toolchain, repo: Repo, scope: str, failing: list[str], mutated: Run) -> str:
    """The issue, from the failing tests' output: which tests fail and what they print."""
    what, _ = tool.describe(repo, scope)
    names = [f"`{test}`" for test in failing[:6]]
    more = " and more" if len(failing) > 6 else ""
    lines = [
        f"# {len(failing)} test{'s' if len(failing) > 1 else ''} of {what} fail",
        "",
        f"These tests of the repository's own suite fail: {', '.join(names)}{more}.",
        "",
    ]
    budget = OUTPUT_LINES
    for test in failing[:3]:
        shown = _clean_output(mutated.output.get(test, ""))[:budget]
        if not shown:
            continue
        budget -= len(shown)
        lines += [f"Output of `{test}`:", "", "```", *shown, "```", ""]
        if budget <= 0:
            break
    return "\n".join(lines) + "\n"


def _short(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "", name.rsplit(".", 1)[-1]) or "fn"


def instance_id(repo: Repo, relative: str, mutation: Mutation) -> str:
    """``<repo>__<file path dotted, no extension>__<function>__<8 hex>``."""
    module = re.sub(r"\.(go|rs)$", "", relative).replace("/", ".")
    return f"{repo.name}__{module}__{_short(mutation.function)}__{digest(relative, mutation.key)}"


def line_for(
    tool: Toolchain,
    repo: Repo,
    version: str,
    seed: int,
    relative: str,
    original: bytes,
    function: Function,
    mutation: Mutation,
    verdict: Verdict,
    flaky: bool,
    mutated: Run,
    seconds: float,
    base_tree: str,
    work: Path,
) -> dict[str, Any]:
    """The manifest line of a kept mutation (see the manifest's fields)."""
    changed = apply(original, mutation)
    bug = unified(relative, original, changed)
    fix = unified(relative, changed, original)
    text = statement(tool, repo, tool.scope(repo, relative), verdict.fail_to_pass, mutated)
    short = function.name.rsplit(".", 1)[-1]
    pointed = any(
        re.search(rf"\b{re.escape(short)}\b", tool.test_source(work, test) + test)
        for test in verdict.fail_to_pass
    )
    return sealed(
        {
            "instance_id": instance_id(repo, relative, mutation),
            "repo": repo.name,
            "language": tool.name,
            "source": repo.deb,
            "version": version,
            "kind": mutation.kind,
            "kinds": [mutation.kind],
            "files": [relative],
            "functions": [function.name],
            "bug": bug,
            "patch": fix,
            "FAIL_TO_PASS": verdict.fail_to_pass,
            "PASS_TO_PASS": verdict.pass_to_pass,
            "statement": text,
            "difficulty": {
                "lines": changed_lines(fix),
                "files": 1,
                "level": level(function.lines),
            },
            "flags": {
                "flaky": flaky,
                "slow": seconds > SLOW_SECONDS,
                "duplicate_of": None,
                "leaks_fix": leaks_fix(text, bug),
                "off_target": not pointed,
            },
            "test_seconds": round(seconds, 2),
            "seed": seed,
            "base_tree": base_tree,
            "license": repo.license,
            "upstream": repo.upstream,
            "mutation": f"{relative}:{mutation.key}",
        }
    )


def _read(path: Path) -> list[dict[str, Any]]:
    """The lines of a manifest file (none when there is none yet)."""
    return [dict(line) for line in read_file(path)] if path.is_file() else []


def mark_duplicates(lines: dict[str, dict[str, Any]]) -> None:
    """Set ``flags.duplicate_of`` of every line whose bug is another's (the same diff; the
    first by instance id is the original), re-sealing the lines it changes."""
    first: dict[str, str] = {}
    for identifier in sorted(lines):
        line = lines[identifier]
        original = first.setdefault(str(line["bug"]), identifier)
        wanted = None if original == identifier else original
        if line["flags"].get("duplicate_of") != wanted:
            line["flags"] = {**line["flags"], "duplicate_of": wanted}
            lines[identifier] = sealed(line)


def candidates(tool: Toolchain, work: Path, seed: int) -> list[tuple[str, Function, Mutation]]:
    """Mutations to try, in the seeded order: files shuffled, each file's functions shuffled,
    at most ``PER_FUNCTION`` mutations of each (round robin over files)."""
    rng = random.Random(seed)
    files = tool.sources(work)
    rng.shuffle(files)
    per_file: list[list[tuple[str, Function, Mutation]]] = []
    for relative in files:
        source = (work / relative).read_bytes()
        found: list[tuple[str, Function, Mutation]] = []
        chosen = functions(tool.grammar, source)
        rng.shuffle(chosen)
        for function in chosen:
            options = mutations(tool.grammar, source, function)
            rng.shuffle(options)
            found += [(relative, function, mutation) for mutation in options[:PER_FUNCTION]]
        per_file.append(found)
    order: list[tuple[str, Function, Mutation]] = []
    while any(per_file):
        for items in per_file:
            if items:
                order.append(items.pop(0))
    return order


def _agree(first: Run, second: Run, tests: list[str], outcome: str) -> list[str]:
    return [t for t in tests if second.outcomes.get(t) == outcome == first.outcomes.get(t)]


def generate(
    tool: Toolchain,
    repo: Repo,
    *,
    quota: int,
    seed: int,
    work_root: Path,
    manifest_dir: Path,
    deadline: float,
) -> int:
    """Generate up to ``quota`` new tasks of ``repo`` (resuming); the number kept."""
    version = debian_version(repo.deb)
    here = work_root / repo.name
    base, work, cache = here / "base", here / "work", here / "cache"
    here.mkdir(parents=True, exist_ok=True)
    copy_base(Path(repo.source), base)
    tool.prepare(repo, base)
    copy_base(base, work)
    manifest = manifest_dir / f"{repo.name}.jsonl"
    lines = {str(line["instance_id"]): dict(line) for line in _read(manifest)}
    tried_path = here / "tried.jsonl"
    tried = {
        json.loads(text)["key"]
        for text in (tried_path.read_text().splitlines() if tried_path.exists() else [])
        if text.strip()
    }
    baselines: dict[str, tuple[Run, Run] | None] = {}
    kept = started_with = len(lines)
    start = time.monotonic()
    counts: dict[str, int] = {}
    for relative, function, mutation in candidates(tool, base, seed):
        if kept - started_with >= quota or time.monotonic() > deadline:
            break
        key = f"{relative}:{mutation.key}"
        identifier = instance_id(repo, relative, mutation)
        if key in tried or identifier in lines:
            continue
        scope = tool.scope(repo, relative)
        if scope not in baselines:
            first = tool.run(base, cache, scope, 600.0)
            second = tool.run(base, cache, scope, 600.0) if first is not None else None
            usable = first is not None and second is not None and len(first.passed()) >= 3
            baselines[scope] = (first, second) if usable and first and second else None
        pair = baselines[scope]
        if pair is None:
            verdict: Verdict | str = "the scope's tests do not run on the original"
        else:
            verdict, mutated, flaky = _try(tool, base, work, cache, scope, relative, mutation, pair)
        reason = verdict if isinstance(verdict, str) else "kept"
        counts[reason.split(":")[0]] = counts.get(reason.split(":")[0], 0) + 1
        with tried_path.open("a", encoding="utf-8") as file:
            file.write(json.dumps({"key": key, "verdict": reason}) + "\n")
        if isinstance(verdict, str) or pair is None or mutated is None:
            continue
        original = (base / relative).read_bytes()
        tree = tree_id(base, {relative: apply(original, mutation)})
        lines[identifier] = line_for(
            tool, repo, version, seed, relative, original, function, mutation, verdict,
            flaky, mutated, min(pair[0].seconds, pair[1].seconds), tree, base,
        )  # fmt: skip
        mark_duplicates(lines)
        write_file(manifest, lines.values())
        kept += 1
        print(f"  KEEP {identifier} ({len(verdict.fail_to_pass)} fail)", flush=True)
    hours = (time.monotonic() - start) / 3600
    new = kept - started_with
    print(
        f"{repo.name}: {new} new tasks ({kept} in {manifest.name}), {sum(counts.values())} "
        f"tried in {hours * 60:.1f} min ({new / hours if hours else 0:.0f} per repo-hour); "
        + ", ".join(f"{reason}: {n}" for reason, n in sorted(counts.items())),
        flush=True,
    )
    shutil.rmtree(work, ignore_errors=True)
    return new


def _try(
    tool: Toolchain,
    base: Path,
    work: Path,
    cache: Path,
    scope: str,
    relative: str,
    mutation: Mutation,
    pair: tuple[Run, Run],
) -> tuple[Verdict | str, Run | None, bool]:
    """Judge one mutation: (the verdict or why not, the broken run, flaky)."""
    original = (base / relative).read_bytes()
    timeout = max(20.0, 4 * min(pair[0].seconds, pair[1].seconds))
    (work / relative).write_bytes(apply(original, mutation))
    try:
        first = tool.run(work, cache, scope, timeout)
        verdict = decide(pair[0], first)
        if isinstance(verdict, str) or first is None:
            return verdict, first, False
        failing = [t for t in verdict.fail_to_pass if tool.eligible(base, t, relative)]
        passing = [t for t in verdict.pass_to_pass if tool.eligible(base, t, relative)]
        if not failing:
            return "only tests defined in the changed file fail", first, False
        second = tool.run(work, cache, scope, timeout)
    finally:
        (work / relative).write_bytes(original)
    if second is None:
        return "timed out on the second run", first, False
    gold_failing = _agree(pair[0], pair[1], failing, "passed")
    gold_passing = _agree(pair[0], pair[1], passing, "passed")
    stable_failing = [t for t in gold_failing if second.outcomes.get(t) in ("failed", "error")]
    stable_passing = [t for t in gold_passing if second.outcomes.get(t) == "passed"]
    flaky = (stable_failing, stable_passing) != (failing, passing)
    if not stable_failing or not stable_passing:
        return "no test fails (or passes) in both runs", first, True
    return Verdict(stable_failing, stable_passing), first, flaky


def main_for(tool: Toolchain, argv: list[str]) -> int:
    """The command line of one language's generator."""
    parser = argparse.ArgumentParser(
        prog=f"python -m palaestra.envs.swe_local.languages.{tool.name}"
    )
    parser.add_argument(
        "--repo",
        action="append",
        required=True,
        help=f"a repository ({', '.join(sorted(tool.repos))}) or 'all'",
    )
    parser.add_argument("--quota", type=int, default=10, help="new tasks per repository")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--work",
        type=Path,
        default=Path.home() / ".cache" / "palaestra" / "swe_local" / f"gen-{tool.name}",
    )
    parser.add_argument("--manifest", type=Path, default=MANIFEST_DIR)
    parser.add_argument("--minutes", type=float, default=60.0, help="per repository")
    args = parser.parse_args(argv)  # fmt: skip
    names = sorted(tool.repos) if "all" in args.repo else args.repo
    unknown = [name for name in names if name not in tool.repos]
    if unknown:
        parser.error(f"unknown repository {unknown[0]!r}; known: {', '.join(sorted(tool.repos))}")
    total = 0
    for name in names:
        deadline = time.monotonic() + args.minutes * 60
        total += generate(
            tool, tool.repos[name], quota=args.quota, seed=args.seed, work_root=args.work,
            manifest_dir=args.manifest, deadline=deadline,
        )  # fmt: skip
    print(f"{total} new tasks", flush=True)
    return 0
