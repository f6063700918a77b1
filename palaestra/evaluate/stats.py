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
- ``sign_test``: the exact two-sided sign test of per-task differences (ties dropped); with
  one pass/fail outcome per task it is McNemar's exact test.
- ``permutation_test``: the paired permutation test of the mean difference (signs flipped at
  random; exact when 2^n is at most the resamples).

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
    method: Literal["bootstrap", "wilson", "student-t"]
    """``bootstrap`` (percentile, over tasks), ``wilson`` (score interval of a proportion of
    tasks) or ``student-t`` (of a mean of per-task values)."""
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
    """Wilson's interval when every value is 0 or 1, else Student's t (None below two)."""
    import numpy as np

    data = np.asarray(values, dtype=np.float64)
    if data.size < 2:
        return None
    if np.all((data == 0.0) | (data == 1.0)):
        return wilson(int(data.sum()), int(data.size), confidence=confidence)
    return student_t(data, confidence=confidence)


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

    stats = _scipy_stats()

    data = np.asarray(values, dtype=np.float64)
    n = data.size
    if n < 2:
        return None
    mean = float(data.mean())
    half = (
        float(stats.t.ppf(1.0 - (1.0 - confidence) / 2, n - 1))
        * float(data.std(ddof=1))
        / math.sqrt(n)
    )
    detail = f"mean of {n} per-task values +- t({n - 1}) * s / sqrt(n)"
    return Interval(mean - half, mean + half, "student-t", confidence, detail)


def sign_test(
    differences: Sequence[float] | npt.NDArray[np.float64], *, mcnemar: bool = False
) -> TestResult:
    """The exact two-sided sign test of per-task differences B - A (zeros are ties).

    With ``mcnemar`` (every difference is -1, 0 or +1: one pass/fail outcome per task) it is
    McNemar's exact test, and is named so.
    """
    import numpy as np

    stats = _scipy_stats()

    data = np.asarray(differences, dtype=np.float64)
    better, worse = int((data > 0).sum()), int((data < 0).sum())
    ties = int(data.size) - better - worse
    discordant = better + worse
    p = 1.0 if not discordant else float(stats.binomtest(better, discordant, 0.5).pvalue)
    method: Literal["mcnemar-exact", "sign-test-exact"] = (
        "mcnemar-exact" if mcnemar else "sign-test-exact"
    )
    detail = f"binomial test of {better} vs {worse} discordant tasks, p = 0.5"
    return TestResult(min(p, 1.0), method, better, worse, ties, detail)


def permutation_test(
    differences: Sequence[float] | npt.NDArray[np.float64],
    *,
    resamples: int = PERMUTATIONS,
    seed: Seed = 0,
) -> TestResult:
    """The paired permutation test of the mean of per-task differences B - A (two-sided).

    Under the null hypothesis each difference is as likely negated, so its sign is flipped at
    random; every one of the 2^n sign patterns when that is at most ``resamples``.
    """
    import numpy as np

    stats = _scipy_stats()

    data = np.asarray(differences, dtype=np.float64)
    better, worse = int((data > 0).sum()), int((data < 0).sum())
    ties = int(data.size) - better - worse
    if better + worse == 0:
        return TestResult(1.0, "permutation", better, worse, ties, "every difference is 0")
    result = stats.permutation_test(
        (data,),
        _mean_of_last_axis,
        permutation_type="samples",
        vectorized=True,
        n_resamples=resamples,
        alternative="two-sided",
        random_state=np.random.default_rng(seed),
    )
    exact = 2 ** int(data.size) <= resamples
    detail = (
        f"signs of {data.size} differences, all {2 ** int(data.size)} patterns"
        if exact
        else f"signs of {data.size} differences, {resamples} random patterns, seed "
        f"{_seed_text(seed)}"
    )
    method: Literal["permutation", "permutation-exact"] = (
        "permutation-exact" if exact else "permutation"
    )
    return TestResult(min(float(result.pvalue), 1.0), method, better, worse, ties, detail)


def _mean_of_last_axis(data: npt.NDArray[np.float64], axis: int = -1) -> npt.NDArray[np.float64]:
    result: npt.NDArray[np.float64] = data.mean(axis=axis)
    return result


def _scipy_stats() -> Any:
    """``scipy.stats``, loaded on first use (it has no type stubs)."""
    from scipy import stats  # type: ignore[import-untyped]

    return stats


def _seed_text(seed: Seed) -> str:
    return str(seed) if isinstance(seed, int) else "/".join(str(part) for part in seed)
