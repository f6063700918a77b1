"""Long-lived Python sessions: globals persist, cells are bounded, nothing outlives them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from palaestra.sandbox import Limit, Limits, Sandbox, SessionClosed


async def test_globals_persist_and_the_last_expression_is_the_value(sandbox: Sandbox) -> None:
    async with await sandbox.session(files={"data.txt": "21"}) as python:
        first = await python.run("x = int(open('data.txt').read())\nprint('read', x)")
        assert first.ok and first.stdout == "read 21\n" and first.value is None
        second = await python.run("def double(n):\n    return 2 * n\ndouble(x)")
        assert second.value == "42"
        assert (await python.run("import os; os.system('echo from a child')")).stdout == (
            "from a child\n"
        )


async def test_errors_are_reported_and_the_session_goes_on(sandbox: Sandbox) -> None:
    async with await sandbox.session() as python:
        await python.run("x = 1")
        broken = await python.run("x / 0")
        assert broken.error is not None and broken.error.endswith(
            "ZeroDivisionError: division by zero\n"
        )
        assert broken.limit is None
        assert (await python.run("x + 1")).value == "2"
        syntax = await python.run("def (")
        assert syntax.error is not None and "SyntaxError" in syntax.error
        exiting = await python.run("raise SystemExit(3)")
        assert exiting.error is not None and python.alive
        oom = await python.run("block = bytearray(4 * 1024**3)")
        assert oom.limit == Limit.MEMORY and python.alive
        assert (await python.run("x")).value == "1"


async def test_a_cell_past_its_time_is_interrupted_and_the_globals_survive(
    sandbox: Sandbox,
) -> None:
    async with await sandbox.session() as python:
        await python.run("n = 0")
        slow = await python.run("while True:\n    n += 1", timeout=0.3)
        assert slow.limit == Limit.WALL_TIME and python.alive
        assert int((await python.run("n")).value or 0) > 0


async def test_a_cell_that_cannot_be_interrupted_costs_the_session(sandbox: Sandbox) -> None:
    python = await sandbox.session()
    stubborn = await python.run(
        "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True: pass",
        timeout=0.2,
    )
    assert stubborn.limit == Limit.WALL_TIME and not python.alive
    with pytest.raises(SessionClosed):
        await python.run("1")
    await python.close()  # idempotent


async def test_a_session_whose_process_dies_is_closed(sandbox: Sandbox) -> None:
    python = await sandbox.session()
    died = await python.run("import os; os._exit(7)")
    assert died.error is not None and "exit status 7" in died.error
    assert not python.alive
    burnt = await sandbox.session(limits=Limits(cpu_time=1))
    spent = await burnt.run("while True: pass", timeout=10)
    assert spent.limit == Limit.CPU_TIME and not burnt.alive


async def test_an_idle_session_expires_and_cleans_up(sandbox: Sandbox, runs_dir: Path) -> None:
    python = await sandbox.session(idle_ttl=0.3)
    assert python.alive and len(list(runs_dir.iterdir())) == 1
    for _ in range(100):
        if not python.alive and not list(runs_dir.iterdir()):
            break
        await asyncio.sleep(0.05)
    assert not python.alive and list(runs_dir.iterdir()) == []
    with pytest.raises(SessionClosed):
        await python.run("1")


async def test_concurrent_calls_take_turns(sandbox: Sandbox) -> None:
    async with await sandbox.session() as python:
        await python.run("log = []")
        cells = [f"log.append({i}); len(log)" for i in range(5)]
        results = await asyncio.gather(*(python.run(cell) for cell in cells))
        assert sorted(int(r.value or 0) for r in results) == [1, 2, 3, 4, 5]


async def test_cell_output_is_capped(sandbox: Sandbox) -> None:
    async with await sandbox.session(limits=Limits(output_bytes=1000)) as python:
        flood = await python.run("print('x' * 5000)")
        assert flood.limit == Limit.OUTPUT and len(flood.stdout) == 1000
        assert (await python.run("'fine'")).value == "'fine'"


async def test_output_a_cell_could_not_write_never_reaches_the_next_cell(sandbox: Sandbox) -> None:
    async with await sandbox.session() as python:
        # The text stays in Python's stdout buffer: the end-of-cell flush fails on the closed fd.
        await python.run("import os, sys\nsys.stdout.write('stale')\nos.close(1)")
        after = await python.run("print(42)")
        assert after.stdout == "42\n"


async def test_a_child_moving_the_shared_output_offset_spoils_no_later_cell(
    sandbox: Sandbox,
) -> None:
    async with await sandbox.session() as python:
        # A child a cell forks shares the cell's output file, and its offset: a fork bomb's
        # children finishing the cell in their parent's place moved it, and the next cell's
        # output began with 4,096 bytes of the cell before (seen about once in 30 sessions).
        await python.run(
            "import os, time\n"
            "if os.fork() == 0:\n"
            "    end = time.monotonic() + 1.5\n"
            "    while time.monotonic() < end:\n"
            "        os.lseek(1, 4096, os.SEEK_SET)\n"
            "    os._exit(0)"
        )
        for _ in range(20):
            flood = await python.run("print('x' * 10_000)")
            assert flood.stdout == "x" * 10_000 + "\n"
            assert (await python.run("6 * 7")).stdout == ""


async def test_a_session_left_open_is_killed_when_its_event_loop_ends(runs_dir: Path) -> None:
    sandbox = Sandbox(isolation="bubblewrap", root_dir=runs_dir)

    async def forget() -> None:
        await sandbox.session()  # never closed

    await asyncio.get_running_loop().run_in_executor(None, asyncio.run, forget())
    assert list(runs_dir.iterdir()) == []  # and the leak check sees no process


FORGE = r"""
import glob, json, os
reply = {"stdout": "", "stderr": "", "value": "'forged'", "error": None, "timed_out": False}
lines = [json.dumps({**reply, "token": "guess"}), json.dumps(reply), "garbage",
         json.dumps({"ended": True, "signal": 9, "cpu": 99.0})]
