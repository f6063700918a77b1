"""Comparing two runs task by task: differences with intervals, paired tests, flips, a gate.

``compare_runs(a, b)`` pairs the tasks of run A (the baseline) and run B (the candidate):

- **Pairing.** Two tasks pair when they have the same ``_ng_task_index`` and the same prompt:
  ``Task.identity``, a digest of ``responses_create_params.input``, so runs of one input file
  pair whatever their model, sampling or agent. An index whose prompts differ (the runs read
  different files) is reported in ``mismatched`` and not paired; a task that only one run has
  is reported in ``only_in_a`` / ``only_in_b``. A task without a prompt on record (an input
  line that could not be read) pairs by index alone.
- **Differences.** For each figure (mean reward, pass@1, pass@k and pass^k for the repeats
  both runs have, each verifier metric both report): the mean over paired tasks of the
  per-task difference B - A, with the paired bootstrap interval (the per-task differences
  resampled over tasks) and an analytic one: Newcombe's interval of paired proportions when
  every per-task value is 0 or 1 (one pass/fail per task; then it is also the headline
  ``interval``, as Wilson's is for a run's figures), else Student's t of the differences. A
  task pairs for a figure only when both runs have a value for it (under the default reading,
  a task whose rollouts all failed in one run has none).
- **Paired tests.** For the pass figures, the exact sign test of the per-task differences,
  which is McNemar's exact test when each task has one pass/fail outcome per run (named
  ``mcnemar-exact`` then); for the reward and the metrics, the paired permutation test of the
  mean difference.
- **Flips.** A task passes in a run when more than half of its rollouts passed (with one
  rollout: it passed); ``to_fail`` lists the paired tasks that passed in A and not in B,
  ``to_pass`` the reverse.
- **Gate.** With ``fail_if_worse=MARGIN``, the gate makes three checks (``Gate.checks``) and
  passes when all three do:

  - the gated figure (``mean reward`` by default): the lower bound of the headline interval
    of B - A (``Difference.interval``) is at least ``-MARGIN``, so a drop of more than MARGIN
    is ruled out at the interval's confidence. It fails when the bound is below ``-MARGIN``
    or there is no interval (fewer than two paired tasks): a gate that cannot rule out a
    regression does not pass;
  - ``failures``: B's failure rate (failed rollouts over scored plus failed, every failure
    of the run) is at most A's plus MARGIN. The figures leave failures out by default, so
    without this a candidate half of whose rollouts failed could pass on the other half;
    ``allow_more_failures=True`` reads this check as passed (its line still says the rates);
  - ``tasks``: the share of A's tasks that B lacks (not paired: missing, or another prompt
    at that index) is at most MARGIN, so a candidate run on part of the baseline's tasks
    does not pass on those; ``allow_fewer_tasks=True`` reads it as passed.

  Each check's ``reason`` is one line saying why it passed or failed.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from palaestra.errors import ConfigError
from palaestra.evaluate.figures import (
    MEAN_REWARD,
    RunFigures,
    metric_names,
    per_task,
    reading_of,
    run_figures,
)
from palaestra.evaluate.runs import Run, load_run
from palaestra.evaluate.stats import (
    CONFIDENCE,
    PERMUTATIONS,
    RESAMPLES,
    Interval,
    TestResult,
    bootstrap_mean,
    newcombe_paired,
    permutation_test,
    sign_test,
    student_t,
)
from palaestra.types import JsonDict


@dataclass(frozen=True, slots=True)
class Difference:
    """One figure compared over the paired tasks: A, B, B - A with intervals and a test."""

    name: str
    a: float | None
    """A's figure over the tasks paired for it (which may be fewer than A's own figure)."""
    b: float | None
    difference: float | None
    """The mean over paired tasks of B's value minus A's (None without a paired task)."""
    tasks: int
    """Tasks paired for this figure (both runs have a value)."""
    interval: Interval | None
    """The headline interval (the gate's): Newcombe's when every per-task value of both runs
    is 0 or 1 (it does not collapse to a point when no task changed), else the paired
    bootstrap. None below two tasks."""
    bootstrap: Interval | None
    """The paired bootstrap over tasks: the per-task differences resampled."""
    analytic: Interval | None
    """Newcombe's interval (0/1 values) or Student's t interval of the per-task differences."""
    test: TestResult | None
    reading: str

    def to_json(self) -> JsonDict:
        return {
            "name": self.name,
            "a": self.a,
            "b": self.b,
            "difference": self.difference,
            "tasks": self.tasks,
            "interval": None if self.interval is None else self.interval.to_json(),
            "bootstrap": None if self.bootstrap is None else self.bootstrap.to_json(),
            "analytic": None if self.analytic is None else self.analytic.to_json(),
            "test": None if self.test is None else self.test.to_json(),
            "reading": self.reading,
        }


@dataclass(frozen=True, slots=True)
class Flip:
    """A paired task that passed in one run and not in the other (pass rates in each)."""

    task: int
    a: float
    b: float

    def to_json(self) -> JsonDict:
        return {"task": self.task, "a": self.a, "b": self.b}


FAILURES = "failures"
"""The gate's check of the failure rates (``Check.name``)."""
TASKS = "tasks"
"""The gate's check of the tasks B has of A's (``Check.name``)."""
_SLACK = 1e-9
"""Rounding room when a share is compared with the margin (0.3 - 0.1 > 0.2 in floats)."""


@dataclass(frozen=True, slots=True)
class Check:
    """One check of the gate: the gated figure's, ``failures`` or ``tasks``."""

    name: str
    passed: bool
    reason: str
    """Why it passed or failed, in one line that starts with ``name``."""
    allowed: bool = False
    """Beyond the margin, but read as passed (``allow_more_failures``, ``allow_fewer_tasks``)."""

    def to_json(self) -> JsonDict:
        return {
            "name": self.name,
            "passed": self.passed,
            "reason": self.reason,
            "allowed": self.allowed,
        }


@dataclass(frozen=True, slots=True)
class Gate:
    """The verdict of ``fail_if_worse``: did B stay within ``margin`` of A?"""

    figure: str
    margin: float
    bound: float | None
    """The lower bound of the headline interval of B - A (None: no interval)."""
    passed: bool
    """Every check passed."""
    reason: str
    """The failed checks' reasons (all the checks' when the gate passed), joined by ``; ``."""
    checks: list[Check] = field(default_factory=list)
    """The gated figure's check, then ``failures`` and ``tasks``."""

    def to_json(self) -> JsonDict:
        return {
            "figure": self.figure,
            "margin": self.margin,
            "bound": self.bound,
            "passed": self.passed,
            "reason": self.reason,
            "checks": [check.to_json() for check in self.checks],
        }


@dataclass(frozen=True, slots=True)
class Comparison:
    """Run B against run A (the baseline): see the module docstring for every part."""

    a: RunFigures
    b: RunFigures
    paired: list[int]
    """Task indices paired (same index and prompt)."""
    only_in_a: list[int]
    only_in_b: list[int]
    mismatched: list[int]
    """Indices both runs have with different prompts: not paired."""
    differences: list[Difference]
    to_fail: list[Flip] = field(default_factory=list)
    to_pass: list[Flip] = field(default_factory=list)
    gate: Gate | None = None

    def difference(self, name: str) -> Difference:
        for difference in self.differences:
            if difference.name == name:
                return difference
        known = ", ".join(difference.name for difference in self.differences)
        raise KeyError(f"no figure {name!r} compared (compared: {known})")

    def to_json(self) -> JsonDict:
        return {
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "paired": len(self.paired),
            "only_in_a": self.only_in_a,
            "only_in_b": self.only_in_b,
            "mismatched": self.mismatched,
            "differences": [difference.to_json() for difference in self.differences],
            "to_fail": [flip.to_json() for flip in self.to_fail],
            "to_pass": [flip.to_json() for flip in self.to_pass],
            "gate": None if self.gate is None else self.gate.to_json(),
        }


def compare_runs(
    a: Run | str | os.PathLike[str],
    b: Run | str | os.PathLike[str],
    *,
    failures_as_zero: bool = False,
    fail_if_worse: float | None = None,
    gate_on: str = MEAN_REWARD,
    allow_more_failures: bool = False,
    allow_fewer_tasks: bool = False,
    figures: Sequence[str] | None = None,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> Comparison:
    """Compare run ``b`` (the candidate) with run ``a`` (the baseline), paired by task.

    ``a`` and ``b`` are ``Run`` s or the paths of their rollouts JSONL. ``figures`` names
    the figures to compare (default: mean reward, pass@1, pass@k and pass^k for the repeats
    both runs have, and the verifier metrics both report). ``fail_if_worse`` sets a gate on
    ``gate_on``, B's failure rate and the tasks B has of A's (see the module docstring); an
    unknown ``gate_on`` is a ``ConfigError``. ``allow_more_failures`` and ``allow_fewer_tasks``
    let the gate pass a candidate that fails more rollouts or lacks tasks beyond the margin.
    """
    run_a = a if isinstance(a, Run) else load_run(a)
    run_b = b if isinstance(b, Run) else load_run(b)
    figures_a, figures_b = (
        run_figures(
            run,
            failures_as_zero=failures_as_zero,
            confidence=confidence,
            resamples=resamples,
            seed=seed,
        )
        for run in (run_a, run_b)
    )
    paired, only_a, only_b, mismatched = _pairs(run_a, run_b)
    names = list(figures) if figures is not None else _default_names(run_a, run_b)
    if fail_if_worse is not None and gate_on not in names:
        raise ConfigError(
            f"cannot gate on {gate_on!r}: not a compared figure (compared: {', '.join(names)})"
        )
    keep = set(paired)
    differences = [
        _difference(
            name,
            run_a,
            run_b,
            keep,
            failures_as_zero=failures_as_zero,
            confidence=confidence,
            resamples=resamples,
            permutations=permutations,
            seed=seed,
        )
        for name in names
    ]
    to_fail, to_pass = _flips(run_a, run_b, paired, failures_as_zero)
    comparison = Comparison(
        a=figures_a,
        b=figures_b,
        paired=paired,
        only_in_a=only_a,
        only_in_b=only_b,
        mismatched=mismatched,
        differences=differences,
        to_fail=to_fail,
        to_pass=to_pass,
    )
    if fail_if_worse is None:
        return comparison
    gated = comparison.difference(gate_on)
    checks = [
        _figure_check(gated, fail_if_worse),
        _failures_check(run_a, run_b, fail_if_worse, allow=allow_more_failures),
        _tasks_check(run_a, comparison, fail_if_worse, allow=allow_fewer_tasks),
    ]
    passed = all(check.passed for check in checks)
    reason = "; ".join(check.reason for check in checks if passed or not check.passed)
    bound = None if gated.interval is None else gated.interval.low
    gate = Gate(gate_on, fail_if_worse, bound, passed, reason, checks)
    return replace(comparison, gate=gate)


def _pairs(a: Run, b: Run) -> tuple[list[int], list[int], list[int], list[int]]:
    paired, mismatched = [], []
    for index in sorted(a.tasks.keys() & b.tasks.keys()):
        one, other = a.tasks[index].identity, b.tasks[index].identity
        if one is not None and other is not None and one != other:
            mismatched.append(index)
        else:
            paired.append(index)
    only_a = sorted(a.tasks.keys() - b.tasks.keys())
    only_b = sorted(b.tasks.keys() - a.tasks.keys())
    return paired, only_a, only_b, mismatched


def _default_names(a: Run, b: Run) -> list[str]:
    repeats = min(max((task.attempted for task in run.tasks.values()), default=0) for run in (a, b))
    names = [MEAN_REWARD, "pass@1"]
    if repeats > 1:
        names += [f"pass@{repeats}", f"pass^{repeats}"]
    shared = set(metric_names(b))
    names += [name for name in metric_names(a) if name in shared]
    return names


def _difference(
    name: str,
    a: Run,
    b: Run,
    keep: set[int],
    *,
    failures_as_zero: bool,
    confidence: float,
    resamples: int,
    permutations: int,
    seed: int,
) -> Difference:
    values_a, _, _ = per_task(a, name, failures_as_zero=failures_as_zero)
    values_b, _, _ = per_task(b, name, failures_as_zero=failures_as_zero)
    tasks = [task for task in sorted(keep) if task in values_a and task in values_b]
    one = [values_a[task] for task in tasks]
    other = [values_b[task] for task in tasks]
    diffs = [y - x for x, y in zip(one, other, strict=True)]
    seeds = [seed, zlib.crc32(name.encode())]
    binary = all(value in (0.0, 1.0) for value in (*one, *other))
    test: TestResult | None = None
    if diffs:
        if name.startswith(("pass@", "pass^", "majority@")):
            test = sign_test(diffs, mcnemar=binary)
        else:
            test = permutation_test(diffs, resamples=permutations, seed=seeds)
    bootstrap = bootstrap_mean(diffs, confidence=confidence, resamples=resamples, seed=seeds)
    analytic = (
        newcombe_paired(one, other, confidence=confidence)
        if binary
        else student_t(diffs, confidence=confidence)
    )
    return Difference(
        name=name,
        a=sum(one) / len(one) if one else None,
        b=sum(other) / len(other) if other else None,
        difference=sum(diffs) / len(diffs) if diffs else None,
        tasks=len(diffs),
        interval=analytic if binary else bootstrap,
        bootstrap=bootstrap,
        analytic=analytic,
        test=test,
        reading=reading_of(name, failures_as_zero),
    )


def _pass_rate(run: Run, index: int, failures_as_zero: bool) -> float | None:
    task = run.tasks[index]
    n = task.attempted if failures_as_zero else len(task.rollouts)
    return task.passed / n if n else None


def _flips(
    a: Run, b: Run, paired: list[int], failures_as_zero: bool
) -> tuple[list[Flip], list[Flip]]:
    to_fail, to_pass = [], []
    for index in paired:
        rate_a = _pass_rate(a, index, failures_as_zero)
        rate_b = _pass_rate(b, index, failures_as_zero)
        if rate_a is None or rate_b is None:
            continue
        if rate_a > 0.5 and rate_b <= 0.5:
            to_fail.append(Flip(index, rate_a, rate_b))
        elif rate_a <= 0.5 and rate_b > 0.5:
            to_pass.append(Flip(index, rate_a, rate_b))
    return to_fail, to_pass


def _figure_check(difference: Difference, margin: float) -> Check:
    interval = difference.interval
    name = difference.name
    if interval is None:
        reason = (
            f"{name}: fewer than two paired tasks ({difference.tasks}), so no interval: "
            "a drop cannot be ruled out"
        )
        return Check(name, False, reason)
    bound = interval.low
    passed = bound >= -margin
    relation = ">=" if passed else "<"
    reason = (
        f"{name}: the {interval.confidence:.0%} interval of B - A starts at {bound:+.4f} "
        f"{relation} -{margin:g}"
    )
    return Check(name, passed, reason)


def _failures_check(a: Run, b: Run, margin: float, *, allow: bool) -> Check:
    rate_a, rate_b = _failure_rate(a), _failure_rate(b)
    rates = (
        f"candidate failed {b.failed} of {b.failed + b.scored} rollouts ({rate_b:.1%}), "
        f"baseline {a.failed} of {a.failed + a.scored} ({rate_a:.1%})"
    )
    within = rate_b - rate_a <= margin + _SLACK
    return _check(FAILURES, rates, margin, within=within, allow=allow, more="more failures")


def _failure_rate(run: Run) -> float:
    attempted = run.failed + run.scored
    return run.failed / attempted if attempted else 0.0


def _tasks_check(a: Run, comparison: Comparison, margin: float, *, allow: bool) -> Check:
    baseline = len(a.tasks)
    missing = len(comparison.only_in_a) + len(comparison.mismatched)
    has = baseline - missing
    share = has / baseline if baseline else 1.0
    counts = f"candidate has {has} of the baseline's {baseline} tasks ({share:.1%})"
    if missing:
        counts += f", {missing} missing"
    within = missing <= margin * baseline + _SLACK
    return _check(TASKS, counts, margin, within=within, allow=allow, more="fewer tasks")


def _check(name: str, counts: str, margin: float, *, within: bool, allow: bool, more: str) -> Check:
    if within:
        return Check(name, True, f"{name}: {counts}: within the margin {margin:g}")
    if allow:
        reason = f"{name}: {counts}: beyond the margin {margin:g}, but {more} are allowed"
        return Check(name, True, reason, allowed=True)
    return Check(name, False, f"{name}: {counts}: beyond the margin {margin:g}")
