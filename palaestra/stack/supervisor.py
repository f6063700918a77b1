"""Supervising a stack's server processes: start in order, wait for ready, report deaths, stop.

Each server is a child process in its own process group, so stopping it also stops anything
it started. It is started as ``palaestra serve spec <log_dir>/<name>.spec.json``: its
``ServeSpec``, written there (no secrets: the token goes through the environment), is what it
serves. Its output goes to ``<log_dir>/<name>.log``; the last lines are kept in memory so a
death can be reported with them.

Env and model servers also listen on a Unix socket in a directory only this user can enter
(made when the stack starts, removed when it stops or, after a ``kill -9``, by the next stack
to start: ``socket_dir``), and the stack's agents reach them there:
12% less CPU per served rollout than loopback TCP (``benchmarks/results/serving.md``). The TCP
address stays what everyone else uses.

The servers die with the supervisor, however it ends: each child asks the kernel for SIGKILL
when its parent dies (``PR_SET_PDEATHSIG``, set between fork and exec), so a ``kill -9`` of
``palaestra run`` leaves no server holding its port.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import orjson

from palaestra._util.processes import die_with
from palaestra.errors import ConfigError
from palaestra.http.announce import parse_ready_line
from palaestra.stack.config import ServerSpec, StackConfig
from palaestra.stack.sockets import SocketDirectory
from palaestra.types import JsonDict

TAIL_LINES = 20
READY_TIMEOUT = 180.0
STOP_GRACE = 5.0
USER_ERROR_PREFIX = "error: "
"""How a ``palaestra`` command prints a user mistake (a busy port, an unknown env): one line."""


class StackError(ConfigError):
    """A server of the stack failed to start; the message names it and shows its last lines."""


@dataclass(slots=True)
class Child:
    name: str
    spec: ServerSpec
    log_path: Path
    argv: list[str] = field(default_factory=list)
    process: asyncio.subprocess.Process | None = None
    url: str | None = None
    unix_socket: Path | None = None
    """The Unix socket it is asked to listen on too (env and model servers), else None."""
    unix_url: str | None = None
    """Where the stack's agents reach it: the socket its ready line announced (a server that
    runs someone else's command, ``cmd:``, announces none and is reached over TCP)."""
    status: str = "pending"
    exit_code: int | None = None
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    reader: asyncio.Task[None] | None = None

    def describe_death(self) -> str:
        said = self.tail[-1] if self.tail else ""
        if said.startswith(USER_ERROR_PREFIX):  # the server said why in one line: just that
            return (
                f"server '{self.name}' ({self.spec.kind}) could not start: "
                f"{said.removeprefix(USER_ERROR_PREFIX)} (log: {self.log_path})"
            )
        lines = "\n".join(f"    {line}" for line in self.tail) or "    (no output)"
        return (
            f"server '{self.name}' ({self.spec.kind}, pid "
            f"{self.process.pid if self.process else '?'}) exited with code "
            f"{self.exit_code}; last log lines ({self.log_path}):\n{lines}"
        )

    def to_json(self) -> JsonDict:
        return {
            "name": self.name,
            "kind": self.spec.kind,
            "url": self.url,
            "unix_socket": str(self.unix_socket) if self.unix_url else None,
            "status": self.status,
            "exit_code": self.exit_code,
            "pid": self.process.pid if self.process else None,
            "log": str(self.log_path),
        }


