"""What a sandboxed run may use (``Limits``) and how the rule it ran into is named (``Limit``)."""

from __future__ import annotations

import dataclasses
import enum
import math
import os
import resource
import signal
from dataclasses import dataclass
from typing import Any

_MB = 1024 * 1024


class Limit(enum.StrEnum):
    """The sandbox rule a run ran into: a resource limit or a denied capability."""

    WALL_TIME = "wall_time"
    CPU_TIME = "cpu_time"
    MEMORY = "memory"
    PROCESSES = "processes"
    FILE_SIZE = "file_size"
    DISK = "disk"
    OPEN_FILES = "open_files"
    OUTPUT = "output"
    NETWORK = "network"
    FILESYSTEM = "filesystem"
    FILES_OUT = "files_out"
    """More files matched ``collect`` than its ``max_files``: raised, never a cut result."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of one sandboxed run (or of one Python session).

    ``wall_time`` and ``output_bytes`` are enforced from outside (the run is killed); the
    others are kernel rlimits set in the child. ``cpu_time`` is whole seconds of CPU (rounded
    up); ``memory_mb`` is address space, so leave room for the interpreter (about 30 MB for
    Python) and for thread stacks. ``processes`` counts every process and thread of the run.
    ``output_bytes`` caps stdout and stderr each. In a session, ``wall_time`` bounds each call
    and ``cpu_time`` the whole session.

    ``disk_mb`` bounds everything the run writes, together: its work dir, ``/tmp`` and
    ``/dev/shm`` are one size-limited tmpfs (so the bytes are RAM, or swap, never host disk,
    and are gone when the run ends). Without root (no tmpfs of our own on the host) ``/tmp``
    and ``/dev/shm`` get ``disk_mb`` each and the work dir is bounded per file only.

    Run as root with a memory cgroup of its own (``cgroup``), the run as a whole, every
    process together, holds at most ``memory_mb + disk_mb`` of host RAM (``+ 2 * disk_mb``
    without the one tmpfs): what its processes touch, ``memfd``s and tmpfs files even when
    nothing maps them, pipe and socket buffers, and other kernel memory. A run that reaches
    it is stopped by the kernel and ends with ``Limit.MEMORY``. Without one (not root, or no
    memory controller to use) ``memory_mb`` bounds each process's address space only,
    ``memfd_create`` fails with ``ENOMEM`` and ``/tmp`` and ``/dev/shm`` keep their
    ``disk_mb`` bound.
    """

    wall_time: float = 10.0
    cpu_time: float = 10.0
    memory_mb: int = 1024
    processes: int = 64
    file_size_mb: int = 64
    open_files: int = 256
    output_bytes: int = 1_000_000
    disk_mb: int = 256

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            if not getattr(self, field.name) > 0:
                raise ValueError(f"Limits.{field.name} must be positive")

    def replace(self, **changes: Any) -> Limits:
        return dataclasses.replace(self, **changes)

    def rlimits(self) -> dict[int, tuple[int, int]]:
        """The kernel limits (soft, hard) to set in the child before it runs anything."""
        cpu = max(1, math.ceil(self.cpu_time))
        return {
            # SIGXCPU at the soft limit, SIGKILL a second later if it is ignored.
            resource.RLIMIT_CPU: (cpu, cpu + 1),
            resource.RLIMIT_AS: (self.memory_mb * _MB,) * 2,
            resource.RLIMIT_NPROC: (self.processes,) * 2,
            resource.RLIMIT_FSIZE: (self.file_size_mb * _MB,) * 2,
            resource.RLIMIT_NOFILE: (self.open_files,) * 2,
            resource.RLIMIT_CORE: (0, 0),
        }

    def prlimit_args(self) -> list[str]:
        """The same limits as arguments of util-linux ``prlimit``."""
        names = {
            resource.RLIMIT_CPU: "cpu",
            resource.RLIMIT_AS: "as",
            resource.RLIMIT_NPROC: "nproc",
            resource.RLIMIT_FSIZE: "fsize",
            resource.RLIMIT_NOFILE: "nofile",
            resource.RLIMIT_CORE: "core",
        }
        return [f"--{names[key]}={soft}:{hard}" for key, (soft, hard) in self.rlimits().items()]

    def apply(self) -> None:
        """Set the rlimits on the calling process (used in a child before ``exec``)."""
        for key, (soft, hard) in self.rlimits().items():
            resource.setrlimit(key, (soft, hard))


