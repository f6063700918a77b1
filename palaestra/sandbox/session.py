"""``PythonSession``: a sandboxed Python process that keeps its globals across calls.

For math-with-code style tools: the model runs a cell, reads its output, runs the next cell
with the same variables. ::

    async with await sandbox.session(idle_ttl=300) as python:
        await python.run("x = 6 * 7")
        (await python.run("x")).value      # "42"

Each cell is bounded by ``Limits.wall_time`` (the cell is interrupted and the session lives
on; if it cannot be interrupted the session is killed); the session's CPU, memory, processes
and files are bounded as a whole. A session never outlives its ``idle_ttl`` (the process
exits by itself, and the host kills it too), the event loop, or the process that started it.

Cells cannot reach the session's protocol channel: it is held by a supervisor process that
runs the cells in a worker child of its own (see ``repl``), so a cell can at most spoil its
own result and its own session's state, never the order or the content of other replies.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from palaestra.errors import PalaestraError
from palaestra.sandbox.limits import (
    Limit,
    Limits,
    limit_from_error,
    limit_from_kill,
    limit_from_signal,
)
from palaestra.sandbox.process import SandboxProcess
from palaestra.sandbox.workdir import WorkDir

if TYPE_CHECKING:
    from palaestra.sandbox.runner import Sandbox

_REPL = Path(__file__).with_name("repl.py")
_GRACE = 2.0
"""Seconds the host waits past a cell's timeout for the cell to interrupt itself."""


class SessionClosed(PalaestraError):
    """The session's process is gone (closed, expired, killed or crashed)."""


@dataclass(frozen=True, slots=True)
class CellResult:
    """What one cell did. ``value`` is the repr of its last expression (``None`` if none);
    ``error`` the traceback when it raised; ``limit`` the rule it ran into, if any."""

    stdout: str
    stderr: str
    value: str | None = None
    error: str | None = None
    limit: Limit | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.limit is None


