"""One run's rows indexed once: byte offsets plus the few fields the table filters and sorts on.

A rollouts file can hold 100,000 rows of several kilobytes each; the viewer never loads them
all. One streaming pass (orjson) over ``<out>.jsonl`` and its ``<out>_failures.jsonl`` keeps,
per row, where it is (file, byte offset, length, line) and what the table needs (task and
rollout index, reward, failure kind, seconds, tokens, model and tool calls) in flat arrays.
A row is read back from disk, by its offset, only when the page asks for it. Filtering and
sorting run on numpy views of the arrays: a few milliseconds for 100,000 rows.

Rows are numbered in the order they were indexed: the scored rows, then the failures, then
what a running collection appended to either since (``refresh``).
"""

from __future__ import annotations

import functools
import math
import os
import re
import threading
from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import orjson

from palaestra.errors import InputError, PalaestraError
from palaestra.types import JsonDict
from palaestra.wire.jsonl import BadLine, parse_line
from palaestra.wire.rows import FACTS, FAILURE, RESPONSE, REWARD, ROLLOUT_INDEX, TASK_INDEX

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

ROLLOUTS, FAILURES = 0, 1
SOURCE_NAMES = ("rollouts", "failures")
SCORED = -1
"""The kind code of a row that has a reward (no failure)."""
Sort = Literal["row", "reward", "time", "tokens", "task"]
SORTS: tuple[Sort, ...] = ("row", "reward", "time", "tokens", "task")


def failures_path(rollouts: Path) -> Path:
    """``runs/x.jsonl`` -> ``runs/x_failures.jsonl`` (the collector's sidecar)."""
    return rollouts.with_name(rollouts.name.removesuffix(".jsonl") + "_failures.jsonl")


@dataclass
class Columns:
    """The indexed fields, one entry per row, appended during the pass."""

    source: array[int] = field(default_factory=lambda: array("b"))
    offset: array[int] = field(default_factory=lambda: array("q"))
    length: array[int] = field(default_factory=lambda: array("q"))
    line: array[int] = field(default_factory=lambda: array("q"))
    task: array[int] = field(default_factory=lambda: array("q"))  # -1: none
    rollout: array[int] = field(default_factory=lambda: array("q"))  # -1: none
    reward: array[float] = field(default_factory=lambda: array("d"))  # nan: failed
    kind: array[int] = field(default_factory=lambda: array("h"))  # SCORED or a kinds index
    seconds: array[float] = field(default_factory=lambda: array("d"))  # nan: unknown
    tokens: array[int] = field(default_factory=lambda: array("q"))  # -1: unknown
    truncated: array[int] = field(default_factory=lambda: array("b"))


@dataclass(frozen=True)
class Query:
    """A table request: filters, sort, and the page."""

    reward_min: float | None = None
    reward_max: float | None = None
    kind: str | None = None
    """``"scored"``, ``"failed"``, or a failure kind."""
    task: int | None = None
    text: str | None = None
    sort: Sort = "row"
    descending: bool = False
    offset: int = 0
    limit: int = 100


_F = TypeVar("_F", bound=Callable[..., Any])


