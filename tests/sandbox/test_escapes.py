"""Escape and abuse attempts: each is contained, and reported with a clear limit."""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
from pathlib import Path

import pytest

from palaestra.sandbox import Limit, Limits, Sandbox
from tests.sandbox.conftest import leftovers, new_leftovers


async def test_no_network_not_even_the_hosts_loopback(sandbox: Sandbox) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    port = server.getsockname()[1]
    try:
        result = await sandbox.run_python(
            "import socket\n"
            "print(sorted(name for _, name in socket.if_nameindex()))\n"
            f"socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        )
        with pytest.raises(TimeoutError):
            server.accept()  # nothing reached the host
    finally:
        server.close()
    assert result.stdout == "['lo']\n"  # a network namespace of its own, with no way out
    assert result.exit_code == 1 and result.limit == Limit.NETWORK


async def test_secrets_of_the_host_are_out_of_sight(sandbox: Sandbox) -> None:
    with tempfile.TemporaryDirectory() as host_dir:
        secret = Path(host_dir, "secret.txt")
        secret.write_text("the host's secret")
        secret.chmod(0o644)  # world-readable on the host, still invisible in the sandbox
        code = (
            "import os\n"
            f"for path in ('/etc/shadow', '/root', {str(secret)!r}, '/proc/1/environ'):\n"
            "    try:\n"
            "        print(path, open(path).read() if not os.path.isdir(path) "
            "else os.listdir(path))\n"
            "    except OSError as error:\n"
            "        print(path, 'refused', type(error).__name__)\n"
            "print(sorted(os.listdir('/etc')))\n"
        )
        result = await sandbox.run_python(code)
    assert result.ok, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "/etc/shadow refused FileNotFoundError"
    assert lines[1] == "/root refused FileNotFoundError"
    assert lines[2] == f"{secret} refused FileNotFoundError"
    assert "the host's secret" not in result.stdout
    assert "shadow" not in lines[-1] and "passwd" not in lines[-1]


async def test_writes_outside_the_work_dir_fail_or_vanish(sandbox: Sandbox) -> None:
    marker = f"palaestra-escape-{os.getpid()}"
    code = (
        f"for path in ('/usr/{marker}', '/etc/{marker}', '/{marker}', '/proc/{marker}'):\n"
        "    try:\n"
        "        open(path, 'w').write('x')\n"
        "        print(path, 'written')\n"
        "    except OSError as error:\n"
        "        print(path, 'refused', error.errno)\n"
        f"open('/tmp/{marker}', 'w').write('private tmp')\n"
        f"open('/usr/{marker}', 'w')\n"
    )
    result = await sandbox.run_python(code)
    assert "written" not in result.stdout, result.stdout
    assert result.limit == Limit.FILESYSTEM  # the last, uncaught attempt names the rule
    for path in (f"/usr/{marker}", f"/etc/{marker}", f"/{marker}", f"/tmp/{marker}"):
        assert not Path(path).exists()


async def test_symlinks_planted_in_the_work_dir_are_not_followed_when_collecting(
    sandbox: Sandbox,
) -> None:
    code = (
        "import os\n"
        "os.symlink('/etc/shadow', 'shadow.txt')\n"
        "os.symlink('/', 'host')\n"
        "open('real.txt', 'w').write('mine')\n"
    )
    result = await sandbox.run_python(code, collect=["*.txt", "host/etc/*", "host/root/*"])
    assert result.ok
    assert result.files == {"real.txt": b"mine"}  # collected with root's rights: no shadow


async def test_a_2gb_allocation_hits_the_memory_limit(sandbox: Sandbox) -> None:
    result = await sandbox.run_python("block = bytearray(2 * 1024**3)\nprint('allocated')")
    assert result.limit == Limit.MEMORY and "allocated" not in result.stdout


async def test_an_endless_loop_is_stopped_by_wall_time_or_cpu_time(sandbox: Sandbox) -> None:
    by_wall = await sandbox.run_python(
        "import time\nwhile True: time.sleep(1)", limits=Limits(wall_time=0.5)
    )
    assert by_wall.limit == Limit.WALL_TIME and by_wall.signal is not None
    by_cpu = await sandbox.run_python("while True: pass", limits=Limits(cpu_time=1))
    assert by_cpu.limit == Limit.CPU_TIME


@pytest.mark.skipif(os.geteuid() != 0, reason="RLIMIT_NPROC needs a uid of its own (root)")
async def test_a_fork_bomb_is_contained_and_its_neighbours_still_run(sandbox: Sandbox) -> None:
    bomb = "import os\nwhile True:\n    os.fork()\n"
    bombed, neighbour = await asyncio.gather(
        sandbox.run_python(bomb, limits=Limits(wall_time=5, processes=32)),
        sandbox.run_python("import subprocess\nsubprocess.run(['/bin/true'])\nprint('fine')"),
    )
    assert bombed.limit == Limit.PROCESSES
    assert neighbour.ok and neighbour.stdout == "fine\n"  # a uid each: budgets are not shared


async def test_a_1gb_file_hits_the_file_size_limit(sandbox: Sandbox) -> None:
    code = (
        "chunk = b'x' * 2**20\n"
        "with open('big.bin', 'wb') as file:\n"
        "    for _ in range(1024):\n"
        "        file.write(chunk)\n"
    )
    result = await sandbox.run_python(code, limits=Limits(file_size_mb=8))
    assert result.limit == Limit.FILE_SIZE
    in_tmp = await sandbox.run_python(code.replace("big.bin", "/tmp/big.bin"))
    assert in_tmp.limit == Limit.FILE_SIZE  # /tmp is a small private tmpfs


async def test_killing_the_parent_or_the_host_does_nothing(sandbox: Sandbox) -> None:
    code = (
        "import os, signal\n"
        f"for target in (os.getppid(), 1, {os.getpid()}):\n"
        "    try:\n"
        "        os.kill(target, signal.SIGKILL)\n"
        "        print('sent', target)\n"
        "    except OSError as error:\n"
        "        print('refused', target, error.errno)\n"
        "print('still here')\n"
    )
    result = await sandbox.run_python(code)
    assert result.ok, result.stderr
    assert f"refused {os.getpid()} 3" in result.stdout  # ESRCH: no such process in there
    assert result.stdout.endswith("still here\n")


async def test_a_daemon_that_ignores_sigterm_dies_with_the_run(sandbox: Sandbox) -> None:
    before = set(leftovers())
    code = (
        "import os, signal, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(1000)\n"
        "    os._exit(0)\n"
        "print('parent done')\n"
    )
    result = await sandbox.run_python(code)
    assert result.ok and result.stdout == "parent done\n"
    assert new_leftovers(before) == []
    stubborn = await sandbox.run_python(
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(1000)",
        limits=Limits(wall_time=0.5),
    )
    assert stubborn.limit == Limit.WALL_TIME


async def test_output_floods_are_capped_not_buffered(sandbox: Sandbox) -> None:
    limits = Limits(output_bytes=100_000)
    flood = await sandbox.run_python("while True:\n    print('x' * 10_000)", limits=limits)
    assert flood.limit == Limit.OUTPUT and len(flood.stdout) == 100_000
    errors = await sandbox.run_python(
        "import sys\nwhile True:\n    sys.stderr.write('e' * 10_000)", limits=limits
    )
    assert errors.limit == Limit.OUTPUT and len(errors.stderr) == 100_000
    exact = await sandbox.run_python("print('y' * 99_999)", limits=limits)
    assert exact.ok and len(exact.stdout) == 100_000


async def test_a_thousand_runs_leave_no_process_and_no_work_dir(
    sandbox: Sandbox, runs_dir: Path
) -> None:
    before = set(leftovers(zombies_of_init=True))
    quick = Limits(wall_time=0.2)

    async def one(index: int) -> bool:
        if index % 100 == 0:  # now and then a run that has to be killed
            result = await sandbox.run(["/bin/sleep", "10"], limits=quick)
            return result.limit == Limit.WALL_TIME
        result = await sandbox.run(["/bin/sh", "-c", "echo $0 > out", str(index)], collect=["out"])
        return result.ok and result.files == {"out": f"{index}\n".encode()}

    gate = asyncio.Semaphore(8)

    async def gated(index: int) -> bool:
        async with gate:
            return await one(index)

    outcomes = await asyncio.gather(*(gated(index) for index in range(1000)))
    assert all(outcomes)
    assert list(runs_dir.iterdir()) == []
    # even the namespace inits that bwrap leaves to PID 1 are reaped in the end
    assert new_leftovers(before, grace=20, zombies_of_init=True) == []


FILL = (
    "import os, sys\n"
    "written = 0\n"
    "try:\n"
    "    for path in sys.argv[1:]:\n"
    "        with open(path, 'wb') as file:\n"
    "            for _ in range({chunks}):\n"
    "                file.write(b'x' * 2**20)\n"
    "                file.flush()\n"
    "                written += 1\n"
    "finally:\n"
    "    print(written)\n"
)


async def test_dev_shm_is_bounded_and_dev_is_read_only(sandbox: Sandbox) -> None:
    refused = await sandbox.run_python(
        "import os\n"
        "for path in ('/dev/x', '/dev/pts/x'):\n"
        "    try:\n"
        "        open(path, 'w')\n"
        "        print(path, 'written')\n"
        "    except OSError as error:\n"
        "        print(path, 'refused')\n"
    )
    assert refused.ok and "written" not in refused.stdout, refused.stdout
    # memory_mb bounds address space, not tmpfs pages: /dev/shm must have a bound of its own
    limits = Limits(memory_mb=256, disk_mb=32)
    code = FILL.format(chunks=100)  # 100 MB: past the bound, well under the host's RAM
    shm = await sandbox.run(
        [sandbox.python, "-c", code, "/dev/shm/a", "/dev/shm/b", "/dev/shm/c"], limits=limits
    )
    assert int(shm.stdout) <= 32 and shm.limit == Limit.DISK, (shm.stdout, shm.stderr)


async def test_the_files_a_run_writes_share_one_disk_bound(sandbox: Sandbox) -> None:
    """Ten files under the per-file limit still may not fill the host's disk or RAM."""
    limits = Limits(file_size_mb=8, disk_mb=32)
    code = FILL.format(chunks=6)
    names = [f"f{index}.bin" for index in range(8)] + ["/tmp/t.bin", "/dev/shm/s.bin"]
    result = await sandbox.run([sandbox.python, "-c", code, *names], limits=limits)
    assert int(result.stdout) <= 32 and result.exit_code == 1, (result.stdout, result.stderr)
    assert result.limit == Limit.DISK
    caught = await sandbox.run_python(  # a program that catches the error is still named
        "try:\n"
        "    open('big.bin', 'wb').write(b'x' * 40 * 2**20)\n"
        "except OSError as error:\n"
        "    print(error.errno)\n",
        limits=limits.replace(file_size_mb=64),
    )
    assert caught.stdout == "28\n" and caught.limit == Limit.DISK


async def test_ptrace_and_sysv_shared_memory_are_refused_and_ordinary_programs_still_run(
    sandbox: Sandbox,
) -> None:
    code = (
        "import ctypes, multiprocessing, subprocess, threading\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('ptrace', libc.ptrace(16, 1, 0, 0), ctypes.get_errno())  # attach to init\n"
        "print('shmget', libc.shmget(0, 2**20, 0o1600), ctypes.get_errno())\n"
        "threads = [threading.Thread(target=sum, args=([1],)) for _ in range(4)]\n"
        "for thread in threads:\n"
        "    thread.start()\n"
        "for thread in threads:\n"
        "    thread.join()\n"
        "print(subprocess.run(['/bin/echo', 'child'], capture_output=True, text=True).stdout)\n"
        "if __name__ == '__main__':\n"
        "    with multiprocessing.Pool(2) as pool:\n"
        "        print(pool.map(abs, [-1, -2]))\n"
    )
    # Before the filter, the attach stopped the namespace's init: the run stalled to its
    # wall time.
    result = await sandbox.run_python(code, limits=Limits(wall_time=5))
    assert result.ok, (result.limit, result.stderr)
    assert result.stdout.splitlines() == ["ptrace -1 1", "shmget -1 1", "child", "", "[1, 2]"]


async def test_a_program_that_ignores_sigxcpu_is_named_by_the_cpu_limit(sandbox: Sandbox) -> None:
    code = "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True: pass\n"
    result = await sandbox.run_python(code, limits=Limits(cpu_time=1, wall_time=60))
    assert result.signal == 9 and result.limit == Limit.CPU_TIME


THREADS = (
    "import threading, time\n"
    "while True:\n"
    "    threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
)


async def test_a_thread_that_cannot_start_names_the_limit_it_ran_into(sandbox: Sandbox) -> None:
    by_memory = await sandbox.run_python(THREADS, limits=Limits(memory_mb=256))
    assert "can't start new thread" in by_memory.stderr and by_memory.limit == Limit.MEMORY
    by_count = await sandbox.run_python(THREADS, limits=Limits(memory_mb=4096, processes=12))
    assert "can't start new thread" in by_count.stderr and by_count.limit == Limit.PROCESSES
