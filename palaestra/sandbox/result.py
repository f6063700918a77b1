"""``SandboxResult``: how a sandboxed run ended, and what it ran into."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field

from palaestra.errors import SandboxLimitExceeded
from palaestra.sandbox.limits import (
    Limit,
    Limits,
    limit_from_error,
    limit_from_kill,
    limit_from_signal,
)
from palaestra.sandbox.process import Outcome
from palaestra.types import FailureKind


@dataclass(frozen=True, slots=True)
class SandboxResult:
    """How a sandboxed run ended.

    ``exit_code`` is the program's exit status, ``None`` when a signal ended it (``signal``).
    ``limit`` names the sandbox rule it ran into, if any: a resource limit, or the network
    or file system being out of reach. ``stdout``/``stderr`` are at most
    ``Limits.output_bytes`` each (``Limit.OUTPUT`` when the program wrote more).
    """

    exit_code: int | None
    signal: int | None
    stdout: str
    stderr: str
    limit: Limit | None
    duration: float
    isolation: str
    files: dict[str, bytes] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """The program exited 0 within every limit."""
        return self.exit_code == 0 and self.limit is None

    @property
    def failure_kind(self) -> FailureKind | None:
        return FailureKind.SANDBOX_LIMIT if self.limit is not None else None

    def raise_for_limit(self) -> None:
        """Raise ``SandboxLimitExceeded`` (a rollout failure) if the run hit a limit."""
        if self.limit is not None:
            raise SandboxLimitExceeded(f"sandboxed code hit the {self.limit} limit", self.limit)

    @classmethod
    def of(
        cls,
        outcome: Outcome,
        isolation: str,
        *,
        duration: float,
        files: dict[str, bytes],
        limits: Limits,
        disk_full: bool = False,
        memory_full: bool = False,
    ) -> SandboxResult:
        exit_code, signum = decode_status(outcome.status, bubblewrap=isolation == "bubblewrap")
        # Measured from outside first (the run was killed, its memory cgroup's bound made
        # the kernel kill a process of it, or its disk is full), then what its death or its
        # last error line says.
        limit = outcome.limit or (Limit.MEMORY if memory_full else None)
        limit = limit or limit_from_signal(signum)
        if limit is None and signum == signal.SIGKILL:
            limit = limit_from_kill(outcome.cpu_spent, duration, limits)
        if limit is None and disk_full:
            limit = Limit.DISK
        return cls(
            exit_code=exit_code,
            signal=signum,
            stdout=outcome.stdout.decode(errors="replace"),
            stderr=outcome.stderr.decode(errors="replace"),
            limit=limit or _limit_of(exit_code, outcome.stderr, limits),
            duration=duration,
            isolation=isolation,
            files=files,
        )


def decode_status(status: int, *, bubblewrap: bool) -> tuple[int | None, int | None]:
    """(exit code, signal): bwrap reports a death by signal N as exit status 128 + N."""
    if status < 0:
        return None, -status
    if bubblewrap and 128 < status < 128 + signal.NSIG:
        return None, status - 128
    return status, None


def _limit_of(exit_code: int | None, stderr: bytes, limits: Limits) -> Limit | None:
    if exit_code:
        return limit_from_error(stderr[-4096:].decode(errors="replace"), limits)
    return None
