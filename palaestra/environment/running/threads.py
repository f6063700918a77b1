"""Synchronous environment code in worker threads: a slow or stuck call stalls only its rollout.

``ThreadRunner.run`` hands a plain function to one of at most ``size`` daemon threads
(started on demand, kept while the runner lives) and waits for it within a time limit. A call
that overruns is abandoned to its thread: the caller gets ``Overran`` (naming where the thread
is stuck), the thread is counted in ``stuck`` until it returns, and another thread may start
in its place; never more than ``2 * size`` threads in all, so an environment that hangs every
call cannot grow the process without bound (calls then wait in line, and time out there).

Why not ``asyncio.to_thread``: the default executor's threads are joined at interpreter exit
and by ``asyncio.run``, so a single stuck call would keep the process from ever ending. A hop
costs some CPU (queue, thread wake-up, ``call_soon_threadsafe``; measured:
benchmarks/results/micro.md): cheap next to any tool that sleeps or does I/O; a trivially cheap
tool can be ``async def`` and skip it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from palaestra.environment.running.boundary import Overran, stack_frames

T = TypeVar("T")


class _Call:
    __slots__ = ("abandoned", "args", "finished", "function", "future", "kwargs", "loop", "thread")

    def __init__(
        self,
        function: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.function, self.args, self.kwargs, self.loop = function, args, kwargs, loop
        self.future: asyncio.Future[Any] = loop.create_future()
        self.thread: int | None = None  # set by the worker thread before it starts the call
        self.finished = False
        self.abandoned = False


class ThreadRunner:
    """Runs synchronous calls in up to ``size`` daemon threads, each within a time limit.

    The bookkeeping (``_busy``, ``_threads``, ``stuck``) is touched on the event loop only;
    worker threads report back through ``call_soon_threadsafe``.
    """

    _names = itertools.count(1)

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("a thread runner needs at least one thread")
        self.size = size
        self.stuck = 0
        """Threads still running a call that was abandoned at its time limit."""
        self._threads = 0
        self._busy = 0  # calls handed over and not yet reported back
        self._jobs: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()

    async def run(self, seconds: float, function: Callable[..., T], /, *args: Any, **kw: Any) -> T:
        """``function(*args, **kw)`` in a worker thread; ``Overran`` after ``seconds``."""
        # In the caller's context (contextvars), as asyncio.to_thread does.
        context = contextvars.copy_context()
        call = _Call(context.run, (function, *args), kw, asyncio.get_running_loop())
        self._busy += 1
        if (
            self._busy > self._threads
            and self._threads - self.stuck < self.size
            and self._threads < 2 * self.size
        ):
            self._start_thread()
        self._jobs.put(call)
        deadline = asyncio.timeout(seconds)
        try:
            async with deadline:
                result: T = await call.future
                return result
        except TimeoutError:
            if not deadline.expired():
                raise  # the function's own TimeoutError, raised in its thread
            frames, running = self._abandon(call)
            note = f"; its thread was left running ({self.stuck} stuck)" if running else ""
            raise Overran(seconds, frames, note) from None
        except asyncio.CancelledError:
            self._abandon(call)
            raise

    def close(self) -> None:
        """Let idle threads end; threads still stuck in a call end when it returns."""
        jobs, self._jobs = self._jobs, queue.SimpleQueue()
        for _ in range(self._threads):
            jobs.put(None)
        self._threads = 0

    def _abandon(self, call: _Call) -> tuple[list[tuple[str, int, str]], bool]:
        """Give up on ``call``; return where its thread is, and whether it is still running."""
        if call.thread is None or call.finished or call.abandoned:
            return [], False
        call.abandoned = True
        self.stuck += 1
        return stack_frames(sys._current_frames().get(call.thread)), True

    def _start_thread(self) -> None:
        self._threads += 1
        threading.Thread(
            target=self._work,
            args=(self._jobs,),
            name=f"palaestra-env-{next(self._names)}",
            daemon=True,  # a call stuck for good must not keep the interpreter from exiting
        ).start()

    def _work(self, jobs: queue.SimpleQueue[_Call | None]) -> None:
        while (call := jobs.get()) is not None:
            call.thread = threading.get_ident()  # before the check: see _abandon
            value: Any = None
            error: BaseException | None = None
            if not call.future.cancelled():  # abandoned while it waited in line: skip it
                try:
                    value = call.function(*call.args, **call.kwargs)
                except BaseException as raised:  # handed to the caller, whatever it is
                    error = raised
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                call.loop.call_soon_threadsafe(self._finish, call, value, error)
            del call, value, error  # hold nothing while idle

    def _finish(self, call: _Call, value: Any, error: BaseException | None) -> None:
        self._busy -= 1
        call.finished = True
        if call.abandoned:
            self.stuck -= 1
        if not call.future.done():
            if isinstance(error, StopIteration):  # a future refuses it: say what it was
                error = RuntimeError(f"StopIteration raised: {error!r}")
            if error is not None:
                call.future.set_exception(error)
            else:
                call.future.set_result(value)
