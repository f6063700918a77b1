from __future__ import annotations

import asyncio
import gc
import importlib.util
import os
import resource
import signal

import pytest

from palaestra.collection.runtime import (
    YOUNG_GC_THRESHOLD,
    Terminated,
    raise_open_files_limit,
    run_collector,
)


def test_run_collector_tunes_the_gc_only_while_it_runs() -> None:
    before = gc.get_threshold()

    async def main() -> tuple[tuple[int, int, int], str]:
        return gc.get_threshold(), type(asyncio.get_running_loop()).__module__

    during, loop_module = run_collector(main())
    assert during[0] == YOUNG_GC_THRESHOLD and during[1:] == before[1:]
    assert gc.get_threshold() == before
    if importlib.util.find_spec("uvloop") is not None:
        assert loop_module.startswith("uvloop")


def test_the_soft_open_files_limit_is_raised_to_the_hard_one() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowered = min(soft, 256)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
    try:
        raise_open_files_limit()
        raised, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        assert raised == hard or (hard == resource.RLIM_INFINITY and raised >= 1 << 16)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_sigterm_cancels_the_collector_which_finishes_its_writing_then_raises_terminated() -> None:
    cleaned_up: list[str] = []

    async def main() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.sleep(30)
        finally:
            cleaned_up.append("aggregate written")

    with pytest.raises(Terminated):
        run_collector(main())
    assert cleaned_up == ["aggregate written"]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # the handler went with the run
