"""Running model-written SQL safely, and comparing result sets.

Each session gets its own in-memory copy of the database. The connection is read-only twice
over: ``PRAGMA query_only`` and an authorizer that allows nothing but reading (no writes, no
schema changes, no ATTACH, no PRAGMA). Queries run one statement at a time, under a wall-clock
deadline enforced by a progress handler, with size limits on SQL text and values, and at most
``max_rows`` rows are ever fetched.
"""

from __future__ import annotations

import math
import re
import sqlite3
import threading
import time
from collections import Counter
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

_ALLOWED = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)
_DENIED_FUNCTIONS = frozenset({"load_extension"})
_ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)
_CENT = Decimal("0.01")


class QueryError(Exception):
    """The query cannot run: a syntax error, a denied action, a limit, the deadline."""


@dataclass(frozen=True, slots=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool
    """More rows existed than were fetched."""


def _authorize(action: int, arg1: str | None, arg2: str | None, *_: object) -> int:
    if action not in _ALLOWED:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class ReadOnlyDatabase:
    """A private, read-only, in-memory copy of a database image. Thread-safe; close it."""

    def __init__(self, image: bytes, *, timeout: float = 2.0) -> None:
        self.timeout = timeout
        self._deadline = math.inf
        self._lock = threading.Lock()
        self._connection = sqlite3.connect(":memory:", check_same_thread=False)
        self._connection.isolation_level = None
        self._connection.deserialize(image)
        self._connection.execute("PRAGMA query_only = ON")
        self._connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1_000_000)
        self._connection.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, 20_000)
        self._connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        self._connection.setlimit(sqlite3.SQLITE_LIMIT_EXPR_DEPTH, 200)
        self._connection.set_authorizer(_authorize)
        self._connection.set_progress_handler(self._past_deadline, 1000)

    def _past_deadline(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    def query(self, sql: str, *, max_rows: int) -> QueryResult:
        """Run one statement; raise ``QueryError`` with a message meant for the model."""
        if not isinstance(sql, str) or not sql.strip():
            raise QueryError("the query is empty")
        with self._lock:
            if self._connection is None:
                raise QueryError("the database is closed")
            self._deadline = time.monotonic() + self.timeout
            cursor = self._connection.cursor()
            try:
                cursor.execute(sql)
                rows = cursor.fetchmany(max_rows + 1)
                columns = [d[0] for d in cursor.description or ()]
            except sqlite3.Error as error:
                raise QueryError(_explain(error, self.timeout)) from None
            except (ValueError, OverflowError, MemoryError) as error:
                raise QueryError(f"the query cannot run: {error}") from None
            finally:
                self._deadline = math.inf
                cursor.close()
        return QueryResult(columns, rows[:max_rows], len(rows) > max_rows)

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None  # type: ignore[assignment]


def _explain(error: sqlite3.Error, timeout: float) -> str:
    text = str(error)
    if "interrupted" in text:
        return f"the query ran longer than {timeout:g}s and was stopped"
    if "authoriz" in text or "readonly" in text or "read-only" in text:
        return "only read-only SELECT queries are allowed"
    return f"SQLite error: {text}"


def is_ordered(sql: str) -> bool:
    """Whether row order is part of the answer: the gold query has an ORDER BY."""
    return bool(_ORDER_BY.search(sql))


def same_result(expected: QueryResult, got: QueryResult, *, ordered: bool) -> bool:
    """Equal result sets: the same rows (as a multiset, or a sequence when ``ordered``), with
    the columns in any order; numbers by value to the cent; column names ignored."""
    if expected.truncated or got.truncated or len(expected.rows) != len(got.rows):
        return False
    width = len(expected.columns)
    if len(got.columns) != width:
        return False
    want = [tuple(_canonical(v) for v in row) for row in expected.rows]
    have = [tuple(_canonical(v) for v in row) for row in got.rows]
    want_columns = [Counter(row[i] for row in want) for i in range(width)]
    have_columns = [Counter(row[i] for row in have) for i in range(width)]
    target = want if ordered else Counter(want)
    for permutation in _column_matchings(want_columns, have_columns):
        moved = [tuple(row[j] for j in permutation) for row in have]
        if (moved if ordered else Counter(moved)) == target:
            return True
    return False


def _column_matchings(
    want: list[Counter[Any]], have: list[Counter[Any]], limit: int = 200
) -> list[list[int]]:
    """Ways to line the model's columns up with the expected ones, by their values."""
    found: list[list[int]] = []

    def extend(chosen: list[int]) -> None:
        if len(found) >= limit:
            return
        if len(chosen) == len(want):
            found.append(list(chosen))
            return
        for j, column in enumerate(have):
            if j not in chosen and column == want[len(chosen)]:
                extend([*chosen, j])

    extend([])
    return found


def _canonical(value: Any) -> Any:
    """Numbers to the cent (half away from zero, as SQLite's ROUND), other values as they are."""
    if isinstance(value, float) and math.isfinite(value):
        try:
            return Decimal(repr(value)).quantize(_CENT, rounding=ROUND_HALF_UP)
        except InvalidOperation:  # too many digits to hold to the cent
            return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value)
    return value
