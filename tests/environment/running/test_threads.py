from __future__ import annotations

import asyncio
import threading

import pytest

from palaestra.environment.running.boundary import Overran
from palaestra.environment.running.threads import ThreadRunner


def _runner_threads() -> int:
    return sum(t.name.startswith("palaestra-env-") for t in threading.enumerate())


async def test_stuck_calls_are_abandoned_and_replaced_but_never_beyond_twice_the_size() -> None:
    runner = ThreadRunner(1)
    release = threading.Event()
    before = _runner_threads()
    try:
        for _ in range(2):  # each stuck call leaves its thread behind; a new one takes over
            with pytest.raises(Overran) as overran:
                await runner.run(0.1, release.wait, 10)
            assert "its thread was left running" in overran.value.note
        assert runner.stuck == 2
        assert _runner_threads() - before == 2
        with pytest.raises(Overran) as queued:  # no third thread: it waits in line, in vain
            await runner.run(0.1, lambda: "never started")
        assert queued.value.note == ""  # it never ran, so no thread was lost to it
        assert _runner_threads() - before == 2
    finally:
        release.set()
    while runner.stuck:  # the stuck threads come back once their calls return
        await asyncio.sleep(0.01)
    assert await runner.run(1.0, lambda: "served") == "served"
    runner.close()


async def test_an_exception_in_a_thread_reaches_the_caller_with_its_traceback() -> None:
    def broken() -> None:
        raise KeyError("inner")

    runner = ThreadRunner(2)
    with pytest.raises(KeyError) as caught:
        await runner.run(1.0, broken)
    assert caught.traceback[-1].name == "broken"
    runner.close()