class PythonSession:
    """Create with ``await sandbox.session(...)``; ``close()`` (or ``async with``) ends it."""

    def __init__(self, sandbox: Sandbox, limits: Limits, idle_ttl: float) -> None:
        self.sandbox = sandbox
        self.limits = limits
        self.idle_ttl = idle_ttl
        self._lock = asyncio.Lock()
        self._last_used = time.monotonic()
        self._process: SandboxProcess | None = None
        self._work: WorkDir | None = None
        self._uid: int | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._closed = False
        self._oom_kills = 0

    async def start(self, files: dict[str, str | bytes] | None = None) -> None:
        uids = self.sandbox._uids
        self.sandbox.isolation  # noqa: B018 (decides the isolation, once, before the work dir)
        self._uid = uids.acquire() if uids else None
        try:
            self._work = self.sandbox.work_dir(self._uid, self.limits)
            self._work.write(files or {})
            command = [self.sandbox.python, "-B", "-E", "-s", "-c", _REPL.read_text()]
            self._process = await self.sandbox._launch(
                [*command, repr(self.idle_ttl)],
                self._work,
                self._uid,
                self.limits,
                None,
                subprocess.DEVNULL,
                capture_stderr=True,
                stream_limit=24 * self.limits.output_bytes + 2**16,
                protocol=True,  # requests and replies on pipes of their own (see repl)
            )
            self._watcher = asyncio.create_task(self._watch())
            line = await asyncio.wait_for(self._process.stdout.readline(), 30.0)
            if not line:
                raise SessionClosed(f"the Python session did not start: {await self._stderr()}")
        except BaseException:
            await self.close()
            raise

    @property
    def alive(self) -> bool:
        return not self._closed and self._process is not None and self._process.returncode is None

    async def run(self, code: str, *, timeout: float | None = None) -> CellResult:
        """Run ``code`` as the next cell. Raises ``SessionClosed`` if the session is gone."""
        result = await self._run(code, timeout)
        self.sandbox.counted(result.limit)
        return result

    async def _run(self, code: str, timeout: float | None) -> CellResult:
        timeout = timeout or self.limits.wall_time
        async with self._lock:
            process = self._process
            if not self.alive or process is None or process.stdin is None:
                raise SessionClosed("the Python session is closed (closed, expired or killed)")
            self._last_used = time.monotonic()
            request = {"code": code, "timeout": timeout, "output_bytes": self.limits.output_bytes}
            process.stdin.write(json.dumps(request).encode() + b"\n")
            try:
                line = await asyncio.wait_for(process.stdout.readline(), timeout + _GRACE)
            except TimeoutError:
                await self.close()
                return CellResult("", "", error="the cell could not be interrupted; session "
                                  "killed", limit=Limit.WALL_TIME)  # fmt: skip
            except ValueError:  # a line over the stream limit: the cell forged the protocol
                await self.close()
                return CellResult("", "", error="protocol violation; session killed")
            finally:
                self._last_used = time.monotonic()
            if not line:
                return await self._died()
            memory_full = self._memory_full()
            try:
                reply = json.loads(line)
                if reply.get("ended"):
                    await self.close()
                    return _ending(reply, self.limits, memory_full)
                return _cell_result(reply, self.limits, memory_full)
            except (ValueError, TypeError, AttributeError):  # cannot be: only repl writes here
                await self.close()
                return CellResult("", "", error="protocol violation; session killed")

    async def close(self) -> None:
        """Kill the process (and all it started), remove the work dir. Idempotent."""
        self._closed = True
        if self._process is not None and self._process.returncode is None:
            await self._process.stop()
        if self._watcher is not None and self._watcher is not asyncio.current_task():
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        self._release()

    async def __aenter__(self) -> PythonSession:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.close()

    async def _died(self) -> CellResult:
        """The session's supervisor ended without a word (killed by a cell, or crashed)."""
        assert self._process is not None
        status = await self._process.wait()
        stderr = await self._stderr()
        memory_full = self._memory_full()
        await self.close()
        signum = -status if status < 0 else status - 128 if status > 128 else None
        limit = Limit.MEMORY if memory_full else None
        limit = limit or limit_from_signal(signum) or limit_from_error(stderr)
        reason = f"signal {signum}" if signum else f"exit status {status}"
        return CellResult("", stderr, error=f"the session's process ended ({reason})", limit=limit)

    def _memory_full(self) -> bool:
        """Whether the kernel killed a process of the session at its memory bound since the
        last cell (the session's memory cgroup counts every cell)."""
        if self._process is None:
            return False
        kills, self._oom_kills = self._oom_kills, self._process.oom_kills()
        return self._oom_kills > kills

    async def _stderr(self) -> str:
        if self._process is None or self._process.stderr is None:
            return ""
        with contextlib.suppress(TimeoutError):
            data = await asyncio.wait_for(self._process.stderr.read(4096), 1.0)
            return data.decode(errors="replace")
        return ""

    async def _watch(self) -> None:
        """End the session when its process exits or it has been idle for ``idle_ttl``."""
        process = self._process
        assert process is not None
        try:
            while process.returncode is None:
                idle = time.monotonic() - self._last_used
                if idle >= self.idle_ttl and not self._lock.locked():
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(process.wait(), max(self.idle_ttl - idle, 0.5))
            self._closed = True
            if process.returncode is None:
                await process.stop()
        finally:  # also when the event loop is shutting down: leave nothing behind
            self._closed = True
            if process.returncode is None:
                process.kill_now()
            self._release()

    def _release(self) -> None:
        if self._process is not None:
            self._process.close()
        if self._work is not None:
            self._work.remove()
            self._work = None
        uids = self.sandbox._uids
        if uids and self._uid is not None:
            uids.release(self._uid)
            self._uid = None


def _ending(reply: dict[str, Any], limits: Limits, memory_full: bool = False) -> CellResult:
    """The worker that ran the cells ended: how, and which limit it ran into."""
    if reply.get("killed"):
        return CellResult("", "", error="protocol violation; session killed")
    signum = reply.get("signal")
    limit = Limit.MEMORY if memory_full else limit_from_signal(signum)
    if limit is None and signum == signal.SIGKILL:
        limit = limit_from_kill(float(reply.get("cpu") or 0.0), 0.0, limits)
    reason = f"signal {signum}" if signum else f"exit status {reply.get('exit_code')}"
    return CellResult("", "", error=f"the session's process ended ({reason})", limit=limit)


def _cell_result(reply: dict[str, Any], limits: Limits, memory_full: bool = False) -> CellResult:
    error = reply.get("error")
    limit: Limit | None = None
    if reply.get("timed_out"):
        limit = Limit.WALL_TIME
    elif memory_full:
        limit = Limit.MEMORY
    elif error:
        limit = limit_from_error(str(error), limits)
    elif reply.get("stdout_truncated") or reply.get("stderr_truncated"):
        limit = Limit.OUTPUT
    return CellResult(
        stdout=str(reply.get("stdout", "")),
        stderr=str(reply.get("stderr", "")),
        value=reply.get("value"),
        error=error,
        limit=limit,
    )
