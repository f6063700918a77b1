"""The files of a collection run: where they live, appending safely, and resuming.

Beside ``rollouts.jsonl`` (one finished rollout per line, completion order) live
``rollouts_materialized_inputs.jsonl`` (rows as dispatched, one per (task, rollout)),
``rollouts_failures.jsonl`` (rollouts that could not be scored, with kind and reason),
``rollouts_aggregate_metrics.json``, ``rollouts_run.json`` (the run's identity, see
``identity``), ``rollouts.jsonl.lock`` (held by the one collector writing them) and, when
asked for, ``rollouts_report.md`` and ``rollouts_report.html`` (``palaestra report``).

Every rollout and failure row is written with one ``write`` of the whole line, so a killed
run loses at most the line being written, which resume repairs; a write the disk cannot take
whole (disk full, file size limit) is cut back before the error is raised, so it leaves no
torn line at all. The materialized inputs (a record of what was dispatched, not a result) are
written once per event-loop turn: ten thousand rollouts starting together cost one write
instead of ten thousand.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from palaestra.errors import ConfigError, InputError
from palaestra.types import JsonDict
from palaestra.wire.jsonl import BadLine, parse_line, read_rows
from palaestra.wire.rows import ROLLOUT_INDEX, TASK_INDEX

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

    @property
    def identity(self) -> Path:
        return self._beside("_run.json")

    @property
    def report_markdown(self) -> Path:
        """``palaestra report`` (or ``collect --report``): the run's report as markdown."""
        return self._beside("_report.md")

    @property
    def report_html(self) -> Path:
        """The same report as one self-contained HTML page."""
        return self._beside("_report.html")

    @property
    def lock(self) -> Path:
        return self.output.with_name(self.output.name + ".lock")

    def _beside(self, suffix: str) -> Path:
        return self.output.with_name(self.output.stem + suffix)

    def all(self) -> list[Path]:
        return [
            self.output,
            self.materialized_inputs,
            self.failures,
            self.aggregate_metrics,
            self.report_markdown,  # so --overwrite leaves no report of the run it replaces
            self.report_html,
        ]


