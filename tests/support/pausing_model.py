"""A script for ``ScriptedModelServer`` that pauses for a weight update in one convention.

``Pausing(then, convention)`` answers as ``then`` until ``pause(seconds)`` is called (or, with
``pause_at=(n, seconds)``, until its ``n``-th request, mid-run); for the next ``seconds`` it
answers every request as a paused server of that convention does:

- ``"429"``: HTTP 429 with ``Retry-After`` (seconds);
- ``"503"``: HTTP 503 with ``Retry-After``;
- ``"agl"``: HTTP 503 with ``X-Agl-Paused: true`` and no ``Retry-After`` (the header alone
  makes it a pause: without it, a 503 is a failure to retry);
- ``"held"``: no answer until the pause ends, then ``then``'s (an engine that holds requests
  while paused, as vLLM does between ``/pause`` and ``/resume``).

vLLM's other shape, aborting the generations in flight, is the ``AbortingEngine``'s
(``ScriptedModelServer(..., decode_time=...).weight_update(pause)``).
"""

from __future__ import annotations

import threading
import time
from typing import Literal

from palaestra.types import JsonDict
from tests.support.scripted_model import Reply, Script, ScriptedFault

Convention = Literal["429", "503", "agl", "held"]
CONVENTIONS: tuple[Convention, ...] = ("429", "503", "agl", "held")


class Pausing:
    """A script that pauses on demand (see the module); thread-safe."""

    def __init__(
        self,
        then: Script,
        convention: Convention,
        *,
        retry_after: float = 1.0,
        pause_at: tuple[int, float] | None = None,
    ) -> None:
        self.then = then
        self.convention = convention
        self.retry_after = retry_after
        self.pause_at = pause_at
        self.requests = 0
        self.paused_answers = 0
        """Requests answered (or held) as paused so far."""
        self.started_at: float | None = None
        """When the pause began (``time.monotonic``)."""
        self._until = 0.0
        self._lock = threading.Lock()

    def pause(self, seconds: float) -> None:
        """Pause from now for ``seconds``."""
        with self._lock:
            self._start(seconds)

    def _start(self, seconds: float) -> None:
        self.started_at = time.monotonic()
        self._until = self.started_at + seconds

    def __call__(self, params: JsonDict) -> Reply:
        with self._lock:
            self.requests += 1
            if self.pause_at is not None and self.requests == self.pause_at[0]:
                self._start(self.pause_at[1])
            left = self._until - time.monotonic()
            if left > 0:
                self.paused_answers += 1
        if left <= 0:
            return self.then(params)
        error = {"error": {"message": "paused for a weight update", "type": "paused"}}
        if self.convention == "held":
            reply = self.then(params)
            assert not isinstance(reply, ScriptedFault)
            return ScriptedFault(status=200, body=reply, delay=left)
        if self.convention == "agl":
            return ScriptedFault(status=503, body=error, headers={"X-Agl-Paused": "true"})
        status = 429 if self.convention == "429" else 503
        return ScriptedFault(
            status=status, body=error, headers={"Retry-After": f"{self.retry_after:g}"}
        )
