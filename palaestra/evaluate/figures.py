"""A run's headline figures, each with its n, its failures and a 95% confidence interval.

``run_figures(run)`` computes, over the run's tasks:

- ``mean reward``: the mean over tasks of each task's mean reward (every task weighs the
  same, whatever its number of repeats; with equal repeats and no failures it is the mean over
  rollouts);
- ``pass@k`` (k = 1 and k = the run's repeats) and ``pass^k`` (k = the repeats, when more
  than 1): the mean over tasks of the unbiased per-task estimators
  (``palaestra.environment.estimators``); a rollout passes when its reward is >= 1, as in the
  aggregate file; a task with fewer than k rollouts is left out of that figure (and said so
  in ``Figure.note``);
- ``majority@k`` (when verifiers report ``extracted_answer``): the share of tasks whose most
  frequent answer passed;
- every verifier metric (``reward_components/<name>`` and the verifier's other numeric
  fields): the mean over tasks of each task's mean, over the scored rollouts that have it.

Each figure carries two intervals, each naming its method: ``bootstrap``, the percentile
bootstrap over tasks (the rollouts of a task are resampled together: a cluster bootstrap),
and ``analytic``, Wilson's score interval when every per-task value is 0 or 1 (one pass/fail
per task), else Student's t. ``interval``, the one to show, is Wilson's for 0/1 values (the
bootstrap of a proportion is too narrow near 0 and 1, and a point when every task passed)
and the bootstrap otherwise.

The reading of failures (``failures_as_zero``): by default a failed rollout is left out (a
task whose rollouts all failed is left out of the reward figures); with
``failures_as_zero=True`` each failed rollout counts as reward 0 (and as not passing), so
every attempted task counts. Verifier metrics are always over scored rollouts (a failure has
no metrics, and 0 means nothing for, say, a length). ``Figure.reading`` states which.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from palaestra.environment.estimators import majority_vote, pass_at_k, pass_hat_k
from palaestra.evaluate.runs import Run, Task, load_run
from palaestra.evaluate.stats import (
    CONFIDENCE,
    RESAMPLES,
    Interval,
    analytic_mean,
    bootstrap_mean,
)
from palaestra.types import JsonDict

MEAN_REWARD = "mean reward"
EXCLUDED = "failures excluded"
AS_ZERO = "failures as 0"
SCORED_ONLY = "scored rollouts only"

_K_FIGURE = re.compile(r"^(pass@|pass\^|majority@)([1-9][0-9]*)$")


@dataclass(frozen=True, slots=True)
class Figure:
    """One headline figure of a run: its value, n, failures and intervals."""

    name: str
    """``mean reward``, ``pass@1``, ``pass^4``, ``majority@4``, or a verifier metric's name."""
    value: float | None
    """None when no task has a value (every rollout failed, say)."""
    tasks: int
    """Tasks the figure is over (n)."""
    rollouts: int
    """Rollouts the figure is over: scored ones, plus failed ones read as 0."""
    failed: int
    """Failed rollouts of the run (excluded, or counted as 0: see ``reading``)."""
    masked: int
    """Of those, the ones marked ``masked``."""
    interval: Interval | None
    """The headline interval: Wilson's when every per-task value is 0 or 1 (the bootstrap of
    a proportion collapses to a point when every task passed, and is too narrow near 0 and 1),
    the bootstrap otherwise. None below two tasks."""
    bootstrap: Interval | None
    """The percentile bootstrap over tasks (rollouts of a task resampled together)."""
    analytic: Interval | None
    """Wilson's interval (per-task values all 0 or 1) or Student's t."""
    reading: str
    """``failures excluded``, ``failures as 0`` or ``scored rollouts only``."""
    note: str = ""
    """Anything else a reader needs: tasks left out for having fewer than k rollouts."""

    def describe(self, digits: int = 4) -> str:
        """One line: ``0.7500 [0.6100, 0.8700] n=40 tasks/160 rollouts, 3 failed (excluded)``."""
        if self.value is None:
            text = "-"
        else:
            text = f"{self.value:.{digits}f}"
            if self.interval is not None:
                low, high = self.interval.low, self.interval.high
                text += f" [{low:.{digits}f}, {high:.{digits}f}]"
        text += f"  n={self.tasks} tasks/{self.rollouts} rollouts"
        if self.failed:
            how = {EXCLUDED: "excluded", AS_ZERO: "as 0"}.get(self.reading, "excluded")
            text += f", {self.failed} failed ({how})"
        if self.note:
            text += f"; {self.note}"
        return text

    def to_json(self) -> JsonDict:
        return {
            "name": self.name,
            "value": self.value,
            "tasks": self.tasks,
            "rollouts": self.rollouts,
            "failed": self.failed,
            "masked": self.masked,
            "interval": None if self.interval is None else self.interval.to_json(),
            "bootstrap": None if self.bootstrap is None else self.bootstrap.to_json(),
            "analytic": None if self.analytic is None else self.analytic.to_json(),
            "reading": self.reading,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class RunFigures:
    """Every headline figure of a run, and the run-wide counts."""

    run: Run
    figures: list[Figure]
    failures_as_zero: bool
    confidence: float
    seed: int
    tasks: int
    """Tasks with at least one scored or failed rollout."""
    scored: int
    failed: int
    masked: int
    failure_kinds: dict[str, int] = field(default_factory=dict)

    @property
    def reading(self) -> str:
        """``failures excluded`` or ``failures as 0``: the reading of the reward figures."""
        return AS_ZERO if self.failures_as_zero else EXCLUDED

    def figure(self, name: str) -> Figure:
        """The figure called ``name``; ``KeyError`` listing the names when there is none."""
        for figure in self.figures:
            if figure.name == name:
                return figure
        known = ", ".join(figure.name for figure in self.figures)
        raise KeyError(f"no figure {name!r} (the run has: {known})")

    def to_json(self) -> JsonDict:
        return {
            "output": str(self.run.output),
            "reading": self.reading,
            "confidence": self.confidence,
            "seed": self.seed,
            "tasks": self.tasks,
            "scored": self.scored,
            "failed": self.failed,
            "masked": self.masked,
            "failure_kinds": self.failure_kinds,
            "figures": [figure.to_json() for figure in self.figures],
            "warnings": self.run.warnings,
        }


def run_figures(
    run: Run | str | os.PathLike[str],
    *,
    failures_as_zero: bool = False,
    ks: Sequence[int] | None = None,
    metrics: bool = True,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> RunFigures:
    """The headline figures of ``run`` (a ``Run``, or the path of its rollouts JSONL).

    ``ks``: the k of pass@k, pass^k and majority@k (default: 1 and the run's repeats, the
    most rollouts any task has). ``metrics=False`` leaves out the verifier metrics. The
    intervals are at ``confidence``, the bootstrap draws ``resamples`` resamples from a
    generator seeded with ``seed`` and the figure's name, so equal inputs give equal output.
    """
    if not isinstance(run, Run):
        run = load_run(run)
    tasks = list(run.tasks.values())
    repeats = max((task.attempted for task in tasks), default=0)
    chosen = sorted(set(ks)) if ks is not None else sorted({1, repeats} - {0})
    if any(k < 1 for k in chosen):
        raise ValueError(f"every k of pass@k is at least 1, not {chosen[0]}")
    names = [MEAN_REWARD]
    names += [f"pass@{k}" for k in chosen]
    names += [f"pass^{k}" for k in chosen if k > 1]
    if any(rollout.answer is not None for rollout in run.rollouts()):
        names += [f"majority@{k}" for k in chosen if k > 1] or [f"majority@{repeats}"]
    if metrics:
        names += metric_names(run)
    failed, masked = run.failed, run.masked
    figures = []
    for name in names:
        values, rollouts, left_out = per_task(run, name, failures_as_zero=failures_as_zero)
        figures.append(
            _figure(
                name,
                list(values.values()),
                rollouts,
                left_out,
                failed=failed,
                masked=masked,
                reading=reading_of(name, failures_as_zero),
                confidence=confidence,
                resamples=resamples,
                seed=seed,
            )
        )
    return RunFigures(
        run=run,
        figures=figures,
        failures_as_zero=failures_as_zero,
        confidence=confidence,
        seed=seed,
        tasks=sum(1 for task in tasks if task.attempted),
        scored=run.scored,
        failed=failed,
        masked=masked,
        failure_kinds=dict(run.failure_kinds().most_common()),
    )


def metric_names(run: Run) -> list[str]:
    """The verifier metrics the run's scored rollouts report, sorted."""
    names: set[str] = set()
    for rollout in run.rollouts():
        names.update(rollout.metrics)
    return sorted(names)


def per_task(
    run: Run, name: str, *, failures_as_zero: bool = False
) -> tuple[dict[int, float], int, int]:
    """Each task's value of the figure ``name``: ``({task index: value}, rollouts, left out)``.

    ``rollouts`` counts the rollouts behind the values; ``left out`` the tasks that had
    rollouts but too few for the figure (fewer than k, for pass@k). ``name`` is a figure's
    name as ``run_figures`` gives it (``mean reward``, ``pass@k``, ``pass^k``,
    ``majority@k``, a metric's name); a task with nothing to go on is not in the dict.
    """
    match = _K_FIGURE.match(name)
    if name == MEAN_REWARD:
        return _over_tasks(run.tasks.values(), failures_as_zero, _mean_reward)
    if match is not None:
        kind, k = match.group(1), int(match.group(2))
        if kind == "majority@":
            return _over_tasks(run.tasks.values(), failures_as_zero, _majority)
        estimator = pass_at_k if kind == "pass@" else pass_hat_k
        return _over_tasks(
            run.tasks.values(),
            failures_as_zero,
            lambda n, task: estimator(n, task.passed, k) if n >= k else None,
        )
    values: dict[int, float] = {}
    rollouts = 0
    for task in run.tasks.values():
        found = [r.metrics[name] for r in task.rollouts if name in r.metrics]
        if found:
            values[task.index] = sum(found) / len(found)
            rollouts += len(found)
    return values, rollouts, 0


def _over_tasks(
    tasks: Iterable[Task],
    failures_as_zero: bool,
    value_of: Callable[[int, Task], float | None],
) -> tuple[dict[int, float], int, int]:
    """Per task: ``value_of(n, task)``, n being the rollouts read (scored, + failed as 0)."""
    values: dict[int, float] = {}
    rollouts = left_out = 0
    for task in tasks:
        n = task.attempted if failures_as_zero else len(task.rollouts)
        if not n:
            continue
        value = value_of(n, task)
        if value is None:
            left_out += 1
            continue
        values[task.index] = value
        rollouts += n
    return values, rollouts, left_out


def _mean_reward(n: int, task: Task) -> float:
    return sum(task.rewards) / n  # failed rollouts, when read, add 0 to the sum


def _majority(n: int, task: Task) -> float:
    votes = [(r.answer, r.passed) for r in task.rollouts if r.answer is not None]
    return float(majority_vote(votes))


def reading_of(name: str, failures_as_zero: bool) -> str:
    """How the figure ``name`` reads failures: ``failures excluded``, ``failures as 0`` or
    ``scored rollouts only`` (the verifier metrics)."""
    if name == MEAN_REWARD or _K_FIGURE.match(name):
        return AS_ZERO if failures_as_zero else EXCLUDED
    return SCORED_ONLY


def _figure(
    name: str,
    values: list[float],
    rollouts: int,
    left_out: int,
    *,
    failed: int,
    masked: int,
    reading: str,
    confidence: float,
    resamples: int,
    seed: int,
) -> Figure:
    seeds = [seed, zlib.crc32(name.encode())]
    note = ""
    if left_out:
        k = name.rsplit("@", 1)[-1].rsplit("^", 1)[-1]
        note = f"{left_out} tasks with fewer than {k} rollouts left out"
    bootstrap = bootstrap_mean(values, confidence=confidence, resamples=resamples, seed=seeds)
    analytic = analytic_mean(values, confidence=confidence)
    return Figure(
        name=name,
        value=sum(values) / len(values) if values else None,
        tasks=len(values),
        rollouts=rollouts,
        failed=failed,
        masked=masked,
        interval=analytic if analytic is not None and analytic.method == "wilson" else bootstrap,
        bootstrap=bootstrap,
        analytic=analytic,
        reading=reading,
        note=note,
    )
