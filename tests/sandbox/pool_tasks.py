"""Top-level functions the pool tests run in worker processes (they must be importable)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def add(a: int, b: int) -> int:
    return a + b


def pid() -> int:
    return os.getpid()


def fail(message: str) -> None:
    raise ValueError(message)


def crash() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def crash_once(marker: str) -> str:
    """Crash the first worker that runs it; succeed on the retry."""
    path = Path(marker)
    if not path.exists():
        path.write_text("crashed")
        os._exit(3)
    return "second time lucky"


def sleep(seconds: float) -> str:
    time.sleep(seconds)
    return "slept"


def allocate(megabytes: int) -> int:
    return len(bytearray(megabytes * 1024 * 1024))


def spin() -> None:
    while True:
        pass


def pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def score(answer: str, expected: str) -> float:
    """A stand-in for a CPU-heavy verifier."""
    if answer == "crash":
        crash()
    return float(answer.strip() == expected)