class Supervisor:
    def __init__(self, config: StackConfig, *, log_dir: Path, token: str | None) -> None:
        self.config = config
        self.token = token
        log_dir.mkdir(parents=True, exist_ok=True)
        self.children = {
            name: Child(name, spec, log_dir / f"{name}.log")
            for name, spec in config.servers.items()
        }
        self._sockets: SocketDirectory | None = None

    async def start(self) -> None:
        """Start every server in dependency order; return once all answer. Raise on failure."""
        self._sockets = SocketDirectory.make()
        for number, child in enumerate(self.children.values()):
            if child.spec.kind in ("env", "model"):  # by number: a name may be long
                child.unix_socket = self._sockets.path / f"{number}.sock"
        for name in self.config.start_order():
            child = self.children[name]
            child.argv = self._argv(child)
            await self._spawn(child)
            await self._await_ready(child)

    async def wait_for_death(self) -> Child:
        """Return the next server that exits on its own."""
        running = {
            asyncio.ensure_future(self._exited(c)): c
            for c in self.children.values()
            if c.status == "ready"
        }
        if not running:
            await asyncio.Event().wait()  # nothing left to watch: wait for the stop signal
        done, pending = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        for future in pending:
            future.cancel()
        return running[next(iter(done))]

    async def stop(self) -> None:
        """SIGTERM every process group, then SIGKILL what is left after the grace period."""
        alive = [
            c
            for c in self.children.values()
            if c.process is not None and c.process.returncode is None
        ]
        for child in alive:
            _signal_group(child, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        for child in alive:
            assert child.process is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(child.process.wait(), max(0.1, deadline - time.monotonic()))
            if child.process.returncode is None:
                _signal_group(child, signal.SIGKILL)
                await child.process.wait()
            child.status = "stopped"
        for child in self.children.values():
            if child.reader is not None:
                await asyncio.gather(child.reader, return_exceptions=True)
        if self._sockets is not None:
            self._sockets.remove()

    def snapshot(self) -> list[JsonDict]:
        return [child.to_json() for child in self.children.values()]

    async def _spawn(self, child: Child) -> None:
        environ = dict(os.environ)
        environ.pop("PALAESTRA_SERVER_TOKEN", None)
        if self.token:
            # env, not argv: argv is public. An agent whose model is a server of this stack
            # reads its key from here too (its spec names this variable, not OPENAI_API_KEY).
            environ["PALAESTRA_SERVER_TOKEN"] = self.token
        child.status = "starting"
        child.process = await asyncio.create_subprocess_exec(
            *child.argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=environ,
            start_new_session=True,
            preexec_fn=die_with(os.getpid()),
        )
        child.reader = asyncio.create_task(self._read(child, child.log_path.open("a")))

    async def _read(self, child: Child, log: IO[str]) -> None:
        assert child.process is not None and child.process.stdout is not None
        with log:
            async for raw in child.process.stdout:
                line = raw.decode(errors="replace").rstrip("\n")
                log.write(line + "\n")
                log.flush()
                facts = parse_ready_line(line)
                if facts is not None and child.url is None:
                    child.url = str(facts["url"])
                    child.unix_url = str(facts["unix"]) if facts.get("unix") else None
                    child.ready.set()
                else:
                    child.tail.append(line)

    async def _await_ready(self, child: Child) -> None:
        assert child.process is not None
        exited = asyncio.ensure_future(child.process.wait())
        ready = asyncio.ensure_future(child.ready.wait())
        done, _ = await asyncio.wait(
            {exited, ready}, timeout=READY_TIMEOUT, return_when=asyncio.FIRST_COMPLETED
        )
        exited.cancel()
        ready.cancel()
        if ready in done:
            child.status = "ready"
            return
        if child.reader is not None:
            await asyncio.wait({child.reader}, timeout=2)
        child.exit_code = child.process.returncode
        child.status = "dead" if child.exit_code is not None else "stuck"
        if child.status == "stuck":
            raise StackError(
                f"server '{child.name}' was not ready after {READY_TIMEOUT:g}s; "
                f"log: {child.log_path}"
            )
        raise StackError(child.describe_death())

    async def _exited(self, child: Child) -> None:
        assert child.process is not None
        child.exit_code = await child.process.wait()
        if child.reader is not None:
            await asyncio.wait({child.reader}, timeout=2)
        child.status = "dead"

    def _argv(self, child: Child) -> list[str]:
        """Write the server's ``ServeSpec`` beside its log; the command that serves it."""
        urls = {c.name: c.unix_url or c.url for c in self.children.values() if c.url is not None}
        spec = self.config.serve_spec(child.name, urls, token=self.token, environ=os.environ)
        spec = spec.model_copy(update={"unix_socket": child.unix_socket})
        spec_path = child.log_path.with_suffix(".spec.json")
        spec_path.write_bytes(orjson.dumps(spec.to_json(), option=orjson.OPT_INDENT_2))
        return [sys.executable, "-m", "palaestra", "serve", "spec", str(spec_path)]


def _signal_group(child: Child, signum: signal.Signals) -> None:
    assert child.process is not None
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.process.pid, signum)
