"""The warm worker pool: results, errors, crashes, limits, retries, counters, clean-up."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from palaestra.errors import SandboxLimitExceeded, WorkerCrash, WorkerTimeout
from palaestra.sandbox import WorkerPool
from palaestra.types import FailureKind
from tests.sandbox import pool_tasks as tasks
from tests.sandbox.conftest import leftovers


async def test_nothing_starts_before_the_first_task_and_aclose_ends_everything() -> None:
    before = set(leftovers())
    pool = WorkerPool(2)
    assert pool.stats().workers == 0 and set(leftovers()) == before
    assert await pool.run(tasks.add, 2, 3) == 5
    assert pool.stats().workers == 2 and len(set(leftovers()) - before) == 2
    await pool.aclose()
    assert pool.stats().workers == 0  # and the leak check finds none of them


async def test_tasks_spread_over_warm_workers_that_outlive_errors() -> None:
    async with WorkerPool(2) as pool:
        pids = await asyncio.gather(*(pool.run(tasks.pid_after, 0.2) for _ in range(4)))
        assert len(set(pids)) == 2 and os.getpid() not in pids
        with pytest.raises(ValueError, match="bad input") as raised:
            await pool.run(tasks.fail, "bad input")
        assert "raised in a pool worker" in raised.value.__notes__[0]
        assert set(await asyncio.gather(*(pool.run(tasks.pid) for _ in range(4)))) <= set(pids)
        stats = pool.stats()
        assert (stats.tasks, stats.completed, stats.errors, stats.failures) == (9, 8, 1, 0)
        assert (stats.crashes, stats.restarts, stats.busy, stats.queued) == (0, 0, 0, 0)


async def test_a_crashed_worker_is_replaced_and_its_task_retried_once(tmp_path: Path) -> None:
    async with WorkerPool(1) as pool:
        first = await pool.run(tasks.pid)
        assert await pool.run(tasks.crash_once, str(tmp_path / "marker")) == "second time lucky"
        assert await pool.run(tasks.pid) != first
        stats = pool.stats()
        assert (stats.crashes, stats.retries, stats.failures, stats.workers) == (1, 1, 0, 1)


async def test_a_task_that_crashes_workers_twice_fails_as_worker_crash() -> None:
    async with WorkerPool(1) as pool:
        with pytest.raises(WorkerCrash, match="SIGKILL") as raised:
            await pool.run(tasks.crash)
        assert raised.value.kind == FailureKind.WORKER_CRASH
        assert await pool.run(tasks.add, 1, 1) == 2  # the pool carries on
        stats = pool.stats()
        assert (stats.crashes, stats.retries, stats.failures, stats.restarts) == (2, 1, 1, 2)


async def test_a_task_past_its_timeout_is_killed_and_fails_as_timeout() -> None:
    async with WorkerPool(1, timeout=0.3) as pool:
        with pytest.raises(WorkerTimeout) as raised:
            await pool.run(tasks.sleep, 60)
        assert raised.value.kind == FailureKind.TIMEOUT
        assert await pool.run(tasks.sleep, 0.5, timeout=5) == "slept"  # per-task override
        assert pool.stats().timeouts == 2


async def test_memory_and_cpu_caps_fail_as_sandbox_limit() -> None:
    async with WorkerPool(1) as pool:
        with pytest.raises(SandboxLimitExceeded) as memory:
            await pool.run(tasks.allocate, 1024, memory_mb=256)
        assert memory.value.kind == FailureKind.SANDBOX_LIMIT and memory.value.limit == "memory"
        assert await pool.run(tasks.allocate, 64, memory_mb=256) == 64 << 20
        with pytest.raises(SandboxLimitExceeded) as cpu:
            await pool.run(tasks.spin, cpu_seconds=0.5)
        assert cpu.value.limit == "cpu_time"
        assert pool.stats().limits == 4


async def test_only_picklable_functions_are_accepted() -> None:
    async with WorkerPool(1) as pool:
        with pytest.raises(TypeError, match="picklable"):
            await pool.run(lambda: 1)
        assert pool.stats().tasks == 0


async def test_a_cancelled_task_costs_its_worker_not_the_pool() -> None:
    async with WorkerPool(1) as pool:
        task = asyncio.create_task(pool.run(tasks.sleep, 60))
        while pool.stats().busy == 0:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await pool.run(tasks.add, 20, 22) == 42


async def test_workers_die_with_the_process_that_owns_the_pool(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import asyncio, os
        from palaestra.sandbox import WorkerPool
        from tests.sandbox import pool_tasks

        async def main():
            pool = WorkerPool(2)
            print(*await asyncio.gather(pool.run(pool_tasks.pid_after, 0.2),
                                        pool.run(pool_tasks.pid_after, 0.2)), flush=True)
            asyncio.ensure_future(pool.run(pool_tasks.spin))  # busy when its owner dies
            await asyncio.sleep(0.3)
            os._exit(0)  # no aclose, no clean-up of any kind

        asyncio.run(main())
        """
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    workers = [int(pid) for pid in done.stdout.split()]
    assert len(set(workers)) == 2
    for _ in range(100):
        if not any(Path(f"/proc/{pid}").exists() for pid in workers):
            break
        await asyncio.sleep(0.05)
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers)
