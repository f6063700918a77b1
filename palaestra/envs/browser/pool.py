"""A pool of Chromium browsers: leased one per rollout, checked before each lease, replaced
when dead, all ended when the environment stops.

A browser costs seconds to start and then serves rollout after rollout (each loads its task's
page afresh), so the pool keeps the browsers it started idle between leases, up to ``size``
alive at once; a rollout beyond that waits for one to come back. A browser is checked with a
round trip to its page before it is lent: one that does not answer (crashed, killed, hung) is
ended and replaced by a new one, and counted in ``restarted``. A rollout that saw its browser
fail returns it as broken and it is ended rather than lent again. Every browser's processes die
with the process that started them, however it dies (``watchdog.py``).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from palaestra import ConfigError, EnvironmentTimeout
from palaestra.envs.browser.chromium import Browser

LEASE_WAIT = 240.0
"""Seconds a rollout waits for a free browser before it fails as a timeout."""


@dataclass
class PoolStats:
    started: int = 0
    restarted: int = 0
    leases: int = 0
    start_seconds: float = 0.0


class BrowserPool:
    """At most ``size`` browsers of ``width`` x ``height`` pixels, lent one per rollout."""

    def __init__(self, size: int, width: int, height: int, lease_wait: float = LEASE_WAIT) -> None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ConfigError(f"browser: browsers must be a whole number >= 1, not {size!r}")
        self.size, self.width, self.height = size, width, height
        self.lease_wait = lease_wait
        self.stats = PoolStats()
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[Browser] = []
        self._live: set[Browser] = set()
        self._lock = threading.Lock()

    def lease(self) -> Browser:
        """A healthy browser for one rollout: an idle one that still answers, else a new one."""
        if not self._slots.acquire(timeout=self.lease_wait):
            raise EnvironmentTimeout(
                f"browser: no free browser after {self.lease_wait:.0f} s ({self.size} at most)"
            )
        try:
            while True:
                with self._lock:
                    browser = self._idle.pop() if self._idle else None
                if browser is None:
                    browser = self._start()
                    break
                if browser.healthy():
                    break
                self._end(browser)
                with self._lock:
                    self.stats.restarted += 1
        except BaseException:
            self._slots.release()
            raise
        with self._lock:
            self.stats.leases += 1
        return browser

    def give_back(self, browser: Browser, broken: bool = False) -> None:
        """Return a leased browser: kept for the next rollout, or ended when ``broken``."""
        if broken or browser.closed:
            self._end(browser)
        else:
            with self._lock:
                self._idle.append(browser)
        self._slots.release()

    def close(self) -> int:
        """End every browser of the pool, leased or idle; how many were alive."""
        with self._lock:
            browsers = list(self._live)
            self._idle.clear()
        for browser in browsers:
            self._end(browser)
        return len(browsers)

    def live(self) -> int:
        with self._lock:
            return len(self._live)

    def _start(self) -> Browser:
        began = time.monotonic()
        browser = Browser(self.width, self.height)
        with self._lock:
            self._live.add(browser)
            self.stats.started += 1
            self.stats.start_seconds += time.monotonic() - began
        return browser

    def _end(self, browser: Browser) -> None:
        browser.close()
        with self._lock:
            self._live.discard(browser)


__all__ = ["BrowserPool", "PoolStats"]
