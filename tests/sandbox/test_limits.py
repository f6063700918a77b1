from __future__ import annotations

import resource
import signal

import pytest

from palaestra.sandbox import Limit, Limits
from palaestra.sandbox.limits import limit_from_error, limit_from_kill, limit_from_signal


def test_limits_become_rlimits_and_prlimit_arguments() -> None:
    limits = Limits(cpu_time=2.5, memory_mb=256, processes=8, file_size_mb=4, open_files=32)
    rlimits = limits.rlimits()
    assert rlimits[resource.RLIMIT_CPU] == (3, 4)  # whole seconds, rounded up; SIGKILL 1 s on
    assert rlimits[resource.RLIMIT_AS] == (256 << 20, 256 << 20)
    assert rlimits[resource.RLIMIT_NPROC] == (8, 8)
    assert rlimits[resource.RLIMIT_FSIZE] == (4 << 20, 4 << 20)
    assert rlimits[resource.RLIMIT_NOFILE] == (32, 32)
    assert rlimits[resource.RLIMIT_CORE] == (0, 0)
    assert "--as=268435456:268435456" in limits.prlimit_args()
    assert "--cpu=3:4" in limits.prlimit_args()


def test_limits_reject_nonsense_and_replace_keeps_the_rest() -> None:
    with pytest.raises(ValueError, match="wall_time"):
        Limits(wall_time=0)
    with pytest.raises(ValueError, match="memory_mb"):
        Limits(memory_mb=-1)
    changed = Limits().replace(wall_time=1.5)
    assert changed.wall_time == 1.5 and changed.memory_mb == Limits().memory_mb


@pytest.mark.parametrize(
    ("stderr", "limit"),
    [
        ("Traceback (most recent call last):\n  ...\nMemoryError\n", Limit.MEMORY),
        ("OSError: [Errno 27] File too large\n", Limit.FILE_SIZE),
        ("OSError: [Errno 28] No space left on device", Limit.DISK),
        ("BlockingIOError: [Errno 11] Resource temporarily unavailable", Limit.PROCESSES),
        ("bash: fork: retry: Resource temporarily unavailable", Limit.PROCESSES),
        ("OSError: [Errno 24] Too many open files: 'x'", Limit.OPEN_FILES),
        ("OSError: [Errno 101] Network is unreachable", Limit.NETWORK),
        ("ConnectionRefusedError: [Errno 111] Connection refused", Limit.NETWORK),
        ("OSError: [Errno 30] Read-only file system: '/usr/x'", Limit.FILESYSTEM),
        ("PermissionError: [Errno 13] Permission denied: '/root'", Limit.FILESYSTEM),
        ("ValueError: MemoryError is mentioned\nZeroDivisionError: division by zero", None),
        (  # a fork bomb: another process's traceback was cut off half-way
            "BlockingIOError: [Errno 11] Resource temporarily unavailable\n"
            'Traceback (most recent call last):\n  File "/work/main.py", line 3, in <module>\n',
            Limit.PROCESSES,
        ),
        ("", None),
    ],
)
def test_the_last_error_line_names_the_limit(stderr: str, limit: Limit | None) -> None:
    assert limit_from_error(stderr) == limit


def test_rlimit_signals_name_their_limit() -> None:
    assert limit_from_signal(signal.SIGXCPU) == Limit.CPU_TIME
    assert limit_from_signal(signal.SIGXFSZ) == Limit.FILE_SIZE
    assert limit_from_signal(signal.SIGSEGV) is None
    assert limit_from_signal(None) is None


def test_a_thread_that_cannot_start_is_named_by_the_scarcer_limit() -> None:
    error = "RuntimeError: can't start new thread\n"
    assert limit_from_error(error, Limits(memory_mb=256, processes=64)) == Limit.MEMORY
    assert limit_from_error(error, Limits(memory_mb=8192, processes=16)) == Limit.PROCESSES
    assert limit_from_error(error) == Limit.PROCESSES


def test_an_unexplained_sigkill_is_the_cpu_limit_only_if_the_cpu_was_spent() -> None:
    limits = Limits(cpu_time=2)  # SIGXCPU at 2 s, SIGKILL at 3 s
    assert limit_from_kill(3.0, 3.5, limits) == Limit.CPU_TIME
    assert limit_from_kill(2.7, 3.5, limits) == Limit.CPU_TIME  # read short of the kernel
    assert limit_from_kill(0.2, 3.5, limits) is None  # measured: it did not spend it
    assert limit_from_kill(None, 0.01, limits) is None  # could not have spent it in time
    assert limit_from_kill(None, 60.0, limits) == Limit.CPU_TIME


def test_a_source_line_another_traceback_cut_loose_does_not_hide_the_error() -> None:
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "<string>", line 3, in <module>\n'
        "    os.fork()\n"
        "BlockingIOError: [Errno 11] Resource temporarily unavailable\n"
        "Traceback (most recent call last):\n"
        '  File "<string>", line 3, in <module>\n'
        "os.fork()\n"
    )
    assert limit_from_error(stderr) == Limit.PROCESSES
