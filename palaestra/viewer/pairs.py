"""Two runs paired by (task, rollout): which rollout of B answers which of A, and how they differ.

Built once per version of the two indexes as flat numpy arrays (one entry per pair: the row
number in each run or -1, both rewards, whether both failed the same way), so a page of the
pair table filters and sorts 100,000 pairs in milliseconds and builds entries for its own
pairs only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from palaestra.types import JsonDict
from palaestra.viewer.index import RunIndex

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Only = Literal["", "different", "both"]


class Pairing:
    """The pairs of runs ``a`` and ``b`` (a snapshot: build a new one when either grows)."""

    def __init__(self, a: RunIndex, b: RunIndex) -> None:
        import numpy as np

        self.a, self.b = a, b
        left, right = a.keys(), b.keys()
        keys = sorted(left.keys() | right.keys())
        self.task = np.fromiter((k[0] for k in keys), dtype=np.int64, count=len(keys))
        self.rollout = np.fromiter((k[1] for k in keys), dtype=np.int64, count=len(keys))
        self.n_a = np.fromiter((left.get(k, -1) for k in keys), dtype=np.int64, count=len(keys))
        self.n_b = np.fromiter((right.get(k, -1) for k in keys), dtype=np.int64, count=len(keys))
        reward_a, kind_a = _side(a, self.n_a)
        reward_b, kind_b = _side(b, self.n_b)
        self.delta = reward_b - reward_a  # nan unless both scored
        both = (self.n_a >= 0) & (self.n_b >= 0)
        self.both = both
        self.same_failure = both & (kind_a == kind_b) & np.isnan(reward_a) & np.isnan(reward_b)

    def __len__(self) -> int:
        return len(self.task)

    def stats(self) -> JsonDict:
        """How B compares with A over the pairs both scored."""
        import numpy as np

        scored = ~np.isnan(self.delta)
        deltas = self.delta[scored]
        return {
            "both": int(self.both.sum()),
            "only_a": int(((self.n_a >= 0) & (self.n_b < 0)).sum()),
            "only_b": int(((self.n_a < 0) & (self.n_b >= 0)).sum()),
            "a_better": int((deltas < 0).sum()),
            "b_better": int((deltas > 0).sum()),
            "ties": int((deltas == 0).sum()),
            "mean_delta": float(deltas.mean()) if len(deltas) else None,
        }

    def select(
        self,
        *,
        only: str = "",
        sort: str = "task",
        task: int | None = None,
        rollout: int | None = None,
        offset: int = 0,
        limit: int = 100,
    ) -> tuple[int, list[JsonDict]]:
        """(how many pairs match, the page's pairs with each side's table entry)."""
        import numpy as np

        keep = np.ones(len(self), dtype=bool)
        if task is not None:
            keep &= self.task == task
        if rollout is not None:
            keep &= self.rollout == rollout
        if only == "different":
            keep &= ~((self.delta == 0) | self.same_failure)
        elif only == "both":
            keep &= self.both
        chosen: npt.NDArray[np.int64] = np.flatnonzero(keep)
        if sort == "delta":  # the largest difference first; pairs without one last
            magnitude = np.abs(self.delta[chosen])
            keys = np.where(np.isnan(magnitude), np.inf, -magnitude)
            chosen = chosen[np.argsort(keys, kind="stable")]
        page = [self._line(int(i)) for i in chosen[offset : offset + limit]]
        return len(chosen), page

    def _line(self, i: int) -> JsonDict:
        n_a, n_b = int(self.n_a[i]), int(self.n_b[i])
        delta = float(self.delta[i])
        return {
            "task": int(self.task[i]),
            "rollout": int(self.rollout[i]),
            "a": self.a.entry(n_a) if n_a >= 0 else None,
            "b": self.b.entry(n_b) if n_b >= 0 else None,
            "delta": None if delta != delta else delta,
        }


def _side(index: RunIndex, rows: npt.NDArray[np.int64]) -> tuple[Any, Any]:
    """Each pair's reward (nan: failed or absent) and failure kind name ("" otherwise)."""
    import numpy as np

    reward_column, kind_column = index.snapshot("reward", "kind")
    present = rows >= 0
    safe = np.where(present, rows, 0)
    reward = np.where(present, reward_column[safe] if len(reward_column) else np.nan, np.nan)
    names = np.array([*index.kinds, ""], dtype=object)  # SCORED (-1) is ""
    kind = np.where(present, names[kind_column[safe]] if len(kind_column) else "", "")
    return reward, kind
