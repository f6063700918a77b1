"""Weight-update pauses: an endpoint that says "wait" is waited for, not retried.

A trainer updating the policy's weights pauses the inference engine, or a gateway in front of
it, for seconds to minutes. A call that meets the pause must wait it out: counted as a retry,
a one-minute pause would spend any retry budget and fail its rollout. The answers read as a
pause:

- HTTP 429 or 503 with a ``Retry-After`` header (seconds, or an HTTP date): the server says
  when to ask again;
- any answer that is not a success with ``X-Agl-Paused: true`` (the convention of Agent
  Lightning's proxy, which sends it beside 429 and ``Retry-After``), ``Retry-After`` or not.

A paused call sleeps the ``Retry-After`` (a short poll interval, ``RetryPolicy.pause_poll``,
when there is none) and asks again, spending none of its retry budget, until the pause ends or
its own ``pause_deadline`` passes: the call then fails with a ``ModelError`` that names the
pause (``transient = "paused"``: a model pool moves such a call to another replica). 429 or
503 without ``Retry-After`` is no pause: it is retried with backoff, as before.

The two other shapes of a pause need nothing here. vLLM's ``POST /pause`` answers the
generations in flight at once with ``finish_reason: "abort"`` (``mode=abort``; ``resume``
continues them, spending no retry budget either), and holds every new request until
``POST /resume`` (every mode): a held request is an answer slow to come, so the read timeout
of a model call is ``request_timeout`` plus what is left of its ``pause_deadline``
(``read_timeout``). A call that meets a pause in any of these shapes counts once in
``ModelStats.paused_calls``; the seconds it slept in pauses go to ``paused_seconds``.

``pause_deadline = 0`` turns all of it off: pause answers are retried, spending the budget, and
a held request has ``request_timeout`` alone.
"""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime

from palaestra.errors import ModelError
from palaestra.transport.connection import HttpAnswer

PAUSE_HEADER = "x-agl-paused"
"""Agent Lightning's header on the answers of a paused proxy (value ``true``)."""
PAUSE_STATUSES = frozenset({429, 503})
"""Statuses that read as a pause when they carry ``Retry-After``."""
SHORTEST_WAIT = 0.05
"""The least a paused call sleeps before it asks again, whatever ``Retry-After`` says: a
server answering ``Retry-After: 0`` while paused would otherwise be asked in a tight loop."""
PAUSED = "paused"
"""``ModelError.transient`` of a call still paused at its deadline."""


def retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` value: a number of seconds, or an HTTP date (the
    seconds until it, at least 0); None when absent or unreadable."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        return max(0.0, when.timestamp() - (time.time() if now is None else now))
    return seconds if seconds >= 0 else None


def pause_of(answer: HttpAnswer) -> float | None:
    """How long to wait when ``answer`` (not a success) says the server is paused: its
    ``Retry-After`` in seconds, 0 for "paused, no time given" (the caller polls); None when
    the answer is no pause."""
    status = answer.status
    paused = (answer.header(PAUSE_HEADER) or "").strip().lower() == "true"
    if not paused and status not in PAUSE_STATUSES:
        return None
    after = retry_after(answer.header("retry-after"))
    if after is not None:
        return after
    return 0.0 if paused else None


class PausedCall:
    """The pause one call is in: when it began, and what its deadline leaves."""

    __slots__ = ("deadline", "started")

    def __init__(self, deadline: float) -> None:
        self.started = time.monotonic()
        self.deadline = deadline

    def left(self) -> float:
        """Seconds left before the call's pause deadline."""
        return self.deadline - (time.monotonic() - self.started)

    def expired(self, where: str, status: int) -> ModelError:
        """The failure of a call still paused at its deadline, naming the pause."""
        waited = time.monotonic() - self.started
        error = ModelError(
            f"{where}: the endpoint was still paused (HTTP {status}, a weight update or a "
            f"drain) after {waited:.0f} s, past the call's pause_deadline of "
            f"{self.deadline:g} s; raise pause_deadline if its pauses are that long"
        )
        error.transient = PAUSED
        return error
