"""How a collector process runs: fast event loop, tuned cyclic GC, enough file descriptors.

These are process-wide choices, so the ``palaestra collect`` command makes them, not the
library's ``collect()`` (a program that embeds the collector owns its loop and its GC).

- uvloop when installed (``palaestra._util.loop``).
- CPython starts a young garbage collection each time the number of live container objects
  has grown by 700 since the last one, and older ones after that. Rollouts in flight are
  live objects, so while thousands of them start, the GC scans them again and again and
  finds nothing (the hot path makes no reference cycles): with thousands in flight, most of
  a run's CPU went to the GC at the default threshold, and with the one below a run costs
  about what it does with the GC off (benchmarks/results/micro.md). Cycles are still
  collected, once a million more objects are alive.
- Each rollout in flight holds a connection to the model; the usual soft limit of 1,024 open
  files would fail a run with more in flight, so it is raised to the hard limit.
- SIGTERM (what Slurm, Kubernetes and ``kill`` send) is handled like Ctrl-C: the run is
  cancelled, what finished stays written, the aggregate of it is written, and ``Terminated``
  is raised so the command can say how to resume (without a handler the process just died).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import sys
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

from palaestra._util.loop import new_event_loop

T = TypeVar("T")

YOUNG_GC_THRESHOLD = 1_000_000
"""Growth in live container objects that starts a young collection (CPython's default: 700)."""


@contextlib.contextmanager
def collector_gc() -> Iterator[None]:
    """Make young collections rare while the collector runs; restore the thresholds after."""
    thresholds = gc.get_threshold()
    gc.set_threshold(YOUNG_GC_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def raise_open_files_limit() -> None:
    """Lift the soft limit on open files to the hard limit (best effort, POSIX only)."""
    if sys.platform == "win32":
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 16)
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


class Terminated(Exception):
    """The collector received SIGTERM and stopped; finished rollouts are written."""


def run_collector(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the fastest loop, under ``collector_gc``, with enough files.

    SIGTERM cancels ``main`` (as Ctrl-C does) and raises ``Terminated``.
    """
    raise_open_files_limit()
    with collector_gc(), asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(_until_terminated(main))


async def _until_terminated(main: Coroutine[Any, Any, T]) -> T:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    terminated = False

    def on_sigterm() -> None:
        nonlocal terminated
        terminated = True
        task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or Windows
        return await main
    try:
        return await main
    except asyncio.CancelledError:
        if terminated:
            raise Terminated from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
