"""Per-task estimators: pass@k, pass^k and majority@k from a task's n rollouts.

With n rollouts of a task of which c passed, for k <= n:

- ``pass_at_k(n, c, k) = 1 - C(n-c, k) / C(n, k)``: the chance that at least one of k
  rollouts drawn without replacement from the n passes, an unbiased estimate of the chance
  that at least one of k fresh rollouts would (Chen et al., 2021).
- ``pass_hat_k(n, c, k) = C(c, k) / C(n, k)``: the chance that all k pass (pass^k, "every
  time"; Yao et al., 2024), unbiased in the same sense.

Both are undefined for k > n (the task has too few rollouts) and raise ``ValueError``. A run's
figure is the mean of these over its tasks (``palaestra.evaluate.run_figures``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

PASS_THRESHOLD = 1.0
"""A rollout passes when its reward reaches this (pass@k, pass^k, majority@k)."""


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of a task with ``c`` of ``n`` rollouts passing."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k (all k pass) of a task with ``c`` of ``n`` rollouts passing."""
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def majority_vote(votes: Sequence[tuple[str, bool]]) -> bool:
    """Whether the most frequent answer among ``(answer, passed)`` votes passed.

    The aggregate file's majority@k: answers are compared as exact text; a tie between
    answers goes to the one seen first. No votes is a loss.
    """
    if not votes:
        return False
    winner = Counter(answer for answer, _ in votes).most_common(1)[0][0]
    return any(passed for answer, passed in votes if answer == winner)


def mean_pass_at_k(rewards_by_task: dict[int, list[float]]) -> dict[str, float]:
    """Mean unbiased pass@k over tasks, for k = 1 and k = the smallest repeat count."""
    if not rewards_by_task:
        return {}
    smallest = min(len(r) for r in rewards_by_task.values())
    metrics: dict[str, float] = {}
    for k in sorted({1, smallest}):
        per_task = [
            pass_at_k(len(r), sum(x >= PASS_THRESHOLD for x in r), k)
            for r in rewards_by_task.values()
        ]
        metrics[f"pass@{k}"] = sum(per_task) / len(per_task)
    return metrics


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
