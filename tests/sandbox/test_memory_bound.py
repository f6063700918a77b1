"""The memory a run holds outside its address space counts against its bound.

``RLIMIT_AS`` bounds what a process maps, not pages the kernel keeps for it elsewhere: a
``memfd`` written and never mapped, socket and pipe buffers, and it is counted per process.
The run's memory cgroup (or, without one, the refusal of ``memfd_create``) closes these.
These programs hold a few hundred MB at most before they are stopped.
"""

from __future__ import annotations

import pytest

from palaestra.sandbox import Limit, Limits, Sandbox
from palaestra.sandbox import runner as runner_module

BOUND = Limits(wall_time=30, cpu_time=20, memory_mb=128, disk_mb=32)
"""At most 160 MB of host RAM (``memory_mb`` + ``disk_mb``) for the whole run."""

MEMFDS = """
import os
held = 0
chunk = b"x" * (1 << 20)
for index in range(24):  # 24 x 32 MB, written and never mapped
    fd = os.memfd_create(f"m{index}")
    for _ in range(32):
        os.write(fd, chunk)
    held += 32
    print(held, flush=True)
"""

CHILDREN = """
import os, signal
chunk = b"x" * (1 << 20)
pipes = []
for child in range(6):  # six children holding 128 MB each in memfds
    read, write = os.pipe()
    if os.fork() == 0:
        os.close(read)
        fds = [os.memfd_create("m") for _ in range(4)]
        for fd in fds:
            for _ in range(32):
                os.write(fd, chunk)
        os.write(write, b"done")
        signal.pause()
    os.close(write)
    pipes.append(read)
holding = sum(os.read(read, 4) == b"done" for read in pipes)  # "" when the child died
print("holding", holding, flush=True)
"""

SOCKETS = """
import socket
held, pairs = 0, []
for index in range(1500):  # about 200 KB queued in each pair: ~300 MB in all
    a, b = socket.socketpair()
    a.setblocking(False)
    while True:
        try:
            held += a.send(b"y" * 65536)
        except BlockingIOError:
            break
    pairs.append((a, b))
    if index % 100 == 0:
        print(held >> 20, flush=True)
print(held >> 20, flush=True)
"""


def _most_held(stdout: str) -> int:
    return max((int(line) for line in stdout.split()), default=0)


async def test_memory_held_in_memfds_counts_against_the_memory_limit(sandbox: Sandbox) -> None:
    result = await sandbox.run_python(MEMFDS, limits=BOUND)

    assert result.limit == Limit.MEMORY, (result.stdout[-200:], result.stderr[-500:])
    assert _most_held(result.stdout) <= 128 + 32, result.stdout


async def test_forked_children_share_the_runs_memory_bound(sandbox: Sandbox) -> None:
    result = await sandbox.run_python(CHILDREN, limits=BOUND)

    assert result.limit == Limit.MEMORY, (result.stdout, result.stderr[-500:])
    # each child that finished holds 128 MB: two of them would be over the run's 160 MB
    assert result.stdout in ("", "holding 0\n", "holding 1\n"), result.stdout


async def test_socket_buffers_count_against_the_memory_limit(sandbox: Sandbox) -> None:
    result = await sandbox.run_python(SOCKETS, limits=BOUND.replace(open_files=4096))

    assert result.limit == Limit.MEMORY, (result.stdout[-200:], result.stderr[-500:])
    assert _most_held(result.stdout) <= 128 + 32, result.stdout


async def test_without_a_memory_cgroup_memfd_create_is_refused_as_out_of_memory(
    runs_dir: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner_module, "find_memory_cgroups", lambda: "no cgroup here")
    sandbox = Sandbox(BOUND, isolation="bubblewrap", root_dir=str(runs_dir))

    refused = await sandbox.run_python(MEMFDS, limits=BOUND)
    plain = await sandbox.run_python("print(sum(range(10)))", limits=BOUND)

    assert "[Errno 12]" in refused.stderr and refused.stdout == "", refused.stderr[-300:]
    assert refused.limit == Limit.MEMORY
    assert plain.ok and plain.stdout == "45\n"


async def test_a_run_within_its_bound_leaves_no_cgroup_behind(sandbox: Sandbox) -> None:
    result = await sandbox.run_python("print(len(bytearray(64 << 20)))", limits=BOUND)

    assert result.ok and result.stdout == f"{64 << 20}\n", result.stderr


async def test_a_session_cell_that_fills_memfds_is_named_by_the_memory_limit(
    sandbox: Sandbox,
) -> None:
    async with await sandbox.session(limits=BOUND) as python:
        small = await python.run("len(bytearray(1 << 20))")
        big = await python.run(MEMFDS)

    assert small.ok and small.value == str(1 << 20)
    assert big.limit == Limit.MEMORY, big