# The last line of a Python traceback (or a shell's complaint) names the rule that was hit.
# This is advisory: the program itself writes it. Wall time, CPU and output are measured
# from outside and cannot be faked this way.
_ERROR_PATTERNS: tuple[tuple[Limit, tuple[str, ...]], ...] = (
    (Limit.MEMORY, ("MemoryError", "[Errno 12]", "Cannot allocate memory")),
    (Limit.FILE_SIZE, ("[Errno 27]", "File too large")),
    (Limit.DISK, ("[Errno 28]", "No space left", "Disk quota exceeded")),
    (Limit.OPEN_FILES, ("[Errno 24]", "Too many open files")),
    (Limit.PROCESSES, ("[Errno 11]", "Resource temporarily unavailable")),
    (
        Limit.NETWORK,
        (
            "[Errno 101]",
            "[Errno 99]",
            "[Errno 97]",
            "[Errno 111]",
            "Network is unreachable",
            "Connection refused",
            "name resolution",
            "gaierror",
        ),
    ),
    (Limit.FILESYSTEM, ("[Errno 30]", "Read-only file system", "[Errno 13]", "Permission denied")),
)


def limit_from_error(text: str, limits: Limits | None = None) -> Limit | None:
    """The rule named by the last error line of an error output, if any.

    Traceback frames (indented) and ``Traceback ...`` headers are skipped: when several
    processes fail at once, a half-written traceback may come last. ``limits`` tells a
    thread that could not start for lack of memory from one that hit ``processes``.
    """
    lines = text.strip().splitlines()
    # Another process's traceback may cut in between a frame's indent and its source line,
    # leaving the source (``os.fork()``) at the start of a line: a line that also occurs as
    # an indented frame is such an echo, not an error line.
    echoes = {line.strip() for line in lines if line[:1].isspace()}
    for line in reversed(lines):
        if not line.strip() or line[0].isspace() or line.startswith("Traceback "):
            continue
        if line.strip() in echoes:
            continue
        if "can't start new thread" in line:
            return thread_limit(limits)
        for limit, patterns in _ERROR_PATTERNS:
            if any(pattern in line for pattern in patterns):
                return limit
        return None
    return None


def thread_limit(limits: Limits | None) -> Limit:
    """The limit a thread that could not start ran into (Python says the same for both).

    The one of ``memory_mb`` and ``processes`` that allows fewer threads: each thread takes
    a stack (``RLIMIT_STACK``, which the run inherits) and, with glibc, a 64 MB malloc arena
    of address space (measured: benchmarks/results/micro.md).
    """
    if limits is None:
        return Limit.PROCESSES
    stack = resource.getrlimit(resource.RLIMIT_STACK)[0]
    stack_mb = 8 if stack == resource.RLIM_INFINITY else stack / _MB
    by_memory = limits.memory_mb / (stack_mb + 64)
    return Limit.MEMORY if by_memory < limits.processes else Limit.PROCESSES


def limit_from_kill(cpu_spent: float | None, duration: float, limits: Limits) -> Limit | None:
    """Whether a SIGKILL the sandbox did not send came from the CPU rlimit's hard limit.

    The kernel sends it, without a word, a second past the soft limit to a program that
    ignored the SIGXCPU it got there. It is named when the run had spent at least the soft
    limit: the CPU time we read can fall short of what the kernel counted (measured on a
    loaded VM: benchmarks/results/micro.md), so the hard limit itself is too strict a test.
    ``cpu_spent`` is the run's CPU time when it could be read; otherwise the most the run
    could have spent, ``duration`` on every core, must reach the soft limit.
    """
    soft = limits.rlimits()[resource.RLIMIT_CPU][0]
    if cpu_spent is None:
        cpu_spent = duration * (os.cpu_count() or 1)
    return Limit.CPU_TIME if cpu_spent >= soft else None


def limit_from_signal(signum: int | None) -> Limit | None:
    """The limit a death by ``signum`` means: the kernel sends these when an rlimit is hit."""
    if signum == signal.SIGXCPU:
        return Limit.CPU_TIME
    if signum == signal.SIGXFSZ:
        return Limit.FILE_SIZE
    return None
