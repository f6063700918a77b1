"""Sessions: the explicit, isolated state of one rollout inside an environment."""

from __future__ import annotations

import itertools
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from palaestra.errors import SessionExpired
from palaestra.types import JsonDict

__all__ = ["Session", "SessionExpired", "SessionStore"]


@dataclass(slots=True)
class Session:
    """One rollout's state. ``state`` is whatever the environment's ``seed`` returned."""

    id: str
    task: JsonDict
    state: Any
    step_rewards: list[float] = field(default_factory=list)
    """Per-step rewards of a turn-based (reset/step) episode, in order."""
    size: int = 0
    """Bytes of the task as it arrived (an env server's ``/seed_session`` body), counted in
    the store's ``held_bytes`` while the session lives."""
    created_at: float = field(default_factory=time.monotonic)
    last_used: float = field(default_factory=time.monotonic)


class SessionStore:
    """Open sessions of one environment, each expiring ``ttl`` seconds after its last use.

    Expired sessions are swept when a new one opens, so no background task is needed; the
    swept sessions are returned so their owner can run the environment's ``close`` on them.
    """

    def __init__(self, ttl: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        # Least recently used first: ``get`` moves a session to the end, so ``sweep`` stops at
        # the first live session instead of scanning every open one each time a session opens
        # (which made a collection with thousands of rollouts in flight quadratic).
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        # Ids are a random prefix per store and a counter: unique across stores and restarts,
        # without a getrandom() call per rollout. Over HTTP they travel signed (sessions_http),
        # so they need not be unguessable themselves.
        self._id_prefix = secrets.token_hex(8)
        self._ids = itertools.count(1)
        self.expired = 0
        """Sessions dropped because they outlived the TTL (read by ``/metrics``)."""
        self.held_bytes = 0
        """The ``size`` of every open session: what an env server's byte cap bounds."""

    def __len__(self) -> int:
        return len(self._sessions)

    def open(self, task: JsonDict, state: Any) -> Session:
        now = self._clock()
        session_id = f"{self._id_prefix}{next(self._ids):x}"
        session = Session(session_id, task, state, created_at=now, last_used=now)
        self._sessions[session.id] = session
        return session

    def charge(self, session_id: str, size: int) -> None:
        """Count ``size`` bytes against the open session ``session_id`` (until it goes)."""
        session = self._sessions.get(session_id)
        if session is not None:
            self.held_bytes += size - session.size
            session.size = size

    def get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        now = self._clock()
        if session is None or now - session.last_used > self.ttl:
            if session is not None:
                self.expired += 1
                self._drop(session)
            raise SessionExpired(f"session {session_id!r} is unknown, closed or expired")
        session.last_used = now
        self._sessions.move_to_end(session_id)
        return session

    def pop(self, session_id: str) -> Session | None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            self.held_bytes -= session.size
        return session

    def _drop(self, session: Session) -> None:
        del self._sessions[session.id]
        self.held_bytes -= session.size

    def drain(self) -> list[Session]:
        """Remove and return every open session (used at shutdown)."""
        sessions = list(self._sessions.values())
        self._sessions.clear()
        self.held_bytes = 0
        return sessions

    def sweep(self) -> list[Session]:
        """Remove and return every session idle for longer than the TTL."""
        deadline = self._clock() - self.ttl
        expired = []
        for session in self._sessions.values():  # oldest use first
            if session.last_used >= deadline:
                break
            expired.append(session)
        for session in expired:
            self._drop(session)
        self.expired += len(expired)
        return expired