class OutputError(ConfigError):
    """A run's file cannot be written (read-only, no such directory, disk full): one line."""

    def __init__(self, path: Path, error: OSError) -> None:
        self.path = path
        self.errno = error.errno
        reason = error.strerror or str(error)
        if error.errno == errno.EEXIST:  # mkdir of a parent that is a file
            reason = "a parent is not a directory"
        culprit = str(error.filename) if error.filename else str(path)
        where = "" if culprit == str(path) else f" ({culprit})"
        super().__init__(f"cannot write {path}: {reason}{where}")


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn an ``OSError`` while writing ``path`` (or beside it) into an ``OutputError``."""
    try:
        yield
    except OutputError:
        raise
    except OSError as error:
        raise OutputError(path, error) from None


def encode(row: Mapping[str, Any]) -> bytes:
    """One JSONL line; raises (``TypeError``) before anything is written if ``row`` is not JSON."""
    return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)


class JsonlAppender:
    """Appends one JSON object per line, each line with one ``os.write`` of the whole of it.

    A write that fails or is short (disk full) is truncated back to where the line began and
    raised as ``OutputError``: the file never keeps half a line. That relies on this being the
    file's only writer, which the run's lock guarantees. With ``flush_each=False`` the lines
    wait for the end of the running event loop's turn and go out in one write; a failure of
    that deferred write is raised by the next ``write`` or by ``close``.
    """

    def __init__(self, path: Path, *, flush_each: bool = True) -> None:
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
            self._fd: int | None = os.open(path, flags, 0o644)
            self._size = os.fstat(self._fd).st_size
        self.path = path
        self._flush_each = flush_each
        self._pending: list[bytes] = []
        self._error: OutputError | None = None

    def append(self, row: Mapping[str, Any]) -> None:
        self.write(encode(row))

    def write(self, line: bytes) -> None:
        if self._error is not None:
            raise self._error
        if self._flush_each:
            self._write(line)
            return
        self._pending.append(line)
        if len(self._pending) > 1:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._flush()
            return
        loop.call_soon(self._deferred_flush)

    def _deferred_flush(self) -> None:
        try:
            self._flush()
        except OutputError as error:
            self._error = error

    def _flush(self) -> None:
        if self._pending and self._fd is not None:
            data = b"".join(self._pending)
            self._pending.clear()
            self._write(data)

    def _write(self, data: bytes) -> None:
        assert self._fd is not None
        try:
            done = os.write(self._fd, data)
            if done < len(data):  # short (disk nearly full): write the rest, or fail whole
                view = memoryview(data)
                while done < len(data):
                    written = os.write(self._fd, view[done:])
                    if written == 0:
                        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                    done += written
        except OSError as error:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)  # no torn line for the next resume
            raise OutputError(self.path, error) from None
        self._size += done

    def close(self) -> None:
        """Write what is pending and close; raises ``OutputError`` if a write failed."""
        if self._fd is None:
            return
        try:
            if self._error is None:
                self._flush()
        finally:
            os.close(self._fd)
            self._fd = None
        if self._error is not None:
            raise self._error


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


def finished_pairs(path: Path, each: Callable[[JsonDict], None] | None = None) -> set[Pair]:
    """The (task, rollout) pairs an earlier run already wrote to ``path``; ``each`` is given
    every row too (the run's aggregate: one parse of the file instead of two on resume)."""
    pairs: set[Pair] = set()
    if not path.exists():
        return pairs
    for number, row in read_rows(path):
        pairs.add(_pair_of(row, path, number))
        if each is not None and not isinstance(row, BadLine):  # (_pair_of raised for one)
            each(row)
    return pairs


def keep_dispatched(path: Path, done: set[Pair]) -> int:
    """Keep one materialized-input row per finished pair; drop the rest. Returns rows dropped.

    A kill leaves rows for pairs that were in flight, and failed pairs are dispatched again
    on resume: without this, each resume would add a second row for them. One streaming pass
    into a temporary file that replaces the old one (only when something is dropped).
    """
    if not path.exists():
        return 0
    seen: set[Pair] = set()
    dropped = 0
    temporary = path.with_name(path.name + ".tmp")
    name = str(path)
    try:
        with path.open("rb") as old, temporary.open("wb") as new:
            for number, raw in enumerate(old, start=1):  # its own loop: it copies the raw line
                if raw.isspace():  # blank, as jsonl reads it
                    continue
                pair = _pair_of(parse_line(raw, name, number), path, number)
                if pair in done and pair not in seen:
                    seen.add(pair)
                    new.write(raw)
                else:
                    dropped += 1
    except BaseException:  # a bad line: leave the file as it was, and no temporary beside it
        temporary.unlink(missing_ok=True)
        raise
    if dropped:
        os.replace(temporary, path)
    else:
        temporary.unlink()
    return dropped


def failed_attempts(path: Path) -> Counter[Pair]:
    """How many failure records each pair has in a failures file.

    A record without a rollout index (an input line that could not be read) is no attempt.
    """
    counts: Counter[Pair] = Counter()
    if path.exists():
        for number, row in read_rows(path):
            if isinstance(row, BadLine) or row.get(ROLLOUT_INDEX) is not None:
                counts[_pair_of(row, path, number)] += 1
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


def _pair_of(row: JsonDict | BadLine, path: Path, line: int) -> Pair:
    if isinstance(row, BadLine):
        reason = row.reason
    else:
        try:
            return int(row[TASK_INDEX]), int(row[ROLLOUT_INDEX])
        except KeyError as error:
            reason = f"missing {error}"
        except (TypeError, ValueError) as error:  # null, a list, "x": not an index
            reason = str(error)
    raise InputError(
        f"cannot resume: not a rollout row ({reason})",
        path=str(path),
        line=line,
        field=f"{TASK_INDEX}/{ROLLOUT_INDEX}",
    )
