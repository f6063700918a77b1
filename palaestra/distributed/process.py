"""``ProcessWorker``: one worker process of ``--workers N`` on this machine, and its ``main``.

Each worker is a fresh interpreter (fork+exec, as the spawn start method does: nothing of the
collector's event loop, threads or open files is inherited), in its own session (Ctrl-C in the
terminal reaches the collector, which then stops its workers). It talks to the collector over
a socket pair in frames of ``<length u32><id u64><payload>``:

- collector → worker, id 0: the pickled ``(RunSpec, threads)`` (pickle: the spec holds the
  keys and tokens a saved spec leaves out, and an environment given from Python; what a
  script defines goes as its file, ``palaestra.distributed.shipping``);
- worker → collector, id 0: the orjson ``{"label", "facts"}`` of the run, or ``{"error"}``;
- then collector → worker: a task (orjson) under a fresh id; worker → collector: its result
  (``palaestra.distributed.codec``) under the same id, in whatever order rollouts finish;
  before it, a durable rollout's checkpoints (orjson, ``palaestra.agents.durable``) under
  the id with its top bit set (``CHECKPOINT_BIT``).

The worker exits when the collector closes its end. A worker that dies is noticed when its
end of the socket closes: every rollout it had in flight raises ``WorkerLost``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable

import orjson

from palaestra.distributed import shipping
from palaestra.distributed.codec import encode_error
from palaestra.distributed.dispatch import Worker, WorkerLost
from palaestra.types import JsonDict

_HEADER = struct.Struct("!IQ")
_CONTROL = 0
CHECKPOINT_BIT = 1 << 63
"""Set in a frame's id: the frame is a checkpoint of the task with that id, not its result."""
STOP_GRACE = 5.0
"""Seconds a worker has to close its parts after the collector closed its end."""

_BOOTSTRAP = (
    "import json, os, sys; sys.path[:] = json.loads(os.environ.pop('PALAESTRA_WORKER_PATH')); "
    "from palaestra.distributed.process import main; main()"
)


def frame(ident: int, payload: bytes) -> bytes:
    return _HEADER.pack(len(payload), ident) + payload


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    length, ident = _HEADER.unpack(await reader.readexactly(_HEADER.size))
    return ident, await reader.readexactly(length)


