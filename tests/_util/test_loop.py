"""``LoopThread``: one event loop in a thread of its own, for plain code and other loops."""

from __future__ import annotations

import asyncio
import threading

import pytest

from palaestra._util.loop import LoopThread


async def answer(value: int, delay: float = 0.0) -> int:
    await asyncio.sleep(delay)
    return value


def test_plain_code_runs_a_coroutine_on_the_loop_s_thread_and_gets_its_result() -> None:
    looped = LoopThread("test-loop")
    try:

        async def where() -> str:
            return threading.current_thread().name

        assert looped.run(answer(7)) == 7
        assert looped.run(where()) == "test-loop"
    finally:
        looped.stop()


def test_a_coroutine_past_its_timeout_is_cancelled_on_the_loop() -> None:
    looped = LoopThread("test-loop")
    cancelled = threading.Event()

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    try:
        with pytest.raises(TimeoutError):
            looped.run(slow(), timeout=0.05)
        assert cancelled.wait(5)
    finally:
        looped.stop()


def test_running_on_the_loop_from_its_own_thread_is_refused_not_a_deadlock() -> None:
    looped = LoopThread("test-loop")

    async def nested() -> int:
        return looped.run(answer(1))

    try:
        with pytest.raises(RuntimeError, match="called from its own event loop"):
            looped.run(nested(), timeout=5)
    finally:
        looped.stop()


def test_another_loop_awaits_a_coroutine_on_it_without_blocking() -> None:
    looped = LoopThread("test-loop")

    async def both() -> list[int]:
        return list(await asyncio.gather(looped.wait(answer(1, 0.05)), answer(2, 0.05)))

    try:
        assert asyncio.run(both()) == [1, 2]
    finally:
        looped.stop()


def test_stop_lets_a_worker_unwind_then_ends_the_thread_and_twice_is_nothing() -> None:
    looped = LoopThread("test-loop")
    unwound = threading.Event()

    async def worker() -> None:
        try:
            await asyncio.sleep(30)
        finally:
            await asyncio.sleep(0.05)  # an await in the cleanup: it must still run
            unwound.set()

    looped.submit(worker())
    looped.stop()
    assert unwound.is_set()
    assert not looped.thread.is_alive() and looped.loop.is_closed()
    looped.stop()
