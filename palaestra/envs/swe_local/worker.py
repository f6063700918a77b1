"""One unit of generation: the mutations of one test file's functions, validated into lines.

A unit is one test file of one repository's release. Its gold state is measured once per
release and kept in the work directory (``gold/``): the file run with the probe (each test's
outcome, the package's functions it calls, the lines the passing tests executed), and, once
the file gives a task, ``GOLD_RUNS`` runs in all (``settle``), so a test whose outcome differs
between runs of the unmutated package is known.

Then functions called by some passing tests get seeded mutations on executed lines (up to
``tries_per_file``, ``PER_FUNCTION`` per function); a mutation's first run is warm when it can
be (``warm.py``: only the tests that call a changed function, the others keeping their gold
outcome), else the whole file in a fresh pytest. It is kept (``validate.judge``) when the file
still collects, 1 to ``max_fail`` tests that passed now fail and some still pass; a warm
verdict is checked by a warm run of the ids in the verifier's order; then the ids run as the
verifier runs them (FAIL_TO_PASS and PASS_TO_PASS together) in a fresh process: on the broken
state every FAIL_TO_PASS fails and every PASS_TO_PASS passes (a second run, warm when it can
be, is the flakiness measure, not a condition), and on the gold state all pass (fresh, timed:
``test_seconds``). The kept mutation becomes a manifest line with its measured flags.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import json
import random
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from palaestra.envs.swe_local import manifest
from palaestra.envs.swe_local.flags import Observations, difficulty, flags, off_target
from palaestra.envs.swe_local.folders import redact, statement
from palaestra.envs.swe_local.mutations import Mutation, apply, functions, sites, valid
from palaestra.envs.swe_local.trees import base_tree
from palaestra.envs.swe_local.validate import Runner, RunResult, Verdict, judge
from palaestra.envs.swe_local.warm import Warm, selected, swaps

GOLD_RUNS = 3
"""Runs of the gold state per test file (the probe's run among them)."""
PER_FUNCTION = 2
"""Mutations tried per function of a unit at most (one in each pass over its functions)."""
FAILED = ("failed", "error")


@dataclass(frozen=True)
class Unit:
    """One test file of one repository's release, with the seed of its choices."""

    repo: str
    package: str
    """The import package (its directory in site-packages)."""
    source: str
    version: str
    test_file: str
    seed: int


@dataclass
class Options:
    per_file: int = 6
    tries_per_file: int = 24
    max_fail: int = 10
    timeout: float = 60.0
    max_file_seconds: float = 40.0
    warm: bool = True
    """First runs in a warm pytest per test file (``warm.py``)."""
    deadline: float = float("inf")
    """``time.time()`` after which no new mutation is tried."""


@dataclass
class Outcome:
    """What a unit gave: its lines, the mutations tried, its time, why it was skipped."""

    unit: Unit
    lines: list[dict[str, Any]] = field(default_factory=list)
    tried: int = 0
    seconds: float = 0.0
    skipped: str = ""
    rejected: Counter[str] = field(default_factory=Counter)
    runs: Counter[str] = field(default_factory=Counter)
    """First runs of mutations made ``warm`` and ``cold``."""


@dataclass(frozen=True)
class Gold:
    """A test file's gold state: the probe's run, every run's outcomes, the probe run's time."""

    baseline: RunResult
    runs: Observations
    seconds: float


def function_index(source: str) -> dict[int, tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Functions of ``source`` by the first line of their code object (the first decorator's)."""
    index: dict[int, tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for name, node in functions(source):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        index[first] = (name, node)
    return index


def candidates(baseline: RunResult, *, broad: float = 0.5) -> list[tuple[str, int]]:
    """Functions (file, first line) called by some passing tests, not while importing and
    not by more than ``broad`` of them, sorted."""
    passed = baseline.passed()
    counts: Counter[str] = Counter()
    for node in passed:
        counts.update(set(baseline.covered.get(node, [])))
    at_import = set(baseline.at_import)
    limit = max(2, int(broad * len(passed)))
    found = []
    for key, count in counts.items():
        if key in at_import or count > limit:
            continue
        file, _, line = key.rpartition(":")
        found.append((file, int(line)))
    return sorted(found)


def patch(relative: str, before: str, after: str) -> str:
    """A unified diff (``patch -p1`` from the repository's root) from ``before`` to ``after``."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            f"a/{relative}",
            f"b/{relative}",
        )
    )


def instance_id(repo: str, package: str, module: str, function: str, key: str) -> str:
    """``<repo>__<module path dots>__<function>__<hash of the module and mutation>``."""
    digest = hashlib.sha256(f"{module}\0{key}".encode()).hexdigest()[:8]
    inside = Path(module).relative_to(package) if module.startswith(f"{package}/") else Path(module)
    dotted = ".".join(inside.with_suffix("").parts).replace("__init__", "init").strip("._")
    dotted = re.sub(r"[^A-Za-z0-9_.]", "", dotted) or "init"
    short = re.sub(r"[^A-Za-z0-9]", "", function.rsplit(".", 1)[-1]) or "fn"
    return f"{repo}__{dotted}__{short}__{digest}"


def _gold_cache(unit: Unit, work: Path) -> Path:
    name = f"{unit.repo}__{unit.version}"
    return work / "gold" / name / (unit.test_file.replace("/", "__") + ".json")


def _save_gold(cache: Path, gold: Gold | None) -> None:
    cache.parent.mkdir(parents=True, exist_ok=True)
    record = None
    if gold is not None:
        record = {
            "baseline": vars(gold.baseline),
            "runs": gold.runs.outcomes,
            "seconds": gold.seconds,
        }
    cache.write_text(json.dumps(record), encoding="utf-8")


def gold_state(
    runner: Runner, unit: Unit, work: Path, seconds: float, *, settled: bool = True
) -> Gold | None:
    """The gold state of ``unit``'s test file (cached under ``work/gold``); None when the file
    does not collect, has fewer than 3 passing tests or runs longer than ``seconds``. Without
    ``settled`` only the probe's run is made (``settle`` makes the others when a task needs
    them: most files give none)."""
    cache = _gold_cache(unit, work)
    if cache.is_file():
        data = json.loads(cache.read_text(encoding="utf-8"))
        if data is None:
            return None
        gold = Gold(RunResult(**data["baseline"]), Observations(data["runs"]), data["seconds"])
        return settle(runner, unit, work, gold) if settled else gold
    started = time.monotonic()
    baseline = runner.run([unit.test_file], cover=unit.package, timeout=seconds)
    elapsed = time.monotonic() - started
    made: Gold | None = None
    if baseline is not None and not baseline.collect_errors and len(baseline.passed()) >= 3:
        runs = Observations()
        runs.add(baseline.outcomes, sorted(baseline.outcomes))
        made = Gold(baseline, runs, elapsed)
    _save_gold(cache, made)
    return settle(runner, unit, work, made) if settled and made is not None else made


def settle(runner: Runner, unit: Unit, work: Path, gold: Gold) -> Gold:
    """``gold`` with ``GOLD_RUNS`` runs of the file in all (made once per file and cached;
    the working copy must be the original)."""
    ids = sorted(gold.baseline.outcomes)
    done = min((len(gold.runs.outcomes.get(node, [])) for node in ids), default=GOLD_RUNS)
    if done >= GOLD_RUNS:
        return gold
    for _ in range(GOLD_RUNS - done):
        again = runner.run([unit.test_file], timeout=max(15.0, 4 * gold.seconds))
        gold.runs.add(again.outcomes if again is not None else {}, ids)
    _save_gold(_gold_cache(unit, work), gold)
    return gold


UNCONFIRMED = "the ids run together do not fail and pass as the file's run did"


def holds(verdict: Verdict, run: RunResult | None) -> bool:
    """Whether in ``run`` every FAIL_TO_PASS of ``verdict`` fails and every PASS_TO_PASS
    passes."""
    outcomes = run.outcomes if run is not None else {}
    return all(outcomes.get(node) in FAILED for node in verdict.fail_to_pass) and all(
        outcomes.get(node) == "passed" for node in verdict.pass_to_pass
    )


@dataclass(frozen=True)
class Confirmed:
    """A mutation that holds as the verifier runs its ids: the broken runs, the gold run."""

    verdict: Verdict
    broken: Observations
    seconds: float
    first: RunResult | None = None
    """The first broken run (its failures' messages make the statement)."""


def confirm(
    runner: Runner,
    module: str,
    verdict: Verdict,
    timeout: float,
    again: Callable[[list[str]], RunResult | None] | None = None,
) -> Confirmed | str:
    """``verdict`` confirmed with FAIL_TO_PASS and PASS_TO_PASS run together, as the verifier
    runs them: on the mutated copy (written) every FAIL_TO_PASS fails and every PASS_TO_PASS
    passes, twice (the second run measures flakiness, it does not reject; made by ``again``,
    a warm run of the same ids in the same order, when given), then on the original all pass
    (timed). A test that fails only after others ran in the same process, or passes only
    alone, is caught here."""
    both = verdict.fail_to_pass + verdict.pass_to_pass
    broken = Observations()
    first: RunResult | None = None
    for attempt in range(2):
        run = again(both) if attempt == 1 and again is not None else None
        if run is None:  # the first run, or a warm run that could not be made
            run = runner.run(both, timeout=timeout)
        first = first if first is not None else run
        broken.add(run.outcomes if run is not None else {}, both)
        if attempt == 0 and not holds(verdict, run):
            return UNCONFIRMED
    runner.restore(module)
    started = time.monotonic()
    fixed = runner.run(both, timeout=timeout)
    seconds = time.monotonic() - started
    if fixed is None or any(fixed.outcomes.get(node) != "passed" for node in both):
        return "the listed tests do not all pass on the original"
    return Confirmed(verdict, broken, round(seconds, 2), first)


@dataclass(frozen=True)
class Bug:
    """A candidate bug in one module: one mutation, or two in different functions."""

    module: str
    parts: tuple[tuple[Mutation, int], ...]
    """Each mutation with the first line of its function (the probe's key)."""

    @property
    def kind(self) -> str:
        return self.parts[0][0].kind if len(self.parts) == 1 else "combined"

    @property
    def key(self) -> str:
        return f"{self.module}:" + "+".join(mutation.key for mutation, _ in self.parts)

    def text(self, original: str) -> str:
        edits = tuple(edit for mutation, _ in self.parts for edit in mutation.edits)
        return apply(original, Mutation(self.kind, self.parts[0][0].function, 0, edits))


def _try(
    runner: Runner,
    unit: Unit,
    bug: Bug,
    original: str,
    gold: Gold,
    options: Options,
    timeout: float,
    outcome: Outcome,
    warm: Warm | None = None,
) -> dict[str, Any] | None:
    """Validate ``bug`` (first in ``warm`` when it can be); its line, or None (the reason
    counted in ``outcome.rejected``)."""
    outcome.tried += 1
    changed = bug.text(original)
    runner.write(bug.module, changed)
    try:
        judged, mutated = first_run(runner, unit, bug, original, changed, gold, timeout, warm)
        outcome.runs["cold" if judged is mutated else "warm"] += 1
        verdict: Verdict | Confirmed | str = judge(gold.baseline, judged, max_fail=options.max_fail)
        again = _again(warm, bug, original, changed, timeout)
        left_out = mutated is not None and not set(gold.baseline.passed()) <= set(mutated.outcomes)
        if isinstance(verdict, Verdict) and again is not None and left_out:
            # The tests the warm run left out may still fail (a cache another test fills):
            # the ids, run warm as the verifier orders them, must agree before the cold runs.
            mutated = again(verdict.fail_to_pass + verdict.pass_to_pass)
            if not holds(verdict, mutated):
                verdict = UNCONFIRMED
        if isinstance(verdict, Verdict):
            verdict = confirm(runner, bug.module, verdict, timeout, again)
    finally:
        runner.restore(bug.module)
    if isinstance(verdict, str):
        outcome.rejected[verdict.split(" (")[0]] += 1
        return None
    assert mutated is not None
    gold = settle(runner, unit, runner.work.parent, gold)
    return line_for(unit, bug, original, changed, verdict, mutated, gold, runner)


def _again(
    warm: Warm | None, bug: Bug, original: str, changed: str, timeout: float
) -> Callable[[list[str]], RunResult | None] | None:
    """A warm run of given ids on ``bug``, when the warm pytest can make it."""
    plan = swaps(original, changed, [mutation for mutation, _ in bug.parts])
    if warm is None or not warm.started or plan is None:
        return None

    def run(ids: list[str]) -> RunResult | None:
        assert warm is not None and plan is not None
        result = warm.run(bug.module, plan, ids, timeout)
        return result if isinstance(result, RunResult) else None

    return run


def first_run(
    runner: Runner,
    unit: Unit,
    bug: Bug,
    original: str,
    changed: str,
    gold: Gold,
    timeout: float,
    warm: Warm | None,
) -> tuple[RunResult | None, RunResult | None]:
    """The run that judges ``bug`` (written in the working copy) and the run made: in
    ``warm``, the tests that call a changed function, the others keeping their gold
    outcome; else (or when the warm run cannot be made) the whole file in a fresh process."""
    plan = swaps(original, changed, [mutation for mutation, _ in bug.parts])
    if warm is not None and warm.started and plan is not None:
        keys = {f"{bug.module}:{first}" for _, first in bug.parts}
        passed = gold.baseline.passed()
        targets = selected(gold.baseline.covered, passed, keys)
        if targets:
            result = warm.run(bug.module, plan, targets, timeout)
            if result is None:
                return None, RunResult({})
            if not isinstance(result, str):
                outcomes = {**dict.fromkeys(passed, "passed"), **result.outcomes}
                judged = RunResult(outcomes, collect_errors=result.collect_errors)
                return judged, result
    mutated = runner.run([unit.test_file], timeout=timeout)
    return mutated, mutated


def work_unit(runner: Runner, unit: Unit, options: Options, known: set[str]) -> Outcome:
    """The lines one unit gives (``known``: mutations already in the manifest, skipped).

    Per function, a kind is drawn uniformly among those with a site on a line a passing test
    executed, then a site (``draw``); when two kept bugs of the unit are in different
    functions of one module, their combination is tried too (``combined``: the same failing
    tests need both fixed)."""
    started = time.monotonic()
    outcome = Outcome(unit)
    gold = gold_state(runner, unit, runner.work.parent, options.max_file_seconds, settled=False)
    if gold is None:
        outcome.skipped = "no usable gold run"
        outcome.seconds = time.monotonic() - started
        return outcome
    warm = Warm(runner, unit.test_file) if options.warm else None
    try:
        _mutate(runner, unit, options, known, gold, warm, outcome)
    finally:
        if warm is not None:
            warm.close()
    outcome.seconds = time.monotonic() - started
    return outcome


def reached(mutation: Mutation, lines: list[int] | None) -> bool:
    """Whether a passing test of the gold run executed a line of ``mutation``'s site
    (``lines``: the probe's for its file; None, from a gold state recorded before lines
    were, is no information). A changed default is evaluated when the module runs, so
    any call of its function reaches it."""
    if lines is None or mutation.kind == "changed_default":
        return True
    site = {mutation.line}
    for edit in mutation.edits:
        site.update(range(edit.start[0], edit.end[0] + 1))
    return not site.isdisjoint(lines)


def draw(rng: random.Random, choices: list[Mutation], source: str, dump: str) -> Mutation | None:
    """A kind drawn uniformly among those of ``choices``, then one of its mutations; one that
    does not parse or changes nothing (``valid``) is dropped and the draw made again."""
    left = sorted(choices, key=lambda m: (m.line, m.key))
    while left:
        kind = rng.choice(sorted({m.kind for m in left}))
        mutation = rng.choice([m for m in left if m.kind == kind])
        if valid(source, mutation, dump):
            return mutation
        left.remove(mutation)
    return None


def _mutate(
    runner: Runner,
    unit: Unit,
    options: Options,
    known: set[str],
    gold: Gold,
    warm: Warm | None,
    outcome: Outcome,
) -> None:
    # The probe's run is the slower one; a mutation 4x slower than it is a hang, not a bug.
    timeout = min(options.timeout, max(15.0, 4 * gold.seconds))
    rng = random.Random(f"{unit.seed}:{unit.test_file}")
    pool = candidates(gold.baseline)
    rng.shuffle(pool)
    sources: dict[str, str] = {}
    dumps: dict[str, str] = {}
    indexes: dict[str, dict[int, tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]] = {}
    kept: list[Bug] = []
    recorded = bool(gold.baseline.lines)
    tried: set[str] = set()
    for module, first_line in [site for _ in range(PER_FUNCTION) for site in pool]:
        if (
            len(outcome.lines) >= options.per_file
            or outcome.tried >= options.tries_per_file
            or time.time() > options.deadline
        ):
            break
        if module not in sources:
            sources[module] = runner.original(module).read_text(encoding="utf-8")
        original = sources[module]
        if module not in indexes:
            indexes[module] = function_index(original)
        found = indexes[module].get(first_line)
        if found is None or not original.endswith("\n"):
            continue
        name, node = found
        executed = gold.baseline.lines.get(module, []) if recorded else None
        choices = {
            m.key: m
            for m in reversed(sites(original, name, node))
            if reached(m, executed)
            and f"{module}:{m.key}" not in tried
            and f"{module}:{m.key}" not in known
        }
        if module not in dumps:
            dumps[module] = ast.dump(ast.parse(original))
        mutation = draw(rng, list(choices.values()), original, dumps[module])
        if mutation is None:
            continue
        bug = Bug(module, ((mutation, first_line),))
        tried.add(bug.key)
        line = _try(runner, unit, bug, original, gold, options, timeout, outcome, warm)
        if line is not None:
            known.add(bug.key)
            outcome.lines.append(line)
            kept.append(bug)
    pairs = [
        (first, second)
        for index, first in enumerate(kept)
        for second in kept[index + 1 :]
        if first.module == second.module and first.parts[0][1] != second.parts[0][1]
    ]
    if pairs and time.time() < options.deadline:
        first, second = rng.choice(pairs)
        combined = Bug(first.module, first.parts + second.parts)
        if combined.key not in known:
            line = _try(
                runner, unit, combined, sources[first.module], gold, options, timeout, outcome,
                warm,
            )  # fmt: skip
            if line is not None:
                known.add(combined.key)
                outcome.lines.append(line)


def line_for(
    unit: Unit,
    bug: Bug,
    original: str,
    changed: str,
    confirmed: Confirmed,
    mutated: RunResult,
    gold: Gold,
    runner: Runner,
) -> dict[str, Any]:
    """The manifest line of a confirmed bug, its flags measured."""
    verdict = confirmed.verdict
    module = bug.module
    ids = verdict.fail_to_pass + verdict.pass_to_pass
    dotted = module.removesuffix(".py").replace("/", ".")
    said = confirmed.first.messages if confirmed.first is not None else {}
    messages = {
        node: json.loads(said.get(node) or mutated.messages[node])
        for node in verdict.fail_to_pass
        if node in said or node in mutated.messages
    }
    confirmed.broken.add(mutated.outcomes, [node for node in ids if node in mutated.outcomes])
    gold_patch = patch(module, changed, original)
    names = [mutation.function for mutation, _ in bug.parts]
    line: dict[str, Any] = {
        "instance_id": instance_id(unit.repo, unit.package, module, names[0], bug.key),
        "repo": unit.repo,
        "language": "python",
        "source": unit.source,
        "version": unit.version,
        "kind": bug.kind,
        "kinds": [mutation.kind for mutation, _ in bug.parts],
        "files": [module],
        "functions": names,
        "bug": patch(module, original, changed),
        "patch": gold_patch,
        "FAIL_TO_PASS": verdict.fail_to_pass,
        "PASS_TO_PASS": verdict.pass_to_pass,
        "statement": redact(
            statement(dotted, names[0], verdict.fail_to_pass, messages),
            patch(module, original, changed),
        ),
        "difficulty": difficulty(gold_patch),
        "test_seconds": confirmed.seconds,
        "seed": unit.seed,
        "base_tree": base_tree(runner.site, unit.package, {module: changed.encode()}),
        "mutation": bug.key,
        "measured": True,
    }
    flaky = gold.runs.disagree(ids) or confirmed.broken.disagree(ids)
    targets = {f"{module}:{first}" for _, first in bug.parts}
    off = off_target(gold.baseline.covered, verdict.fail_to_pass, targets)
    line["flags"] = flags(line, flaky=flaky, off=off)
    return manifest.sealed(line)
