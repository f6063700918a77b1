"""The gateway: an OpenAI-compatible endpoint per rollout in front of one palaestra ``Model``.

A harness that speaks OpenAI's APIs (Chat Completions, Completions, Responses) runs unmodified
against ``GatewayRollout.base_url`` with ``GatewayRollout.api_key``; the gateway answers each
call with the model and records it on the rollout (``palaestra.gateway.rollout``).

It serves in the event loop that starts it (``start``), under uvicorn with palaestra's HTTP
protocol, on loopback (and on a Unix socket when asked). A trainer about to update the weights
calls ``pause``: new calls are held (they wait, they are not refused) and ``pause`` returns once
the calls in flight have finished; ``resume`` lets the held calls go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from palaestra.errors import ConfigError
from palaestra.gateway.rollout import GatewayRollout
from palaestra.http.announce import listen, listen_unix
from palaestra.http.runner import make_server
from palaestra.models.affinity import ROLLOUT_SCOPE, RolloutScope
from palaestra.transport import unix_url

if TYPE_CHECKING:
    import uvicorn

    from palaestra.models.base import Model

_ROLLOUT_ID = re.compile(r"[0-9A-Za-z_.-]{1,64}")
_START_TIMEOUT = 30.0


@dataclass(slots=True)
class GatewayCounts:
    """What a gateway has done so far (its metrics: ``palaestra.observe``)."""

    calls: dict[str, int] = field(default_factory=dict)
    """Calls answered by the model, by API (``chat``, ``completions``, ``responses``)."""
    errors: int = 0
    """Calls the model failed (the harness got an error answer)."""
    refused: int = 0
    """Calls refused before the model saw them (401, 404, a malformed request)."""
    paused_calls: int = 0
    """Calls that arrived during a pause and waited for ``resume``."""
    pauses: int = 0
    drain_seconds: float = 0.0
    """Seconds ``pause`` waited for the calls in flight to finish, added up."""
    rollouts_opened: int = 0
    in_flight: int = 0
    """Calls at the model now."""


class Gateway:
    """An OpenAI-compatible endpoint in front of one palaestra Model, recording every call.

    ``admin_token``: serve the admin routes (open and close rollouts, pause, resume, stats)
    to requests carrying it as a bearer token; None (the default): no admin routes, the
    process that made the gateway drives it through its methods. ``model_id``: the name
    ``/v1/models`` lists and answers carry (default: the model's name).
    """

    def __init__(
        self,
        model: Model,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        unix_socket: Path | None = None,
        admin_token: str | None = None,
        model_id: str | None = None,
        signals: bool = False,
    ) -> None:
        self.model = model
        self.host = host
        self.port = port
        self.unix_socket = unix_socket
        self.admin_token = admin_token
        self.model_id = model_id or model.name
        self.url = ""
        """The root URL once started, e.g. ``http://127.0.0.1:41234``."""
        self.unix_url: str | None = None
        """The root URL on the Unix socket (``http+unix://...``), when serving on one."""
        self.counts = GatewayCounts()
        self.metrics: Callable[[], tuple[bytes, str]] | None = None
        """What ``GET /metrics`` answers (body, content type), behind the admin token; set
        by whoever exports the gateway's metrics (``palaestra serve gateway``)."""
        self.rollouts: dict[str, GatewayRollout] = {}
        self._signals = signals
        self._open = asyncio.Event()
        self._open.set()
        self._idle = asyncio.Event()
        self._idle.set()
        self._closing = False
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._sockets: list[socket.socket] = []

    # --- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        """Bind and serve in the running loop; ``url`` is set when this returns.

        An address that cannot be bound is a one-line ``ConfigError``."""
        from palaestra.gateway.app import GatewayApp

        if self._task is not None:
            raise RuntimeError("the gateway is started already")
        sock = listen(self.host, self.port)
        self._sockets = [sock]
        if self.unix_socket is not None:
            try:
                self._sockets.append(listen_unix(self.unix_socket))
            except BaseException:
                sock.close()
                raise
            self.unix_url = unix_url(str(self.unix_socket))
        bound = sock.getsockname()[1]
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"http://{shown}:{bound}"
        server = self._server = make_server(GatewayApp(self), host=self.host, port=bound)
        if not self._signals:  # in a run's process: Ctrl-C is the run's, not the gateway's
            server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
        self._task = asyncio.create_task(server.serve(sockets=self._sockets))
        deadline = time.monotonic() + _START_TIMEOUT
        while not server.started:
            if self._task.done() or time.monotonic() > deadline:
                await self.aclose()
                raise ConfigError(f"the gateway on {self.url} did not start")
            await asyncio.sleep(0.005)

    async def aclose(self) -> None:
        """Stop serving: calls held by a pause are answered 503; open rollouts keep their
        calls."""
        self._closing = True
        self._open.set()  # held calls wake up and are refused
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for sock in self._sockets:
            sock.close()
        self._sockets = []
        if self.unix_socket is not None:
            self.unix_socket.unlink(missing_ok=True)

    async def wait_closed(self) -> None:
        """Serve until the server stops (a signal, with ``signals=True``, or ``aclose``)."""
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def __aenter__(self) -> Gateway:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # --- rollouts -----------------------------------------------------------------------

    def open(
        self, rollout_id: str | None = None, *, scope: RolloutScope | None = None
    ) -> GatewayRollout:
        """A new rollout's endpoint: its ``base_url`` and ``api_key``.

        Given the rollout's ``scope`` (an agent's ``RolloutContext.scope``), the calls made on
        it stay on that rollout's pool endpoint and record their policy versions there, as the
        tool loop's calls do; without one, the scope of the rollout it is opened in, if any."""
        if not self.url:
            raise RuntimeError("start the gateway before opening rollouts")
        if rollout_id is None:
            rollout_id = secrets.token_hex(8)
        elif not _ROLLOUT_ID.fullmatch(rollout_id):
            raise ConfigError(
                f"a rollout id is 1-64 letters, digits, '_', '.' or '-': {rollout_id!r:.80}"
            )
        if rollout_id in self.rollouts:
            raise ConfigError(f"a rollout {rollout_id!r} is open on this gateway already")
        rollout = GatewayRollout(
            rollout_id,
            self.url,
            scope=scope or ROLLOUT_SCOPE.get() or RolloutScope(rollout_id),
            on_close=self._forget,
        )
        rollout.model = self.model_id
        self.rollouts[rollout_id] = rollout
        self.counts.rollouts_opened += 1
        return rollout

    def _forget(self, rollout: GatewayRollout) -> None:
        if self.rollouts.get(rollout.id) is rollout:
            del self.rollouts[rollout.id]

    # --- pause and drain ----------------------------------------------------------------

    async def pause(self) -> None:
        """Hold new calls until ``resume``; return once the calls in flight have finished."""
        if self._open.is_set():
            self._open.clear()
            self.counts.pauses += 1
        started = time.monotonic()
        await self._idle.wait()
        self.counts.drain_seconds += time.monotonic() - started

    def resume(self) -> None:
        """Let held calls go on, and new calls straight through."""
        self._open.set()

    @property
    def paused(self) -> bool:
        return not self._open.is_set()

    async def admit(self) -> bool:
        """Wait while paused, then count a call in flight; False when the gateway closes."""
        if not self._open.is_set():
            self.counts.paused_calls += 1
            while not self._open.is_set():
                await self._open.wait()
        if self._closing:
            return False
        self.counts.in_flight += 1
        self._idle.clear()
        return True

    def release(self) -> None:
        """A call admitted by ``admit`` has finished."""
        counts = self.counts
        counts.in_flight -= 1
        if counts.in_flight == 0:
            self._idle.set()
