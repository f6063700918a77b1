"""An environment server a run starts itself (``--env-cmd``), as NeMo Evaluator's ``gym://cmd:``.

``managed_server(command)`` starts ``command`` with the shell, waits until it is healthy,
yields it, and always stops it: when the run ends, fails, is cancelled (Ctrl-C, SIGTERM of the
collector: both cancel the run's task), or the server never became healthy. The command runs
under a small launcher (``palaestra.remote.launcher``) that stops every process the command
started, even one that left its process group or session (``setsid``, a daemon's double fork):
SIGTERM, then SIGKILL after ``STOP_GRACE`` seconds. It does so when the run stops it, when the
command's first process exits, and when the collector dies, even by ``kill -9`` (the pipe it
holds to the launcher closes; the kernel's ``PR_SET_PDEATHSIG`` tells it too).

Given ``url`` (``--env-url`` beside ``--env-cmd``), nothing may answer there before the
command starts: a server already listening would be taken for the command's (which then
cannot listen there), and a run of one environment would be scored by another. That is a
``ConfigError`` before anything starts.

Where it listens: at ``url`` when one is given (``--env-url`` beside ``--env-cmd``); otherwise
at ``http://127.0.0.1:PORT`` on a free port the collector picks, which the command receives as
``{port}`` (replaced in its text) and as ``$PORT`` (its environment, as NeMo Evaluator does)::

    palaestra collect --env-cmd "nel serve -b bench.py --host 127.0.0.1 -p {port}" ...

Healthy is, for a server that lists its routes in ``GET /openapi.json`` (NeMo Gym's,
``nel serve``), that list, and ``GET /health`` if it lists it; for any other, the first of
``GET /`` and ``GET /health`` answering below 400 (``palaestra.remote.env``); polled every
0.2 s for at most ``ready_timeout`` seconds. A command that exits first, or never becomes
healthy, is a ``ConfigError``: one line saying which, then the server's last
output lines. Its whole output also goes to ``log_path`` when one is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

import orjson

from palaestra.errors import ConfigError
from palaestra.remote.env import LIVENESS_ROUTES, OPENAPI
from palaestra.spec import ServeSpec
from palaestra.transport import (
    UNIX_SCHEME,
    HttpAnswer,
    HttpClient,
    InvalidUrl,
    TransportError,
    shown_url,
)
from palaestra.transport.client import parse_target
from palaestra.wire.protocol import HEALTH

PORT_PLACEHOLDER = "{port}"
LAUNCHER = str(Path(__file__).with_name("launcher.py"))
READY_TIMEOUT = 120.0
STOP_GRACE = 5.0
TAIL_LINES = 20
_POLL_SECONDS = 0.2


class ManagedServer:
    """One started command: its URL, its process, the last lines it printed."""

    def __init__(
        self,
        command: str,
        *,
        url: str | None = None,
        log_path: Path | None = None,
        ready_timeout: float = READY_TIMEOUT,
        token: str | None = None,
        echo: bool = False,
    ) -> None:
        if not command.strip():
            raise ConfigError("--env-cmd is empty: give the command that starts the server")
        self._given_url = url is not None
        if url is None:
            port = _free_port()
            url = f"http://127.0.0.1:{port}"
        else:
            port = urlsplit(url).port or (443 if url.startswith("https:") else 80)
        self.template = command
        self.command = command.replace(PORT_PLACEHOLDER, str(port))
        self.url = url.rstrip("/")
        self.port = port
        self.log_path = log_path
        self.ready_timeout = ready_timeout
        self._auth = {"Authorization": f"Bearer {token}"} if token else {}
        self._echo = echo
        self.process: asyncio.subprocess.Process | None = None
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._reader: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    async def start(self) -> None:
        """Start the command and wait until it is healthy; stopped again if it never is."""
        try:
            if self._given_url:
                await self._refuse_if_taken()
            await self._spawn()
            await self._wait_healthy()
        except BaseException:
            await self.stop()
            raise

    def died(self) -> str | None:
        """What to say when the server exited on its own (not stopped by us); else None."""
        if self.process is None or self.process.returncode is None or self._stopping:
            return None
        return self._death(f"exited with code {self.process.returncode}")

    async def gone(self) -> str | None:
        """``died()``, asked once the run is over: a server that no longer answers is given a
        moment for its exit to be seen (a rollout can see the connection drop before this
        process sees the child exit); one liveness request when it still answers."""
        if self.process is None or self.died() is not None:
            return self.died()
        http = HttpClient()
        try:
            if await self._healthy(http):
                return None
        finally:
            await http.aclose()
        deadline = time.monotonic() + 2.0
        while self.process.returncode is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return self.died()

    async def stop(self) -> None:
        """SIGTERM to the launcher, which stops all the command started (SIGKILL after the
        grace); SIGKILL to the launcher's group if it has not exited soon after."""
        process = self.process
        if process is None:
            return
        self._stopping = True
        try:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(process.wait(), STOP_GRACE + 2)
        finally:
            _signal_group(process.pid, signal.SIGKILL)  # only if the launcher could not
            if process.stdin is not None:
                process.stdin.close()
        # Bounded: asyncio's wait() also waits for the output pipe to close.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), STOP_GRACE)
        if self._reader is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(self._reader, return_exceptions=True), 2)

    async def _spawn(self) -> None:
        environ = {**os.environ, "PORT": str(self.port)}
        # The launcher runs the command and stops all it started, wherever it moved, when
        # this process stops it or dies (its stdin, a pipe only we hold, then reads EOF).
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            LAUNCHER,
            str(os.getpid()),
            f"{STOP_GRACE:g}",
            self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=environ,
            start_new_session=True,  # its own process group: spared the tty's ^C
        )
        log = self.log_path.open("a", encoding="utf-8") if self.log_path is not None else None
        self._reader = asyncio.create_task(self._read(log))

    async def _refuse_if_taken(self) -> None:
        """A ``ConfigError`` if a server already answers at ``url`` before the command runs:
        the command's own server could not listen there, and that server's answers would be
        taken for its (a run of one environment scored by another)."""
        try:
            target = parse_target(self.url)
        except InvalidUrl:
            return  # the first health request says what is wrong with it
        try:
            if target.scheme == UNIX_SCHEME:
                opening = asyncio.open_unix_connection(target.host)
            else:
                opening = asyncio.open_connection(target.host, target.port)
            _, writer = await asyncio.wait_for(opening, 2.0)
        except (OSError, TimeoutError):
            return  # nothing listens there (or not reachable yet): the command may
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        raise ConfigError(
            f"another server already listens at {shown_url(self.url)}, where the environment "
            f"server command is to listen: stop it, or give --env-url another address (or "
            f"none: a free port is chosen): {self.template}"
        )

    async def _read(self, log: IO[str] | None) -> None:
        """Drain the server's output (a full pipe would block it), keeping the last lines."""
        assert self.process is not None and self.process.stdout is not None
        try:
            async for raw in self.process.stdout:
                line = raw.decode(errors="replace").rstrip("\n")
                self.tail.append(line)
                if self._echo:
                    print(line, flush=True)
                if log is not None:
                    log.write(line + "\n")
                    log.flush()
        finally:
            if log is not None:
                log.close()

    async def _wait_healthy(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.ready_timeout
        async with contextlib.AsyncExitStack() as stack:
            http = HttpClient()
            stack.push_async_callback(http.aclose)
            while True:
                if self.process.returncode is not None:
                    await self._drained()
                    raise ConfigError(
                        self._death(
                            f"exited with code {self.process.returncode} before it was healthy"
                        )
                    )
                if await self._healthy(http) and self.process.returncode is None:
                    return
                if time.monotonic() >= deadline:
                    raise ConfigError(
                        self._death(
                            f"was not healthy at {shown_url(self.url)} after "
                            f"{self.ready_timeout:g}s (GET {' or '.join(LIVENESS_ROUTES)})"
                        )
                    )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self.process.wait()), _POLL_SECONDS)

    async def _healthy(self, http: HttpClient) -> bool:
        """Whether the server is up, asking only what it has: a FastAPI server (NeMo Gym's,
        ``nel serve``) lists its routes in ``GET /openapi.json`` and is healthy once that
        answers, and its ``GET /health`` if it lists one; any other server (palaestra's) on
        ``GET /``, else ``GET /health``."""
        try:
            listed = await self._get(http, OPENAPI)
            if listed.status == 200:
                try:
                    paths = orjson.loads(listed.body).get("paths")
                except (orjson.JSONDecodeError, AttributeError):
                    paths = None
                if isinstance(paths, dict):
                    return HEALTH not in paths or (await self._get(http, HEALTH)).status < 400
            for route in LIVENESS_ROUTES:
                if (await self._get(http, route)).status < 400:
                    return True
        except (TransportError, TimeoutError):
            return False  # not listening yet
        return False

    async def _get(self, http: HttpClient, route: str) -> HttpAnswer:
        return await http.request(
            "GET", f"{self.url}{route}", headers=self._auth, connect_timeout=1.0, read_timeout=5.0
        )

    async def _drained(self) -> None:
        if self._reader is not None:
            await asyncio.wait({self._reader}, timeout=2)

    def _death(self, what: str) -> str:
        lines = "\n".join(f"    {line}" for line in self.tail) or "    (no output)"
        where = f" (log: {self.log_path})" if self.log_path is not None else ""
        return (
            f"the environment server command {what}: {self.template}{where}\n"
            f"  its last output lines:\n{lines}"
        )


