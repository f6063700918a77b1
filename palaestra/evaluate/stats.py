"""Intervals and paired tests over per-task values (numpy and scipy, loaded when called).

Every function takes one value per task: the unit of resampling is the task, so rollouts of
one task (repeats), which are not independent, move together (a cluster bootstrap). A run's
figure is the mean of its per-task values (``palaestra.evaluate.figures``); a comparison's
is the mean of per-task differences (``palaestra.evaluate.compare``).

- ``bootstrap_mean``: the percentile bootstrap of the mean, resampling tasks with
  replacement. When the values take few distinct levels (pass/fail, k-of-n pass rates) the
  resampled means are drawn as multinomial counts of the levels, which has exactly the same
  distribution as resampling indices and costs nothing per task.
- ``analytic_mean``: Wilson's score interval when every value is 0 or 1 (a proportion of
  tasks), otherwise Student's t interval of the mean (mean +- t * s / sqrt(n)).
- ``newcombe_paired``: the interval of a difference of paired proportions (two runs' 0/1
  outcomes on the same tasks).
- ``sign_test``: the exact two-sided sign test of per-task differences (ties dropped); with
  one pass/fail outcome per task it is McNemar's exact test.
- ``permutation_test``: the paired permutation test of the mean difference (signs flipped at
  random; exact when 2^n is at most the resamples).

scipy's ``special`` functions give the t quantile and the binomial tail; ``scipy.stats`` is
not used, since importing it takes 1.7 s, more than the figures of 100,000 rollouts.

An interval is None when there are fewer than two tasks: one task says nothing about the
spread. Results depend only on the data and ``seed``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from palaestra.types import JsonDict

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

CONFIDENCE = 0.95
RESAMPLES = 2000
"""Bootstrap resamples: the 2.5% and 97.5% quantiles then move by about 0.05 standard errors
from one seed to another."""
PERMUTATIONS = 9999

Seed = int | Sequence[int]
"""A seed of numpy's generator: an int, or several (a figure mixes in its name)."""

_LEVELS = 256
"""At most this many distinct values (and fewer than a quarter of the tasks): multinomial."""
_CHUNK = 1 << 22
"""Indices drawn at once when resampling tasks one by one (32 MiB)."""


@dataclass(frozen=True, slots=True)
class Interval:
    """A confidence interval ``[low, high]`` and how it was made."""

    low: float
    high: float
    method: Literal["bootstrap", "wilson", "student-t", "newcombe"]
    """``bootstrap`` (percentile, over tasks), ``wilson`` (score interval of a proportion of
    tasks), ``student-t`` (of a mean of per-task values) or ``newcombe`` (of a difference of
    paired proportions)."""
    confidence: float = CONFIDENCE
    detail: str = ""
    """How exactly: ``"percentile, 2000 resamples of 100 tasks, seed 0"``."""

    def to_json(self) -> JsonDict:
        return {
            "low": self.low,
            "high": self.high,
            "method": self.method,
            "confidence": self.confidence,
            "detail": self.detail,
        }

    def __str__(self) -> str:
        return f"[{self.low:.4f}, {self.high:.4f}]"


@dataclass(frozen=True, slots=True)
class TestResult:
    """A paired test's two-sided p-value and its counts."""

    p_value: float
    method: Literal["mcnemar-exact", "sign-test-exact", "permutation", "permutation-exact"]
    better: int
    """Tasks where B's value is above A's (the discordant pairs B won, for McNemar)."""
    worse: int
    ties: int
    detail: str = ""

    def to_json(self) -> JsonDict:
        return {
            "p_value": self.p_value,
            "method": self.method,
            "better": self.better,
            "worse": self.worse,
            "ties": self.ties,
            "detail": self.detail,
        }


def bootstrap_mean(
    values: Sequence[float] | npt.NDArray[np.float64],
    *,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: Seed = 0,
) -> Interval | None:
    """The percentile bootstrap interval of the mean of ``values`` (one per task)."""
    means = bootstrap_means(values, resamples=resamples, seed=seed)
    if means is None:
        return None
    import numpy as np

    tail = (1.0 - confidence) / 2
    low, high = np.quantile(means, [tail, 1.0 - tail])
    detail = f"percentile, {resamples} resamples of {len(values)} tasks, seed {_seed_text(seed)}"
    return Interval(float(low), float(high), "bootstrap", confidence, detail)


