"""The figures ``palaestra collect`` prints at the end, from the counts it kept while writing.

``run_figures`` reads a run back from its files: every figure, a bootstrap interval each, and
numpy with scipy to compute them. At the end of a collection that cost the CPU of loading
numpy and ``scipy.special`` and memory growing with the rollouts (measured:
benchmarks/results/micro.md), so the collector's own summary uses what it already holds
instead: per task, its scored rollouts, how many passed and their reward sum
(``palaestra.collection.aggregate.TaskTable``, 16 bytes a task) and its failed rollouts. From
those come the mean reward, pass@1, and pass@k and pass^k for k = the repeats, each with an
analytic 95% interval over tasks (Wilson's when every per-task value is 0 or 1, else Student's
t over the per-task values: the tasks are the independent units, so the repeats of a task stay
together, as in the cluster bootstrap). Pure Python: a summary of a million tasks needs a few
MB and no numpy. The verifier metrics, majority@k and the bootstrap intervals are in
``palaestra report`` and ``run_figures``.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping

from palaestra.environment.estimators import pass_at_k, pass_hat_k
from palaestra.evaluate.figures import AS_ZERO, EXCLUDED, MEAN_REWARD, Figure
from palaestra.evaluate.stats import CONFIDENCE, Interval, wilson

TaskCounts = tuple[int, int, int, float]
"""(task index, scored rollouts, passed, reward sum), as ``TaskTable`` yields them."""


def running_figures(
    tasks: Callable[[], Iterable[TaskCounts]],
    failed_by_task: Mapping[int, int],
    *,
    failed: int,
    masked: int,
    failures_as_zero: bool = False,
    confidence: float = CONFIDENCE,
) -> list[Figure]:
    """Mean reward, pass@1, pass@k and pass^k (k = the most rollouts a task has, when > 1).

    ``tasks`` gives a fresh pass over the per-task counts each time it is called (each figure
    is one pass, so nothing per task is held but the figure's values, 8 bytes a task).
    ``failed_by_task`` counts each task's failed rollouts (read as reward 0 when
    ``failures_as_zero``, else left out: a task whose rollouts all failed is then left out);
    ``failed`` and ``masked`` are the run's failed rollouts, as every figure reports them.
    """

    def counts() -> Iterator[tuple[int, int, float, int]]:
        """(scored, passed, reward sum, failed) of every task, failed-only tasks last."""
        scored_failing: set[int] = set()  # as small as the tasks with failures
        for task, scored, passed, total in tasks():
            bad = failed_by_task.get(task, 0)
            if bad:
                scored_failing.add(task)
            yield scored, passed, total, bad
        for task, bad in failed_by_task.items():
            if task not in scored_failing:
                yield 0, 0, 0.0, bad

    reading = AS_ZERO if failures_as_zero else EXCLUDED
    k = max((s + (bad if failures_as_zero else 0) for s, _, _, bad in counts()), default=0)
    figures = [
        _figure(MEAN_REWARD, _values(counts(), failures_as_zero, None), failed, masked, reading,
                confidence),
        _figure("pass@1", _values(counts(), failures_as_zero, (1, pass_at_k)), failed, masked,
                reading, confidence),
    ]  # fmt: skip
    if k > 1:
        for name, estimator in ((f"pass@{k}", pass_at_k), (f"pass^{k}", pass_hat_k)):
            values = _values(counts(), failures_as_zero, (k, estimator))
            figures.append(_figure(name, values, failed, masked, reading, confidence))
    return figures


_Estimator = tuple[int, object]


def _values(
    counts: Iterable[tuple[int, int, float, int]],
    failures_as_zero: bool,
    estimator: _Estimator | None,
) -> tuple[array[float], int, int]:
    """Per-task values of one figure, the rollouts behind them, and the tasks left out."""
    values: array[float] = array("d")
    rollouts = left_out = 0
    for scored, passed, total, bad in counts:
        n = scored + bad if failures_as_zero else scored
        if n == 0:
            continue
        if estimator is None:
            values.append(total / n)
        else:
            k, function = estimator
            if n < k:
                left_out += 1
                continue
            values.append(function(n, passed, k))  # type: ignore[operator]
        rollouts += n
    return values, rollouts, left_out


def _figure(
    name: str,
    found: tuple[array[float], int, int],
    failed: int,
    masked: int,
    reading: str,
    confidence: float,
) -> Figure:
    values, rollouts, left_out = found
    interval = analytic_interval(values, confidence=confidence)
    note = ""
    if left_out:
        k = name.rsplit("@", 1)[-1].rsplit("^", 1)[-1]
        note = f"{left_out} tasks with fewer than {k} rollouts left out"
    return Figure(
        name=name,
        value=math.fsum(values) / len(values) if values else None,
        tasks=len(values),
        rollouts=rollouts,
        failed=failed,
        masked=masked,
        interval=interval,
        bootstrap=None,
        analytic=interval,
        reading=reading,
        note=note,
    )


def analytic_interval(values: array[float], *, confidence: float = CONFIDENCE) -> Interval | None:
    """Wilson's interval when every value is 0 or 1, else Student's t (None below two)."""
    n = len(values)
    if n < 2:
        return None
    if all(value in (0.0, 1.0) for value in values):
        return wilson(int(math.fsum(values)), n, confidence=confidence)
    mean = math.fsum(values) / n
    spread = math.sqrt(math.fsum((value - mean) ** 2 for value in values) / (n - 1))
    half = t_quantile(1.0 - (1.0 - confidence) / 2, n - 1) * spread / math.sqrt(n)
    detail = f"mean of {n} per-task values +- t({n - 1}) * s / sqrt(n)"
    return Interval(mean - half, mean + half, "student-t", confidence, detail)


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom, without scipy.

    Below 200 degrees of freedom: bisection on the exact CDF of an integer ``df``
    (Abramowitz & Stegun 26.7.3-4); above, the Cornish-Fisher expansion around the normal
    quantile (error below 1e-7 there). Checked against ``scipy.special.stdtrit`` in the tests.
    """
    if not 0.0 < p < 1.0 or df < 1:
        raise ValueError(f"needs 0 < p < 1 and df >= 1 (p={p}, df={df})")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if df >= 200:
        from statistics import NormalDist

        z = NormalDist().inv_cdf(p)
        return (
            z
            + (z**3 + z) / (4 * df)
            + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
        )
    low, high = 0.0, 1.0
    while _t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(100):
        middle = (low + high) / 2
        if _t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def _t_cdf(t: float, df: int) -> float:
    """P(T <= t) for t >= 0 and an integer ``df``: 1/2 + A(t | df) / 2."""
    theta = math.atan(t / math.sqrt(df))
    cos2 = math.cos(theta) ** 2
    if df % 2:
        term, total = math.cos(theta), 0.0
        if df > 1:
            total = term
            for j in range(3, df - 1, 2):
                term *= cos2 * (j - 1) / j
                total += term
        inside = (2 / math.pi) * (theta + math.sin(theta) * total)
    else:
        term = total = 1.0
        for j in range(2, df - 1, 2):
            term *= cos2 * (j - 1) / j
            total += term
        inside = math.sin(theta) * total
    return 0.5 + inside / 2
