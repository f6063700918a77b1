"""A first-come-first-served bound on concurrent holders, O(1) per pass."""

from __future__ import annotations

import asyncio
import collections


class Gate:
    """At most ``limit`` holders at once, first come first served, O(1) per pass.

    ``asyncio.Semaphore`` (3.11) keeps woken waiters in its queue until they run and scans
    past them on every release: with thousands of connects queued that is quadratic.
    """

    def __init__(self, limit: int) -> None:
        self._free = limit
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()

    async def __aenter__(self) -> None:
        if self._free > 0:
            self._free -= 1
            return
        turn = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._pass_on()  # the slot was handed over just as we were cancelled
            raise

    async def __aexit__(self, *_: object) -> None:
        self._pass_on()

    def _pass_on(self) -> None:
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():  # a cancelled waiter's future is done: skip it
                turn.set_result(None)
                return
        self._free += 1