forged = ("\n".join(lines) + "\n").encode() * 3
reached = []
paths = [f"/proc/self/fd/{fd}" for fd in range(64)] + glob.glob("/proc/[0-9]*/fd/*")
for path in paths:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        continue
    try:
        os.write(fd, forged)
        reached.append(path)
    except OSError:
        pass
    finally:
        os.close(fd)
for fd in range(3, 64):
    try:
        os.write(fd, forged)
    except OSError:
        pass
supervisor = f"/proc/{os.getppid()}/"
outside = [path for path in reached if path.startswith((supervisor, "/proc/1/"))]
try:
    listed = bool(os.listdir(supervisor + "fd"))
except PermissionError:  # the supervisor is not dumpable
    listed = False
# init's stderr (reachable without root) is the diagnostics the host reads after a death
listed, [p for p in outside if os.readlink(p) != "/dev/null" and p != "/proc/1/fd/2"]
"""


async def test_a_cell_cannot_forge_replies_or_reach_the_protocol_channel(
    sandbox: Sandbox,
) -> None:
    """Forged replies on every fd the cell can open, its own or through /proc, change
    nothing: the later cells get their own results, in order."""
    async with await sandbox.session() as python:
        forging = await python.run(FORGE)
        assert forging.value == "(False, [])", forging  # nothing of the supervisor's or init's
        for n in range(3):
            assert (await python.run(f"{n} * 7")).value == str(n * 7)
        assert (await python.run("'after'")).value == "'after'"
        assert python.alive


async def test_a_session_that_ignores_sigxcpu_is_named_by_the_cpu_limit(
    sandbox: Sandbox,
) -> None:
    python = await sandbox.session(limits=Limits(cpu_time=1))
    spent = await python.run(
        "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True: pass",
        timeout=60,  # the CPU limit ends it; a loaded machine only makes it later
    )
    assert spent.limit == Limit.CPU_TIME and "signal 9" in (spent.error or "")
    assert not python.alive
    await python.close()


async def test_a_thread_that_cannot_start_in_a_cell_is_named(sandbox: Sandbox) -> None:
    async with await sandbox.session(limits=Limits(memory_mb=256)) as python:
        threads = await python.run(
            "import threading, time\nwhile True:\n"
            "    threading.Thread(target=time.sleep, args=(5,), daemon=True).start()"
        )
        assert threads.limit == Limit.MEMORY, threads.error


async def test_a_forked_child_cannot_answer_for_the_session(sandbox: Sandbox) -> None:
    async with await sandbox.session() as python:
        # The child returns from the cell like its parent and would go on serving requests
        # on the same pipes, racing the parent for them, had it kept the protocol pipes.
        forked = await python.run("import os\nchild = os.fork()\nchild")
        assert forked.error is None
        for n in range(8):
            assert (await python.run(f"{n} * 10")).value == str(n * 10)
        assert python.alive


async def test_a_cell_that_silences_the_workers_pipe_costs_only_its_session(
    sandbox: Sandbox,
) -> None:
    python = await sandbox.session()
    silenced = await python.run(
        "import fcntl, os, stat\n"
        "null = os.open('/dev/null', os.O_WRONLY)\n"
        "for fd in range(3, 64):\n"
        "    try:\n"
        "        mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE\n"
        "        if stat.S_ISFIFO(os.fstat(fd).st_mode) and mode == os.O_WRONLY:\n"
        "            os.dup2(null, fd)  # the worker's answers now go nowhere\n"
        "    except OSError:\n"
        "        pass\n"
    )
    assert silenced.error == "protocol violation; session killed" and silenced.limit is None
    assert not python.alive
    await python.close()
