"""The worker side of ``WorkerPool``: run pickled calls one at a time, under per-task limits.

Started by the pool as a plain ``python -c`` (not ``multiprocessing``: nothing of the
parent's ``__main__`` is re-run here). Protocol (a ``multiprocessing`` connection, pickled
tuples): the worker says ``b"ready"``, then for each
``(function, args, kwargs, memory_mb, cpu_seconds)`` it answers ``("ok", value)``,
``("error", exception | None, traceback_text)`` or ``("limit", "memory")``. After a memory
limit the worker exits (its heap is suspect) and the pool replaces it. A CPU limit kills the
worker with SIGXCPU; a wall-clock timeout is enforced by the pool, which kills the worker.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import math
import os
import pickle
import resource
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection

_MB = 1024 * 1024


def main() -> None:
    """Entry point of a worker process: ``python -c BOOTSTRAP FD PARENT_PID [MODULE...]``."""
    fd, parent, *preload = sys.argv[1:]
    serve(Connection(int(fd)), int(parent), tuple(preload))


def serve(conn: Connection, parent: int, preload: tuple[str, ...]) -> None:
    """The worker's main loop."""
    _die_with_parent(parent)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # a chatty verifier must not write into the collector's console
    for module in preload:
        importlib.import_module(module)
    conn.send_bytes(b"ready")
    while True:
        try:
            request = conn.recv_bytes()
        except (EOFError, OSError):
            return
        reply, fatal = run_request(request)
        try:
            conn.send_bytes(reply)
        except OSError:
            return
        if fatal:
            os._exit(0)


def run_request(request: bytes) -> tuple[bytes, bool]:
    """Run one pickled call; return the pickled reply and whether the worker must exit."""
    try:
        function, args, kwargs, memory_mb, cpu_seconds = pickle.loads(request)
    except BaseException as error:  # the task's module cannot be imported here, ...
        return _error_reply(error), False
    restore = _limit(memory_mb, cpu_seconds)
    try:
        value = function(*args, **kwargs)
    except MemoryError:
        restore()
        return pickle.dumps(("limit", "memory")), True
    except BaseException as error:  # the function's own failure: sent back to the caller
        restore()
        return _error_reply(error), False
    restore()
    try:
        return pickle.dumps(("ok", value)), False
    except Exception as error:
        problem = TypeError(f"the result of {function!r} cannot be pickled: {error}")
        return _error_reply(problem), False


def _limit(memory_mb: int | None, cpu_seconds: float | None) -> Callable[[], None]:
    """Lower the soft limits for one task (relative to what the worker already uses)."""
    saved = {key: resource.getrlimit(key) for key in (resource.RLIMIT_AS, resource.RLIMIT_CPU)}
    if memory_mb is not None:
        _lower(resource.RLIMIT_AS, _address_space() + memory_mb * _MB)
    if cpu_seconds is not None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        _lower(resource.RLIMIT_CPU, math.ceil(usage.ru_utime + usage.ru_stime + cpu_seconds))

    def restore() -> None:
        for key, limits in saved.items():
            resource.setrlimit(key, limits)

    return restore


def _lower(key: int, soft: int) -> None:
    _, hard = resource.getrlimit(key)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(key, (soft, hard))


def _address_space() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _error_reply(error: BaseException) -> bytes:
    trace = "".join(traceback.format_exception(error))
    try:
        reply = pickle.dumps(("error", error, trace))
        pickle.loads(reply)  # some exceptions pickle but cannot be rebuilt
    except Exception:
        error_text = f"{type(error).__name__}: {error}"
        reply = pickle.dumps(("error", None, f"{trace}\n{error_text}"))
    return reply


def _die_with_parent(parent: int) -> None:
    """Exit when the pool's process dies, even in the middle of a task."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:  # where prctl is unavailable
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()