def bootstrap_means(
    values: Sequence[float] | npt.NDArray[np.float64],
    *,
    resamples: int = RESAMPLES,
    seed: Seed = 0,
) -> npt.NDArray[np.float64] | None:
    """``resamples`` means of ``values`` resampled with replacement (None below two values)."""
    import numpy as np

    data = np.asarray(values, dtype=np.float64)
    n = data.size
    if n < 2:
        return None
    rng = np.random.default_rng(seed)
    levels, counts = np.unique(data, return_counts=True)
    if levels.size <= _LEVELS and levels.size * 4 <= n:
        drawn = rng.multinomial(n, counts / n, size=resamples)
        means: npt.NDArray[np.float64] = drawn @ levels / n
        return means
    means = np.empty(resamples)
    step = max(1, _CHUNK // n)
    for start in range(0, resamples, step):
        stop = min(start + step, resamples)
        picks = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = data[picks].mean(axis=1)
    return means


def analytic_mean(
    values: Sequence[float] | npt.NDArray[np.float64], *, confidence: float = CONFIDENCE
) -> Interval | None:
    """Wilson's interval when every value is 0 or 1, else Student's t (None below two),
    kept within [0, 1] when every value is: a mean of rewards in [0, 1] cannot leave it."""
    import numpy as np

    data = np.asarray(values, dtype=np.float64)
    if data.size < 2:
        return None
    if np.all((data == 0.0) | (data == 1.0)):
        return wilson(int(data.sum()), int(data.size), confidence=confidence)
    interval = student_t(data, confidence=confidence)
    if interval is not None and np.all((data >= 0.0) & (data <= 1.0)):
        low, high = max(0.0, interval.low), min(1.0, interval.high)
        if (low, high) != (interval.low, interval.high):
            detail = f"{interval.detail}, kept within [0, 1]"
            return Interval(low, high, interval.method, interval.confidence, detail)
    return interval


def wilson(successes: int, n: int, *, confidence: float = CONFIDENCE) -> Interval | None:
    """Wilson's score interval of a proportion ``successes / n``."""
    if n < 2:
        return None
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    detail = f"score interval of {successes}/{n} tasks"
    return Interval(max(0.0, centre - half), min(1.0, centre + half), "wilson", confidence, detail)


def student_t(
    values: Sequence[float] | npt.NDArray[np.float64], *, confidence: float = CONFIDENCE
) -> Interval | None:
    """Student's t interval of the mean of ``values`` (n - 1 degrees of freedom)."""
    import numpy as np

    special = _scipy_special()

    data = np.asarray(values, dtype=np.float64)
    n = data.size
    if n < 2:
        return None
    mean = float(data.mean())
    half = (
        float(special.stdtrit(n - 1, 1.0 - (1.0 - confidence) / 2))
        * float(data.std(ddof=1))
        / math.sqrt(n)
    )
    detail = f"mean of {n} per-task values +- t({n - 1}) * s / sqrt(n)"
    return Interval(mean - half, mean + half, "student-t", confidence, detail)


def newcombe_paired(
    a: Sequence[float] | npt.NDArray[np.float64],
    b: Sequence[float] | npt.NDArray[np.float64],
    *,
    confidence: float = CONFIDENCE,
) -> Interval | None:
    """Newcombe's interval of ``mean(b) - mean(a)`` for paired 0/1 values (one per task).

    Newcombe's hybrid score interval for paired proportions (his method 10, 1998): the Wilson
    intervals of the two proportions combined with the correlation of the pairs. Unlike the
    bootstrap it does not collapse to a point when no task changed. None below two tasks.
    """
    import numpy as np

    one = np.asarray(a, dtype=np.float64)
    other = np.asarray(b, dtype=np.float64)
    n = int(one.size)
    first, second = (
        wilson(int(one.sum()), n, confidence=confidence),
        wilson(int(other.sum()), n, confidence=confidence),
    )
    if first is None or second is None:
        return None
    both = int(((one == 1) & (other == 1)).sum())
    only_a = int(((one == 1) & (other == 0)).sum())
    only_b = int(((one == 0) & (other == 1)).sum())
    neither = n - both - only_a - only_b
    p1, p2 = (both + only_a) / n, (both + only_b) / n
    spread = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    phi = (both * neither - only_a * only_b) / math.sqrt(spread) if spread else 0.0
    delta = p2 - p1
    down_b, up_a = p2 - second.low, first.high - p1
    up_b, down_a = second.high - p2, p1 - first.low
    low = delta - math.sqrt(max(0.0, down_b**2 - 2 * phi * down_b * up_a + up_a**2))
    high = delta + math.sqrt(max(0.0, up_b**2 - 2 * phi * up_b * down_a + down_a**2))
    detail = (
        f"hybrid score interval of paired proportions: {only_b} tasks only B passed, "
        f"{only_a} only A, of {n}"
    )
    return Interval(max(-1.0, low), min(1.0, high), "newcombe", confidence, detail)


def sign_test(
    differences: Sequence[float] | npt.NDArray[np.float64], *, mcnemar: bool = False
) -> TestResult:
    """The exact two-sided sign test of per-task differences B - A (zeros are ties).

    With ``mcnemar`` (every difference is -1, 0 or +1: one pass/fail outcome per task) it is
    McNemar's exact test, and is named so. The p-value is twice the smaller binomial tail of
    the discordant tasks (capped at 1), as ``scipy.stats.binomtest`` gives for p = 1/2.
    """
    import numpy as np

    data = np.asarray(differences, dtype=np.float64)
    better, worse = int((data > 0).sum()), int((data < 0).sum())
    ties = int(data.size) - better - worse
    discordant = better + worse
    p = 1.0
    if discordant:
        tail = float(_scipy_special().bdtr(min(better, worse), discordant, 0.5))
        p = min(1.0, 2 * tail)
    method: Literal["mcnemar-exact", "sign-test-exact"] = (
        "mcnemar-exact" if mcnemar else "sign-test-exact"
    )
    detail = f"binomial test of {better} vs {worse} discordant tasks, p = 0.5"
    return TestResult(p, method, better, worse, ties, detail)


def permutation_test(
    differences: Sequence[float] | npt.NDArray[np.float64],
    *,
    resamples: int = PERMUTATIONS,
    seed: Seed = 0,
) -> TestResult:
    """The paired permutation test of the mean of per-task differences B - A (two-sided).

    Under the null hypothesis each difference is as likely negated, so its sign is flipped:
    every one of the 2^n sign patterns when that is at most ``resamples`` (the exact
    p-value), else ``resamples`` random patterns, with the p-value ``(hits + 1) /
    (resamples + 1)`` (never 0; scipy's ``permutation_test`` convention).
    """
    import numpy as np

    data = np.asarray(differences, dtype=np.float64)
    n = int(data.size)
    better, worse = int((data > 0).sum()), int((data < 0).sum())
    ties = n - better - worse
    if better + worse == 0:
        return TestResult(1.0, "permutation", better, worse, ties, "every difference is 0")
    observed = abs(float(data.sum()))
    slack = 1e-9 * max(1.0, float(np.abs(data).sum()))  # sums equal up to rounding count
    if 2**n <= resamples:
        patterns = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
        sums = np.abs((1 - 2 * patterns) @ data)
        p = float((sums >= observed - slack).mean())
        detail = f"signs of {n} differences, all {2**n} patterns"
        return TestResult(p, "permutation-exact", better, worse, ties, detail)
    rng = np.random.default_rng(seed)
    hits = 0
    step = max(1, _CHUNK // n)
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(rows, n))
        hits += int((np.abs(signs @ data) >= observed - slack).sum())
    p = (hits + 1) / (resamples + 1)
    detail = f"signs of {n} differences, {resamples} random patterns, seed {_seed_text(seed)}"
    return TestResult(p, "permutation", better, worse, ties, detail)


def _scipy_special() -> Any:
    """``scipy.special``, loaded on first use (0.5 s; ``scipy.stats`` would take 1.7 s)."""
    from scipy import special  # type: ignore[import-untyped]

    return special


def _seed_text(seed: Seed) -> str:
    return str(seed) if isinstance(seed, int) else "/".join(str(part) for part in seed)
