"""``BoxSpec.storage_mb`` held by watching a box's writable layer, where no quota can hold it.

A kernel quota is the real bound (the writer gets "No space left on device"): overlay2 over
xfs with project quotas gives one per container (``docker run --storage-opt size=``). Where
the kernel or the filesystem has none, ``LayerWatch`` measures the box's upper directory (what
it wrote, copy-on-write) and calls ``on_full`` (which kills the box's processes) as soon as it
holds more than the bound. Walking a large upper directory is not free, so it walks only when
the host filesystem under it has grown by more than half the room the box had left at the
last walk (a ``statvfs``, checked every ``interval`` seconds), and every ``BACKSTOP`` seconds
anyway (other writers freeing space can mask a box's growth): a quiet box costs a system call
per interval, walks come closer together as the box nears its bound, and the overshoot is
what a writer writes in one interval plus one walk. Files the box deleted but holds open
(``hidden``) count too.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

INTERVAL = 0.02
"""Seconds between two looks at the host filesystem's usage (a ``statvfs``)."""
BACKSTOP = 2.0
"""Seconds after which the layer is walked whatever the host disk did (at most a fiftieth of
the watch's time goes to walking)."""


def layer_bytes(upper: Path) -> int:
    """Bytes the files, links and directories under ``upper`` hold (``lstat`` blocks)."""
    total = 0
    for folder, directories, names in os.walk(upper):
        for name in (*directories, *names):
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
    return total


def _host_used(path: Path) -> int | None:
    try:
        info = os.statvfs(path)
    except OSError:
        return None
    return (info.f_blocks - info.f_bfree) * info.f_frsize


class LayerWatch:
    """A thread that calls ``on_full(bytes)`` when ``upper`` holds over ``limit`` bytes, and
    again each time it has grown since while still over (a full box left as it is, or made
    smaller, is left alone). ``stop`` ends it; ``pause`` lets the owner change the layer (a
    seal) without a look in between."""

    def __init__(
        self,
        upper: Path,
        limit: int,
        on_full: Callable[[int], None],
        *,
        hidden: Callable[[], int] = lambda: 0,
        interval: float = INTERVAL,
    ) -> None:
        self.upper = upper
        self.limit = limit
        self.on_full = on_full
        self.hidden = hidden
        """Bytes the box holds outside the directory tree: files it deleted but keeps open."""
        self.interval = interval
        self.fulls = 0
        """Times the layer was found over its bound."""
        self._stopped = threading.Event()
        self._paused = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="palaestra-layer-watch", daemon=True)
        self._thread.start()

    def pause(self) -> threading.Lock:
        """Hold it (``with watch.pause():``) while the layer is changed by its owner."""
        return self._paused

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        measured_at: int | None = None
        full_at: int | None = None
        room = 0
        due = 0.0
        while not self._stopped.wait(self.interval):
            used = _host_used(self.upper)
            if used is not None and measured_at is not None:
                measured_at = min(measured_at, used)  # space freed elsewhere hides no growth
                if used - measured_at < room // 2 and time.monotonic() < due:
                    continue  # the host disk grew less than half the room the box had left
            with self._paused:
                if self._stopped.is_set():
                    return
                began = time.monotonic()
                held = layer_bytes(self.upper) + self.hidden()
                spent = time.monotonic() - began
                due = began + max(BACKSTOP, 50 * spent)  # a walk at least this often
                measured_at = used
                room = max(self.limit - held, 1 << 20)  # over: look again after another MiB
                if held <= self.limit:
                    full_at = None
                elif full_at is None or held > full_at:
                    full_at = held  # killed at this size: a full box that writes no more stays
                    self.fulls += 1
                    with contextlib.suppress(Exception):
                        self.on_full(held)
