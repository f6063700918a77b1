"""One worker of the pool, seen from the parent: start, call with a deadline, kill, reap.

Waiting is done on file descriptors from the event loop (the connection and a pidfd), so
no thread is tied up per worker and a dead worker is noticed at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pickle
import signal
import socket
import subprocess
import sys
from multiprocessing.connection import Connection
from typing import Any, Literal

Cause = Literal["crash", "timeout", "limit"]


class Lost(Exception):
    """The worker died or was killed while running a task."""

    def __init__(self, cause: Cause, detail: str, *, limit: str | None = None) -> None:
        self.cause = cause
        self.detail = detail
        self.limit = limit
        super().__init__(f"{cause}: {detail}")


_BOOTSTRAP = (
    "import json, os, sys; sys.path[:] = json.loads(os.environ.pop('PALAESTRA_POOL_PATH')); "
    "from palaestra.sandbox.worker import main; main()"
)


class WorkerProcess:
    """A worker: a fresh interpreter in its own process group, talking over a socket pair."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.process: subprocess.Popen[bytes] | None = None
        self.conn: Connection | None = None
        self.ready = False
        self._pidfd: int | None = None

    @property
    def alive(self) -> bool:
        return self.ready and self.process is not None and self.process.returncode is None

    async def start(self, preload: tuple[str, ...], timeout: float) -> None:
        """Spawn a fresh interpreter and wait until it has imported ``preload``."""
        if self.process is not None:  # never lose track of an earlier process
            self.kill()
            await self.reap()
        parent_end, child_end = socket.socketpair()
        env = dict(os.environ, PALAESTRA_POOL_PATH=json.dumps(sys.path))
        try:
            # fork+exec: quick, and never left half-done by a cancellation
            process = subprocess.Popen(
                [sys.executable, "-c", _BOOTSTRAP, str(child_end.fileno()), str(os.getpid()),
                 *preload],
                pass_fds=(child_end.fileno(),),
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )  # fmt: skip
        finally:
            child_end.close()
        self.process, self.conn, self.ready = process, Connection(parent_end.detach()), False
        self._pidfd = os.pidfd_open(process.pid)
        try:
            if await _readable([self.conn.fileno(), self._pidfd], timeout) is None:
                raise RuntimeError(f"the worker did not start within {timeout:g}s")
            if self.conn.poll() and self.conn.recv_bytes() == b"ready":
                self.ready = True
                return
            raise RuntimeError("the worker exited while starting")
        except BaseException:
            self.kill()
            await asyncio.shield(self.reap())
            raise

    async def call(self, payload: bytes, timeout: float) -> tuple[Any, ...]:
        """Send one task and wait for its reply; raise ``Lost`` if the worker dies or hangs."""
        assert self.conn is not None and self.process is not None and self._pidfd is not None
        conn, process = self.conn, self.process
        try:
            conn.send_bytes(payload)
            if await _readable([conn.fileno(), self._pidfd], timeout) is None:
                self.kill()
                raise Lost("timeout", f"no answer within {timeout:g}s")
            if conn.poll():
                with contextlib.suppress(EOFError, OSError):
                    reply: tuple[Any, ...] = pickle.loads(conn.recv_bytes())
                    return reply
        except asyncio.CancelledError:
            self.kill()  # the caller gave up: the worker's state is unknown
            raise
        except OSError:
            pass  # the pipe broke: the worker is dead
        await self.reap()
        status = process.returncode
        if status == -signal.SIGXCPU:
            raise Lost("limit", "the task used up its CPU time", limit="cpu_time")
        raise Lost("crash", f"worker {_describe(status)}")

    def kill(self) -> None:
        """SIGKILL the worker and everything it started (it leads its own process group)."""
        self.ready = False
        process = self.process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)

    async def reap(self) -> None:
        """Wait until the (killed or exiting) worker is gone and release its resources."""
        process, pidfd = self.process, self._pidfd
        if process is None or pidfd is None:
            return
        self.ready = False
        if process.poll() is None:
            if await _readable([pidfd], 5.0) is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await _readable([pidfd], 5.0)
            process.poll()
        if self.conn is not None:
            self.conn.close()
        os.close(pidfd)
        self.process, self.conn, self._pidfd = None, None, None


async def _readable(fds: list[int], timeout: float) -> int | None:
    """The first of ``fds`` to become readable, or ``None`` after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[int] = loop.create_future()

    def wake(fd: int) -> None:
        if not ready.done():
            ready.set_result(fd)

    for fd in fds:
        loop.add_reader(fd, wake, fd)
    try:
        return await asyncio.wait_for(ready, timeout)
    except TimeoutError:
        return None
    finally:
        for fd in fds:
            loop.remove_reader(fd)


def _describe(status: int | None) -> str:
    if status is None:
        return "vanished"
    if status < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-status).name}"
    return f"exited with status {status}"
