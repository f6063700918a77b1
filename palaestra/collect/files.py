"""The files of a collection run: where they live, appending safely, and resuming.

Beside ``rollouts.jsonl`` (one finished rollout per line, completion order) live
``rollouts_materialized_inputs.jsonl`` (rows as dispatched), ``rollouts_failures.jsonl``
(rollouts that could not be scored, with kind and reason) and
``rollouts_aggregate_metrics.json``. Every rollout and failure row is flushed at once, so a
killed run loses at most the line being written, which resume repairs. The materialized inputs
(a record of what was dispatched, not a result) are flushed once per event-loop turn: ten
thousand rollouts starting together cost one write instead of ten thousand.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import orjson

from palaestra.errors import InputError
from palaestra.types import JsonDict

Pair = tuple[int, int]
"""(task index, rollout index)."""


@dataclass(frozen=True, slots=True)
class RunFiles:
    output: Path

    @property
    def materialized_inputs(self) -> Path:
        return self._beside("_materialized_inputs.jsonl")

    @property
    def failures(self) -> Path:
        return self._beside("_failures.jsonl")

    @property
    def failure_history(self) -> Path:
        return self._beside("_failures_history.jsonl")

    @property
    def aggregate_metrics(self) -> Path:
        return self._beside("_aggregate_metrics.json")

    def _beside(self, suffix: str) -> Path:
        return self.output.with_name(self.output.stem + suffix)

    def all(self) -> list[Path]:
        return [self.output, self.materialized_inputs, self.failures, self.aggregate_metrics]


class JsonlAppender:
    """Appends one JSON object per line, flushed to the OS before ``append`` returns.

    With ``flush_each=False`` the flush waits for the end of the running event loop's turn,
    so the rows appended in one turn cost one write (outside a loop it is immediate).
    """

    def __init__(self, path: Path, *, flush_each: bool = True) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file: IO[bytes] = path.open("ab")
        self._flush_each = flush_each
        self._flush_pending = False

    def append(self, row: JsonDict) -> None:
        self._file.write(orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE))
        if self._flush_each:
            self._file.flush()
            return
        if self._flush_pending:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._file.flush()
            return
        self._flush_pending = True
        loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_pending = False
        if not self._file.closed:
            self._file.flush()

    def close(self) -> None:
        self._file.close()


def repair_torn_tail(path: Path) -> bool:
    """Cut a last line that a killed run left half-written. True if something was cut."""
    if not path.exists() or path.stat().st_size == 0:
        return False
    with path.open("rb+") as file:
        file.seek(0, os.SEEK_END)
        size = file.tell()
        file.seek(size - 1)
        if file.read(1) == b"\n":
            return False
        position = size
        chunk = 1 << 16
        while position > 0:
            start = max(0, position - chunk)
            file.seek(start)
            block = file.read(position - start)
            cut = block.rfind(b"\n")
            if cut >= 0:
                file.truncate(start + cut + 1)
                return True
            position = start
        file.truncate(0)
        return True


def finished_pairs(path: Path) -> set[Pair]:
    """The (task, rollout) pairs an earlier run already wrote to ``path``."""
    pairs: set[Pair] = set()
    if not path.exists():
        return pairs
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            if raw.strip():
                pairs.add(_pair_of(raw, path, number))
    return pairs


def failed_attempts(path: Path) -> Counter[Pair]:
    """How many failure records each pair has in a failures file."""
    counts: Counter[Pair] = Counter()
    if path.exists():
        with path.open("rb") as lines:
            for number, raw in enumerate(lines, start=1):
                if raw.strip():
                    row = orjson.loads(raw)
                    if row.get("_ng_rollout_index") is not None:
                        counts[_pair_of(raw, path, number)] += 1
    return counts


def archive_failures(files: RunFiles) -> None:
    """On resume, old failures are retried: move their records into the history file."""
    if not files.failures.exists():
        return
    repair_torn_tail(files.failures)
    with files.failure_history.open("ab") as history, files.failures.open("rb") as old:
        for raw in old:
            history.write(raw)
    files.failures.unlink()


def _pair_of(raw: bytes, path: Path, line: int) -> Pair:
    try:
        row = orjson.loads(raw)
        return int(row["_ng_task_index"]), int(row["_ng_rollout_index"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise InputError(
            f"cannot resume: not a rollout row ({error})",
            path=str(path),
            line=line,
            field="_ng_task_index/_ng_rollout_index",
        ) from error