@contextlib.asynccontextmanager
async def managed_server(
    command: str,
    *,
    url: str | None = None,
    log_path: Path | None = None,
    ready_timeout: float = READY_TIMEOUT,
    token: str | None = None,
    echo: bool = False,
) -> AsyncIterator[ManagedServer]:
    """``command`` started and healthy for the body of the ``async with``; stopped after it,
    however it ends (see the module docstring). ``echo`` prints its output lines too."""
    server = ManagedServer(
        command, url=url, log_path=log_path, ready_timeout=ready_timeout, token=token, echo=echo
    )
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def serve_command(spec: ServeSpec) -> None:
    """Serve ``spec.env.cmd`` as an env server of a stack (``{kind: env, cmd: ...}``): start
    it on ``spec.port`` (a free one for 0), announce its address once it is healthy (the
    supervisor's ready line), pass its output on, and stop it when this process is asked to
    stop (SIGTERM, Ctrl-C). A command that exits is this server's exit, with its last lines."""
    from palaestra.http.announce import ready_line

    assert spec.env.cmd is not None
    host = "127.0.0.1" if spec.host in ("0.0.0.0", "::", "") else spec.host
    url = f"http://{host}:{spec.port or _free_port()}"
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        async with managed_server(spec.env.cmd, url=url, token=spec.token, echo=True) as server:
            assert server.process is not None
            print(ready_line(server.url), flush=True)
            print(f"serving the environment command {server.command} at {server.url}")
            exited = asyncio.ensure_future(server.process.wait())
            stopped = asyncio.ensure_future(stop.wait())
            await asyncio.wait({exited, stopped}, return_when=asyncio.FIRST_COMPLETED)
            exited.cancel()
            stopped.cancel()
            died = server.died()
            if died is not None:
                raise ConfigError(died)
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _signal_group(pgid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)
