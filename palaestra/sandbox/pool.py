"""``WorkerPool``: warm worker processes for CPU-heavy verification, off the event loop.

::

    async with WorkerPool(workers=2, timeout=30) as pool:
        ok = await pool.run(math_verify_answer, gold, predicted, memory_mb=512)

``function`` must be picklable (a top-level function of an importable module). Each task
runs under a wall-clock ``timeout`` (the worker is killed), an address-space cap of
``memory_mb`` above what the worker already uses (``MemoryError`` in the task) and a CPU cap of
``cpu_seconds``. A worker that crashes or breaks a limit is killed and replaced and the task
is retried once on a fresh worker; if it fails again the caller gets a ``RolloutFailure``:
``WorkerCrash`` (kind ``worker_crash``), ``WorkerTimeout`` (``timeout``) or
``SandboxLimitExceeded`` (``sandbox_limit``) — never a silent result. An exception raised by
the function itself is re-raised in the caller as it is.

The pool guards against runaway verifiers, not against hostile code: model-written code
belongs in ``Sandbox``. Nothing starts until the first ``run`` (or ``start``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

from palaestra.errors import PalaestraError, SandboxLimitExceeded, WorkerCrash, WorkerTimeout
from palaestra.sandbox.worker_process import Lost, WorkerProcess

T = TypeVar("T")


class PoolClosed(PalaestraError):
    """The pool was shut down before the task could finish."""


class PoolTaskError(PalaestraError):
    """The task raised an exception that could not be sent back; the message has its trace."""


@dataclass(frozen=True, slots=True)
class PoolStats:
    """Counters of a pool since it was created (``busy``, ``queued``, ``workers``: now)."""

    workers: int
    busy: int
    queued: int
    tasks: int
    completed: int
    errors: int
    failures: int
    crashes: int
    timeouts: int
    limits: int
    retries: int
    restarts: int


class WorkerPool:
    """N warm worker processes (default: one per core) running picklable functions."""

    def __init__(
        self,
        workers: int | None = None,
        *,
        timeout: float = 60.0,
        memory_mb: int | None = 2048,
        cpu_seconds: float | None = None,
        retries: int = 1,
        preload: tuple[str, ...] = (),
        start_timeout: float = 60.0,
    ) -> None:
        self.size = workers or len(os.sched_getaffinity(0))
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.cpu_seconds = cpu_seconds
        self.retries = retries
        self.preload = preload
        self.start_timeout = start_timeout
        self._workers = [WorkerProcess(index) for index in range(self.size)]
        self._idle: asyncio.Queue[WorkerProcess] | None = None
        self._start_lock: asyncio.Lock | None = None
        self._replacing: set[asyncio.Task[None]] = set()
        self._closed = False
        self._count = dict.fromkeys(
            ("tasks", "completed", "errors", "failures", "crashes", "timeouts", "limits"), 0
        )
        self._count.update(retries=0, restarts=0, busy=0, queued=0)
        self.limit_hits: Counter[str] = Counter()
        """Tasks that broke a limit, by kind (``timeout``, ``memory``, ``cpu_time``)."""

    async def start(self) -> None:
        """Start every worker now (``run`` does it on first use)."""
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._idle is not None:
                return
            if self._closed:
                raise PoolClosed("the worker pool is closed")
            idle: asyncio.Queue[WorkerProcess] = asyncio.Queue()
            results = await asyncio.gather(
                *(w.start(self.preload, self.start_timeout) for w in self._workers),
                return_exceptions=True,
            )
            for worker in self._workers:
                idle.put_nowait(worker)
            self._idle = idle
            if all(isinstance(result, BaseException) for result in results):
                raise WorkerCrash(f"the worker pool could not start a worker: {results[0]}")

    async def run(
        self,
        function: Callable[..., T],
        /,
        *args: Any,
        timeout: float | None = None,
        memory_mb: int | None = None,
        cpu_seconds: float | None = None,
        **kwargs: Any,
    ) -> T:
        """Run ``function(*args, **kwargs)`` in a worker and return its result."""
        limit_mb = memory_mb if memory_mb is not None else self.memory_mb
        limit_cpu = cpu_seconds if cpu_seconds is not None else self.cpu_seconds
        try:
            payload = pickle.dumps((function, args, kwargs, limit_mb, limit_cpu))
        except Exception as error:
            raise TypeError(
                f"pool tasks must be picklable (a top-level function and plain arguments): {error}"
            ) from error
        await self.start()
        deadline = timeout if timeout is not None else self.timeout
        name = getattr(function, "__qualname__", repr(function))
        self._count["tasks"] += 1
        lost: Lost | None = None
        for attempt in range(1 + self.retries):
            if attempt:
                self._count["retries"] += 1
            try:
                reply = await self._call(payload, deadline)
            except Lost as error:
                lost = error
                self._count[
                    {"crash": "crashes", "timeout": "timeouts"}.get(error.cause, "limits")
                ] += 1
                if error.cause != "crash":
                    self.limit_hits[error.limit or error.cause] += 1
                continue
            result: T = self._result(reply)
            return result
        assert lost is not None
        self._count["failures"] += 1
        attempts = 1 + self.retries
        if lost.cause == "timeout":
            raise WorkerTimeout(f"pool task {name} ran longer than {deadline:g}s ({attempts}x)")
        if lost.cause == "limit":
            raise SandboxLimitExceeded(
                f"pool task {name} exceeded its {lost.limit} limit ({attempts}x)", lost.limit
            )
        raise WorkerCrash(f"pool task {name} crashed its worker {attempts}x ({lost.detail})")

    def stats(self) -> PoolStats:
        return PoolStats(workers=sum(worker.alive for worker in self._workers), **self._count)

    async def aclose(self) -> None:
        """Kill every worker and wait until each is reaped. Idempotent."""
        self._closed = True
        if self._replacing:
            await asyncio.gather(*self._replacing, return_exceptions=True)
        for worker in self._workers:
            worker.kill()
        await asyncio.gather(*(worker.reap() for worker in self._workers))

    async def __aenter__(self) -> WorkerPool:
        await self.start()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _call(self, payload: bytes, timeout: float) -> tuple[Any, ...]:
        assert self._idle is not None
        self._count["queued"] += 1
        try:
            worker = await self._idle.get()
        finally:
            self._count["queued"] -= 1
        if self._closed:
            self._idle.put_nowait(worker)
            raise PoolClosed("the worker pool is closed")
        self._count["busy"] += 1
        healthy = False
        try:
            if not worker.alive:
                self._count["restarts"] += 1
                try:
                    await worker.start(self.preload, self.start_timeout)
                except Exception as error:
                    raise Lost("crash", f"a worker could not start: {error}") from error
            reply = await worker.call(payload, timeout)
            healthy = reply[0] != "limit"
            if not healthy:
                raise Lost("limit", "the task ran out of memory", limit=str(reply[1]))
            return reply
        finally:
            self._count["busy"] -= 1
            if healthy or self._closed:
                self._idle.put_nowait(worker)
            else:
                self._replace(worker)

    def _replace(self, worker: WorkerProcess) -> None:
        """Kill ``worker`` and start a fresh process in its place, then make it available."""
        worker.kill()

        async def replace() -> None:
            await worker.reap()
            if not self._closed:
                self._count["restarts"] += 1
                with contextlib.suppress(Exception):
                    await worker.start(self.preload, self.start_timeout)
            assert self._idle is not None
            self._idle.put_nowait(worker)

        task = asyncio.get_running_loop().create_task(replace())
        self._replacing.add(task)
        task.add_done_callback(self._replacing.discard)

    def _result(self, reply: tuple[Any, ...]) -> Any:
        if reply[0] == "ok":
            self._count["completed"] += 1
            return reply[1]
        self._count["errors"] += 1
        _, error, trace = reply
        if isinstance(error, BaseException):
            error.add_note(f"raised in a pool worker:\n{trace}")
            raise error
        raise PoolTaskError(str(trace).strip().splitlines()[-1] if trace else "unknown error")
