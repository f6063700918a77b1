"""Run a harness' command line as a process group of its own, bounded in time.

``run_harness`` runs ``bash -c COMMAND`` in a new session (so the harness and everything it
starts share one process group), its stdout and stderr written to files (a harness that prints
a lot never blocks on a full pipe). When it exits, overruns its timeout or the rollout is
cancelled, the whole group is stopped: SIGTERM, then SIGKILL after a grace period; nothing the
harness started outlives its rollout. If this process dies the harness' shell gets SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from palaestra._util.processes import die_with

GRACE_S = 2.0
"""Seconds a harness' processes get between SIGTERM and SIGKILL."""
_TAIL_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class HarnessExit:
    """How a harness ended: its exit status (``None``: killed at its timeout)."""

    status: int | None
    stderr: Path
    stdout: Path

    def stderr_tail(self, lines: int) -> str:
        """The last ``lines`` lines of what it wrote to stderr (empty when it wrote none)."""
        return tail(self.stderr, lines)


async def run_harness(
    command: str, *, cwd: Path, env: Mapping[str, str], timeout: float, logs: Path
) -> HarnessExit:
    """Run ``command`` with ``bash -c`` in ``cwd`` until it exits or ``timeout`` seconds pass;
    its output goes to ``logs/stdout`` and ``logs/stderr``."""
    stdout, stderr = logs / "stdout", logs / "stderr"
    with stdout.open("wb") as out, stderr.open("wb") as err:
        process = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            command,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            preexec_fn=die_with(os.getpid()),
        )
    try:
        try:
            status: int | None = await asyncio.wait_for(process.wait(), timeout)
        except TimeoutError:
            status = None
    finally:  # exited, overran or cancelled: whatever it left running goes with it
        await asyncio.shield(stop_group(process))
    return HarnessExit(status, stderr, stdout)


async def stop_group(process: asyncio.subprocess.Process) -> None:
    """SIGTERM the process group led by ``process``, SIGKILL it after ``GRACE_S``, reap it."""
    if not _signal_group(process.pid, signal.SIGTERM):
        await process.wait()
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + GRACE_S
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), GRACE_S)
    while _group_alive(process.pid) and loop.time() < deadline:
        await asyncio.sleep(0.05)
    _signal_group(process.pid, signal.SIGKILL)
    await process.wait()


def _signal_group(pgid: int, signum: int) -> bool:
    """Signal group ``pgid``; whether it had a process left to signal."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    return True


def _group_alive(pgid: int) -> bool:
    return _signal_group(pgid, 0)


def tail(path: Path, lines: int) -> str:
    """The last ``lines`` lines of the file at ``path`` (at most its last 16 KiB), stripped."""
    try:
        with path.open("rb") as file:
            file.seek(0, os.SEEK_END)
            size = file.tell()
            file.seek(max(0, size - _TAIL_BYTES))
            data = file.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace").strip()
    return "\n".join(text.splitlines()[-lines:])
