"""Reading JSONL files: numbered rows, and a typed problem for each line that is not one.

Every reader of a JSONL file (tasks, rollouts, failures, materialized inputs, the viewer's
index, packaged datasets) goes through here, so they agree on what a line is:

- a blank line (whitespace only) is no row: nothing is yielded, but it counts for line numbers;
- a line that is not valid JSON is a ``BadLine`` ``NOT_JSON``, or ``TORN`` when it is the last
  line and has no newline (a run killed mid-write leaves one);
- a JSON value that is not an object (``[1, 2]``, ``3``) is a ``BadLine`` ``NOT_OBJECT``.

What becomes of a ``BadLine`` is the caller's choice, never silence: a task file makes it that
task's failure, resume refuses the file, re-verification skips a torn last line with a
warning, the viewer lists it. ``BadLine.error`` is the one-line ``InputError`` naming the file
and line (and a field, when given). ``read_objects`` is the strict reader: the first bad line
raises it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, cast

import orjson

from palaestra.errors import InputError
from palaestra.types import JsonDict

Problem = Literal["not_json", "torn", "not_object"]
NOT_JSON: Final = "not_json"
TORN: Final = "torn"
"""Not valid JSON and no newline: the last line, cut short."""
NOT_OBJECT: Final = "not_object"


@dataclass(frozen=True, slots=True)
class BadLine:
    """A non-blank line that is not a JSON object."""

    problem: Problem
    detail: str
    """orjson's message for a line that is not JSON; the value's type (``list``) otherwise."""
    path: str | None
    line: int

    @property
    def reason(self) -> str:
        """What is wrong, in words: the message's text after the file and line."""
        if self.problem == NOT_OBJECT:
            return f"not a JSON object (got {self.detail})"
        if self.problem == TORN:
            return f"the last line is incomplete, cut short by a killed write? ({self.detail})"
        return f"not valid JSON ({self.detail})"

    def error(self, reason: str | None = None, *, field: str | None = None) -> InputError:
        """The one-line error naming the file and line; ``reason`` replaces ``self.reason``."""
        return InputError(
            self.reason if reason is None else reason, path=self.path, line=self.line, field=field
        )


def parse_line(raw: bytes, path: str | None, line: int) -> JsonDict | BadLine:
    """One non-blank line, as read from its file (with its newline): the row, or why not."""
    try:
        row = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        problem: Problem = NOT_JSON if raw.endswith(b"\n") else TORN
        return BadLine(problem, str(error), path, line)
    if type(row) is not dict:  # orjson makes plain dicts; the exact check is the fast one
        return BadLine(NOT_OBJECT, type(row).__name__, path, line)
    return row


def read_rows(
    source: Path | Iterable[bytes], *, path: str | None = None
) -> Iterator[tuple[int, JsonDict | BadLine]]:
    """Yield (line number from 1, row or ``BadLine``) for each non-blank line of ``source``.

    ``source`` is a file's path (opened when the first row is asked for, closed after the
    last) or an open binary stream (a gzip file, say; any iterable of lines), read from where
    it is. ``path`` names the file in messages; by default the path, or the stream's ``name``.
    """
    return _rows(source, _name(source, path), strict=False)


def read_objects(
    source: Path | Iterable[bytes], *, path: str | None = None
) -> Iterator[tuple[int, JsonDict]]:
    """``read_rows`` for a file that must hold only rows: a bad line raises its ``InputError``."""
    return cast(Iterator[tuple[int, JsonDict]], _rows(source, _name(source, path), strict=True))


def _name(source: Path | Iterable[bytes], path: str | None) -> str | None:
    if path is not None:
        return path
    name = str(source) if isinstance(source, Path) else getattr(source, "name", None)
    return name if isinstance(name, str) else None


def _rows(
    source: Path | Iterable[bytes], path: str | None, *, strict: bool
) -> Iterator[tuple[int, JsonDict | BadLine]]:
    # One generator with parse_line's body inlined, not layers of them: this loop is under
    # every task read and resume. A call of parse_line per line, and each generator layered
    # on top (``yield from``, a strict filter), cost measurably more over a large file
    # (benchmarks/results/micro.md).
    opened = source.open("rb") if isinstance(source, Path) else contextlib.nullcontext(source)
    loads, decode_error = orjson.loads, orjson.JSONDecodeError
    with opened as stream:
        for number, raw in enumerate(stream, start=1):
            if not raw or raw.isspace():  # as `not raw.strip()`, without copying the line
                continue
            try:
                row = loads(raw)
            except decode_error as error:
                problem: Problem = NOT_JSON if raw.endswith(b"\n") else TORN
                bad = BadLine(problem, str(error), path, number)
            else:
                if type(row) is dict:
                    yield number, row
                    continue
                bad = BadLine(NOT_OBJECT, type(row).__name__, path, number)
            if strict:
                raise bad.error()
            yield number, bad