def _locked(method: _F) -> _F:
    """Run ``method`` under the index's lock: a numpy view of a column must not be alive
    while ``refresh`` appends to it (an array with exported buffers cannot grow)."""

    @functools.wraps(method)
    def locked(self: RunIndex, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return locked  # type: ignore[return-value]


class RunIndex:
    """A run's rows (its rollouts file and failures sidecar) indexed for the viewer.

    ``refresh`` indexes what a running collection appended since (the page asks every few
    seconds); a file that shrank or was replaced (a resume moves old failures away) is
    indexed again from the start, which renumbers the rows.
    """

    def __init__(self, path: Path) -> None:
        """Index ``path`` (a rollouts file) and, when it exists, its failures sidecar.

        ``InputError`` (one line) when the path is not a readable file.
        """
        self.path = path
        if path.is_dir():
            raise InputError("a directory: name the rollouts file (runs/x.jsonl)", path=str(path))
        if not path.is_file():
            raise InputError("no such rollouts file", path=str(path))
        self._lock = threading.RLock()
        self._start()
        if len(self) == 0 and self.unreadable:
            where, line, why = self.unreadable[0]
            raise InputError(f"not a rollouts file: {why}", path=where, line=line)

    def _start(self) -> None:
        sidecar = failures_path(self.path)
        self.files: list[Path | None] = [self.path, sidecar if sidecar.is_file() else None]
        self.columns = Columns()
        self.kinds: list[str] = []
        self.unreadable: list[tuple[str, int, str]] = []
        """(file, line, why) of lines that are not rows."""
        self.torn: list[str] = []
        """Files whose last line is incomplete (a run writing, or killed mid-write)."""
        self.generation = 0
        """Counts the times the index started over (row numbers changed)."""
        self._search: tuple[str, int, Any] | None = None
        self._ends = [0, 0]  # bytes indexed of each file: the end of its last complete line
        self._lines = [0, 0]
        self._inodes: list[int | None] = [None, None]
        for source, file in enumerate(self.files):
            if file is not None:
                self._scan(source, file)

    def __len__(self) -> int:
        return len(self.columns.offset)

    def refresh(self) -> bool:
        """Index the lines appended since the last pass; True when the rows changed."""
        with self._lock:
            before = len(self)
            sidecar = failures_path(self.path)
            if self.files[1] is None and sidecar.is_file():
                self.files[1] = sidecar
            stats: list[os.stat_result | None] = []
            for source, file in enumerate(self.files):
                try:
                    stat = os.stat(file) if file is not None else None
                except FileNotFoundError:
                    stat = None
                known = self._inodes[source]
                gone = file is not None and stat is None and known is not None
                replaced = stat is not None and known is not None and stat.st_ino != known
                if gone or replaced or (stat is not None and stat.st_size < self._ends[source]):
                    generation = self.generation
                    self._start()
                    self.generation = generation + 1
                    return True
                stats.append(stat)
            self.torn = []
            for source, (file, stat) in enumerate(zip(self.files, stats, strict=True)):
                if file is not None and stat is not None and stat.st_size > self._ends[source]:
                    self._scan(source, file)
            return len(self) != before

    # --- the pass ---------------------------------------------------------------------------

    def _scan(self, source: int, file: Path) -> None:
        """Index ``file`` from where the last pass ended."""
        columns = self.columns
        kinds = {kind: code for code, kind in enumerate(self.kinds)}
        offset = self._ends[source]
        name = str(file)
        with open(file, "rb") as stream:
            self._inodes[source] = os.fstat(stream.fileno()).st_ino
            stream.seek(offset)
            # Its own loop, with jsonl's parse of one line: it keeps byte offsets, and leaves
            # a last line with no newline for the next pass (a writer may be mid-line).
            for number, line in enumerate(stream, start=self._lines[source] + 1):
                start, offset = offset, offset + len(line)
                if not line.endswith(b"\n"):
                    self.torn.append(name)
                    break
                self._ends[source], self._lines[source] = offset, number
                if not line.strip():
                    continue
                row = parse_line(line, name, number)
                if isinstance(row, BadLine):
                    self.unreadable.append((name, number, row.reason))
                    continue
                columns.source.append(source)
                columns.offset.append(start)
                columns.length.append(len(line))
                columns.line.append(number)
                columns.task.append(_int(row.get(TASK_INDEX)))
                columns.rollout.append(_int(row.get(ROLLOUT_INDEX)))
                failure = row.get(FAILURE)
                if isinstance(failure, dict):
                    kind = str(failure.get("kind") or "unknown")
                    code = kinds.get(kind)
                    if code is None:
                        code = kinds[kind] = len(self.kinds)
                        self.kinds.append(kind)
                    columns.kind.append(code)
                    columns.reward.append(math.nan)
                else:
                    columns.kind.append(SCORED)
                    columns.reward.append(_float(row.get(REWARD)))
                facts = row.get(FACTS)
                facts = facts if isinstance(facts, dict) else {}
                timings = facts.get("timings")
                total = timings.get("total") if isinstance(timings, dict) else None
                columns.seconds.append(_float(total))
                columns.truncated.append(1 if facts.get("truncated") else 0)
                response = row.get(RESPONSE)
                usage = response.get("usage") if isinstance(response, dict) else None
                columns.tokens.append(
                    _int(usage.get("total_tokens")) if isinstance(usage, dict) else -1
                )

    # --- reading rows back ------------------------------------------------------------------

    def read(self, n: int) -> JsonDict:
        """Row ``n`` parsed from disk. ``IndexError`` when there is none; ``ChangedFile`` when
        the bytes at its offset are no longer that row."""
        if not 0 <= n < len(self):
            raise IndexError(n)
        c = self.columns
        file = self.files[c.source[n]]
        assert file is not None
        with open(file, "rb") as stream:
            stream.seek(c.offset[n])
            data = stream.read(c.length[n])
        try:
            row = orjson.loads(data)
        except orjson.JSONDecodeError:
            row = None
        if not isinstance(row, dict):
            raise ChangedFile(f"{file} changed since it was indexed: restart the viewer")
        return row

    def where(self, n: int) -> JsonDict:
        """Which file and line row ``n`` is."""
        c = self.columns
        return {
            "source": SOURCE_NAMES[c.source[n]],
            "file": str(self.files[c.source[n]]),
            "line": c.line[n],
        }

    def entry(self, n: int) -> JsonDict:
        """Row ``n``'s line of the table."""
        c = self.columns
        kind = c.kind[n]
        return {
            "n": n,
            "task": _none_if(c.task[n], -1),
            "rollout": _none_if(c.rollout[n], -1),
            "reward": None if kind != SCORED else _finite(c.reward[n]),
            "kind": None if kind == SCORED else self.kinds[kind],
            "seconds": _finite(c.seconds[n]),
            "tokens": _none_if(c.tokens[n], -1),
            "truncated": bool(c.truncated[n]),
        }

    # --- the table --------------------------------------------------------------------------

    def arrays(self) -> dict[str, npt.NDArray[Any]]:
        """numpy views (no copy) of the columns."""
        import numpy as np

        c = self.columns
        dtypes = {"b": np.int8, "q": np.int64, "d": np.float64, "h": np.int16}
        return {
            name: np.frombuffer(values, dtype=dtypes[values.typecode])
            if len(values)
            else np.zeros(0, dtype=dtypes[values.typecode])
            for name, values in vars(c).items()
        }

    @_locked
    def snapshot(self, *names: str) -> list[npt.NDArray[Any]]:
        """Copies of the named columns, as they are now."""
        views = self.arrays()
        return [views[name].copy() for name in names]

    @_locked
    def select(self, query: Query) -> tuple[int, list[int]]:
        """The rows ``query`` matches, sorted: (how many match, the row numbers of its page)."""
        import numpy as np

        a = self.arrays()
        keep = np.ones(len(self), dtype=bool)
        scored = a["kind"] == SCORED
        if query.reward_min is not None:
            keep &= scored & (a["reward"] >= query.reward_min)
        if query.reward_max is not None:
            keep &= scored & (a["reward"] <= query.reward_max)
        if query.kind == "scored":
            keep &= scored
        elif query.kind == "failed":
            keep &= ~scored
        elif query.kind:
            code = self.kinds.index(query.kind) if query.kind in self.kinds else -2
            keep &= a["kind"] == code
        if query.task is not None:
            keep &= a["task"] == query.task
        if query.text:
            keep &= self.search(query.text)
        rows = np.flatnonzero(keep)
        if query.sort != "row":
            column = {"reward": "reward", "time": "seconds", "tokens": "tokens", "task": "task"}
            values = a[column[query.sort]][rows].astype(np.float64)
            missing = np.isnan(values) | (values < 0 if query.sort != "reward" else False)
            # rows without the value go last in either direction; ties keep file order
            keys = np.where(missing, np.inf, -values if query.descending else values)
            rows = rows[np.argsort(keys, kind="stable")]
        elif query.descending:
            rows = rows[::-1]
        page = rows[query.offset : query.offset + query.limit]
        return len(rows), [int(n) for n in page]

    @_locked
    def search(self, text: str) -> npt.NDArray[np.bool_]:
        """Which rows contain ``text`` (ASCII case ignored) anywhere in their JSON line.

        The text is matched as JSON writes it (a quote is ``\\"``), by one regular-expression
        scan of each file in C: no row is parsed. The last answer is kept for the next page.
        """
        import numpy as np

        if self._search is not None and self._search[:2] == (text, len(self)):
            cached: npt.NDArray[np.bool_] = self._search[2]
            return cached
        pattern = re.compile(re.escape(orjson.dumps(text)[1:-1]), re.IGNORECASE)
        found = np.zeros(len(self), dtype=bool)
        a = self.arrays()
        for source, file in enumerate(self.files):
            if file is None:
                continue
            rows = np.flatnonzero(a["source"] == source)
            if not len(rows):
                continue
            starts = a["offset"][rows].tolist()
            ends = (a["offset"][rows] + a["length"][rows]).tolist()
            with open(file, "rb") as stream:
                data = stream.read(ends[-1])
            position = 0
            while (match := pattern.search(data, position)) is not None:
                i = bisect_right(starts, match.start()) - 1
                if i >= 0 and match.start() < ends[i]:
                    found[rows[i]] = True
                    position = ends[i]
                else:
                    position = match.end()
        self._search = (text, len(self), found)
        return found

    # --- the summary ------------------------------------------------------------------------

    @_locked
    def summary(self) -> JsonDict:
        """Counts and means of the whole run."""
        import numpy as np

        a = self.arrays()
        scored = a["kind"] == SCORED
        rewards = a["reward"][scored]
        rewards = rewards[np.isfinite(rewards)]
        by_kind = Counter(self.kinds[code] for code in a["kind"][~scored].tolist())
        tokens = a["tokens"][a["tokens"] >= 0]
        seconds = a["seconds"][np.isfinite(a["seconds"])]
        tasks = a["task"][a["task"] >= 0]
        return {
            "rows": len(self),
            "scored": int(scored.sum()),
            "failed": int((~scored).sum()),
            "failed_by_kind": dict(by_kind.most_common()),
            "mean_reward": float(rewards.mean()) if len(rewards) else None,
            "tasks": len(np.unique(tasks)),
            "truncated": int(a["truncated"].sum()),
            "mean_tokens": float(tokens.mean()) if len(tokens) else None,
            "mean_seconds": float(seconds.mean()) if len(seconds) else None,
            "unreadable": [
                {"file": f, "line": line, "why": why} for f, line, why in self.unreadable[:20]
            ],
            "unreadable_count": len(self.unreadable),
            "torn": list(self.torn),
        }

    @_locked
    def keys(self) -> dict[tuple[int, int], int]:
        """(task, rollout) -> row number, for pairing two runs (a later row wins)."""
        c = self.columns
        return {(t, r): n for n, (t, r) in enumerate(zip(c.task, c.rollout, strict=True))}


class ChangedFile(PalaestraError):
    """A row's bytes are not a row any more: the file was rewritten after it was indexed."""


def _int(value: object) -> int:
    return value if type(value) is int else -1


def _float(value: object) -> float:
    if type(value) is float:
        return value
    if type(value) is int:
        return float(value)
    return math.nan


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _none_if(value: int, missing: int) -> int | None:
    return None if value == missing else value