class ProcessWorker(Worker):
    """A worker process, seen from the collector."""

    checkpoints = True
    """It streams a durable rollout's checkpoints (``run_durable``): a rollout whose worker
    died resumes from its last one."""

    def __init__(self, index: int, setup: bytes) -> None:
        self.name = f"worker {index}"
        self.setup = setup
        """The run sent to the process: ``shipping.dumps((spec, threads))``, made once for
        every worker (so what no worker could import is refused before any starts)."""
        self.process: subprocess.Popen[bytes] | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._reading: asyncio.Task[None] | None = None
        self._pending: dict[int, asyncio.Future[bytes]] = {}
        self._checkpoints: dict[int, Callable[[bytes], object]] = {}
        self._ids = itertools.count(1)
        self._lost: str | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    async def start(self) -> JsonDict:
        parent_end, child_end = socket.socketpair()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _BOOTSTRAP, str(child_end.fileno())],
                pass_fds=(child_end.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=2,  # the collector's stdout is its summary: a worker's prints go to stderr
                env=dict(os.environ, PALAESTRA_WORKER_PATH=json.dumps(sys.path)),
                start_new_session=True,
            )
        finally:
            child_end.close()
        reader, self._writer = await asyncio.open_connection(sock=parent_end)
        self._writer.write(frame(_CONTROL, self.setup))
        try:
            _, payload = await read_frame(reader)
        except (asyncio.IncompleteReadError, ConnectionError):
            status = await self._exit_status(STOP_GRACE)
            return {"error": {"class": "", "message": f"the process {status} while starting"}}
        hello: JsonDict = orjson.loads(payload)
        if "error" not in hello:
            self._reading = asyncio.get_running_loop().create_task(self._read(reader))
        return hello

    async def run(self, payload: bytes) -> bytes:
        return await self._run_as(next(self._ids), payload)

    async def run_durable(self, payload: bytes, on_checkpoint: Callable[[bytes], object]) -> bytes:
        """``run``, with each checkpoint the worker sends for the task given to
        ``on_checkpoint`` (``dispatch.Worker.checkpoints``)."""
        ident = next(self._ids)
        self._checkpoints[ident] = on_checkpoint
        try:
            return await self._run_as(ident, payload)
        finally:
            self._checkpoints.pop(ident, None)

    async def _run_as(self, ident: int, payload: bytes) -> bytes:
        if self._lost is not None or self._writer is None:
            raise WorkerLost(self._lost or "not started")
        answer: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._pending[ident] = answer
        try:
            self._writer.write(frame(ident, payload))
            return await answer
        finally:
            self._pending.pop(ident, None)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        pending = self._pending
        try:
            while True:
                ident, payload = await read_frame(reader)
                if ident & CHECKPOINT_BIT:
                    sink = self._checkpoints.get(ident ^ CHECKPOINT_BIT)
                    if sink is not None:
                        sink(payload)
                    continue
                answer = pending.pop(ident, None)
                if answer is not None and not answer.done():
                    answer.set_result(payload)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        self._lost = f"its process {await self._exit_status(1.0)}"
        for answer in pending.values():
            if not answer.done():
                answer.set_exception(WorkerLost(self._lost))
        pending.clear()

    async def stop(self) -> None:
        """Close the worker's end (it closes its parts and exits); kill it if it lingers."""
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()
        process = self.process
        if process is not None and process.poll() is None:
            await self._exit_status(STOP_GRACE)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            await self._exit_status(STOP_GRACE)
        if self._reading is not None:
            self._reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reading

    async def _exit_status(self, wait: float) -> str:
        """How the process ended, waiting up to ``wait`` s for it (it may be exiting now)."""
        process = self.process
        if process is None:
            return "never started"
        deadline = time.monotonic() + wait
        while process.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return describe_exit(process.returncode)


def describe_exit(status: int | None) -> str:
    if status is None:
        return "closed its connection"
    if status < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-status).name}"
    return f"exited with status {status}"


# --- the worker process -----------------------------------------------------------------------


def main() -> None:
    """A worker process: serve tasks over the socket named by ``argv[1]`` until it closes."""
    from palaestra._util.loop import new_event_loop
    from palaestra.collection.runtime import collector_gc, raise_open_files_limit

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the collector decides when workers stop
    sock = socket.socket(fileno=int(sys.argv[1]))
    raise_open_files_limit()
    with collector_gc(), asyncio.Runner(loop_factory=new_event_loop) as runner:
        runner.run(_serve(sock))


async def _serve(sock: socket.socket) -> None:
    from palaestra.distributed.worker import WorkerRuntime

    reader, writer = await asyncio.open_connection(sock=sock)
    try:
        _, setup = await read_frame(reader)
    except (asyncio.IncompleteReadError, ConnectionError):
        return
    try:  # on the loop: a script imported here that calls collect() at import raises
        spec, threads = shipping.loads(setup)
    except Exception as error:
        hello: JsonDict = {"error": encode_error(error)}
    else:
        runtime = WorkerRuntime(spec, threads)
        hello = await runtime.start()
    writer.write(frame(_CONTROL, orjson.dumps(hello)))
    if "error" in hello:
        await writer.drain()
        return
    running: set[asyncio.Task[None]] = set()

    async def run(ident: int, payload: bytes) -> None:
        def checkpoint(raw: bytes) -> None:
            writer.write(frame(ident | CHECKPOINT_BIT, raw))

        writer.write(frame(ident, await runtime.run(payload, checkpoint)))

    try:
        while True:
            try:
                ident, payload = await read_frame(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            task = asyncio.create_task(run(ident, payload))
            running.add(task)
            task.add_done_callback(running.discard)
    finally:
        for task in list(running):
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        await runtime.close()
        writer.close()
