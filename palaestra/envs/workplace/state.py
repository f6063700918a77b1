"""A rollout's office: its private database, the date, and the log of state-changing calls.

``@writes`` marks a tool as state-changing: each call that succeeds is appended to the log
(name and validated arguments), which is what verification replays on a fresh copy.
"""

from __future__ import annotations

import copy
import datetime
import functools
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from palaestra import JsonDict, Session, ToolError
from palaestra.envs.workplace.store import USER_EMAIL, USER_NAME, office, open_copy

F = TypeVar("F", bound=Callable[..., Any])
WRITES_MARK = "__workplace_writes__"
MAX_ID = 2**53
MAX_TEXT = 5_000


@dataclass(slots=True)
class OfficeState:
    db: sqlite3.Connection
    today: datetime.date
    log: list[JsonDict] = field(default_factory=list)

    @classmethod
    def fresh(cls, seed: int) -> OfficeState:
        return cls(open_copy(seed), office(seed).today)

    @property
    def now(self) -> str:
        """The timestamp of everything done in this rollout (a fixed clock: replays agree)."""
        return f"{self.today.isoformat()}T09:00"

    def close(self) -> None:
        self.db.close()


def writes(function: F) -> F:
    """Mark a tool as state-changing and log its successful calls."""

    @functools.wraps(function)
    def logged(self: Any, session: Session, **arguments: Any) -> Any:
        result = function(self, session, **arguments)
        entry = {"name": function.__name__, "arguments": copy.deepcopy(arguments)}
        office_of(session).log.append(entry)
        return result

    setattr(logged, WRITES_MARK, True)
    return cast(F, logged)


def is_write(function: object) -> bool:
    return bool(getattr(function, WRITES_MARK, False))


def office_of(session: Session) -> OfficeState:
    state = session.state
    if not isinstance(state, OfficeState):
        raise ToolError("this session has no office (it was closed)")
    return state


def rows(db: sqlite3.Connection, sql: str, *params: object) -> list[JsonDict]:
    try:
        cursor = db.execute(sql, params)
    except OverflowError:
        raise ToolError("a number in the call is out of range") from None
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def fetch(db: sqlite3.Connection, table: str, row_id: int, what: str) -> JsonDict:
    """The row ``row_id`` of ``table``; a ``ToolError`` naming ``what`` when there is none."""
    found = rows(db, f"SELECT * FROM {table} WHERE id = ?", row_id) if 0 < row_id < MAX_ID else []
    if not found:
        raise ToolError(f"there is no {what} with id {row_id}")
    return found[0]


def text(value: str, what: str, *, limit: int = MAX_TEXT, required: bool = True) -> str:
    """Stripped text, refused when empty (if required) or longer than ``limit``."""
    cleaned = value.strip()
    if required and not cleaned:
        raise ToolError(f"{what} must not be empty")
    if len(cleaned) > limit:
        raise ToolError(f"{what} is too long (at most {limit} characters)")
    return cleaned


def like(query: str) -> str:
    """A LIKE pattern matching ``query`` anywhere, its wildcards escaped (ESCAPE '\\')."""
    escaped = query.strip().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped[:200]}%"


def user() -> JsonDict:
    return {"name": USER_NAME, "email": USER_EMAIL}
