"""A persistent bash in the sandbox: one process per machine, driven one command at a time.

The host end of ``shell_program`` (the supervisor inside bubblewrap that owns the bash and
frames each command's output). ``ShellProcess.run`` sends one command and reads one reply;
``ShellResult.text`` is what a model reads: the output (head and tail kept, the number of
bytes dropped said), then a line with the exit status, the timeout or the shell's end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from palaestra.environment.kinds.machine.shell_program import GRACE
from palaestra.errors import PalaestraError
from palaestra.sandbox.limits import Limits
from palaestra.sandbox.process import SandboxProcess

if TYPE_CHECKING:
    from palaestra.sandbox import Sandbox
    from palaestra.sandbox.machines.provider import Box
    from palaestra.sandbox.workdir import WorkDir

_PROGRAM = Path(__file__).with_name("shell_program.py")
_START_TIMEOUT = 30.0


class ShellEnded(PalaestraError):
    """The shell's sandbox process is gone (it did not start, was killed or crashed)."""


@dataclass(frozen=True, slots=True)
class ShellResult:
    """What one command did. ``head``/``tail``: the first and last bytes of its output
    (stdout and stderr interleaved); ``total``: bytes it wrote; ``status``: its exit status
    (``None`` if it did not finish); ``ended``: why the shell ended with it, if it did."""

    head: str
    tail: str
    total: int
    status: int | None
    timeout: float
    timed_out: bool = False
    interrupted: str | None = None
    ended: str | None = None
    note: str | None = None
    """Said before the output (e.g. that the command ran in a new shell)."""

    @property
    def dropped(self) -> int:
        """Bytes of output the model does not see (between head and tail)."""
        return max(0, self.total - len(self.head.encode()) - len(self.tail.encode()))

    @property
    def output(self) -> str:
        if not self.dropped:
            return self.head + self.tail
        note = f"[... {self.dropped} bytes of output dropped (of {self.total}) ...]"
        return f"{self.head.rstrip(chr(10))}\n{note}\n{self.tail.lstrip(chr(10))}"

    def text(self) -> str:
        """The command's output and a closing line saying how it ended."""
        output = self.output.rstrip("\n")
        lines = [f"[{self.note}]"] if self.note else []
        if output:
            lines.append(output)
        if self.timed_out:
            how = (
                "it was interrupted (SIGINT)"
                if self.interrupted == "SIGINT"
                else "it did not stop on SIGINT and was killed"
            )
            lines.append(f"[timed out after {self.timeout:g} s: {how}]")
        if self.ended is not None:
            lines.append(f"[{self.ended}]")
        elif self.status is not None:
            lines.append(f"[exit status {self.status}]")
        return "\n".join(lines) if lines else "(no output)"


class ShellProcess:
    """The supervisor process of one machine's shell, over the machine's work dir."""

    def __init__(self, process: SandboxProcess, limits: Limits) -> None:
        self.process = process
        self.limits = limits
        self._watcher = asyncio.create_task(self._watch())

    @classmethod
    async def start(
        cls,
        sandbox: Sandbox,
        work: WorkDir,
        uid: int | None,
        limits: Limits,
        *,
        idle_ttl: float,
        reply_bytes: int,
    ) -> ShellProcess:
        command = [sandbox.python, "-B", "-E", "-s", "-c", _PROGRAM.read_text(), repr(idle_ttl)]
        process = await sandbox._launch(
            command,
            work,
            uid,
            limits,
            None,
            subprocess.DEVNULL,
            capture_stderr=True,
            stream_limit=8 * reply_bytes + 2**16,  # JSON may escape a byte as \\uXXXX
            protocol=True,
        )
        return await cls._started(process, limits)

    @classmethod
    async def start_in_box(
        cls, box: Box, limits: Limits, *, idle_ttl: float, reply_bytes: int
    ) -> ShellProcess:
        """The shell of a machine in ``box``: as the image's user, in its workdir. The
        supervisor runs under the box's ``python3`` (standard library only)."""
        command = ["python3", "-B", "-E", "-s", "-c", _PROGRAM.read_text(), repr(idle_ttl)]
        process = await box.launch(
            command,
            stdin=subprocess.DEVNULL,
            stream_limit=8 * reply_bytes + 2**16,
            protocol=True,
        )
        return await cls._started(process, limits)

    @classmethod
    async def _started(cls, process: SandboxProcess, limits: Limits) -> ShellProcess:
        """Wait for the supervisor's first line (it is up) or say why it did not start."""
        shell = cls(process, limits)
        try:
            line = await asyncio.wait_for(process.stdout.readline(), _START_TIMEOUT)
            if not line:
                raise ShellEnded(f"the shell did not start: {await shell.stderr()}")
        except BaseException:
            await shell.stop()
            raise
        return shell

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def run(self, command: str, timeout: float, head: int, tail: int) -> ShellResult:
        """Run ``command``; raises ``ShellEnded`` if the process is gone or answers no more."""
        stdin = self.process.stdin
        if not self.alive or stdin is None or stdin.is_closing():
            raise ShellEnded("the shell is gone")
        request = {"command": command, "timeout": timeout, "head": head, "tail": tail}
        stdin.write(json.dumps(request).encode() + b"\n")
        try:
            line = await asyncio.wait_for(self.process.stdout.readline(), timeout + GRACE + 10)
        except (TimeoutError, ValueError) as error:  # stuck, or a line over the stream limit
            await self.stop()
            raise ShellEnded(f"the shell stopped answering ({type(error).__name__})") from error
        if not line:
            stderr = await self.stderr()
            await self.stop()
            raise ShellEnded(f"the shell's process ended{': ' + stderr if stderr else ''}")
        reply: dict[str, Any] = json.loads(line)
        ended = reply.get("ended")
        result = ShellResult(
            head=str(reply.get("head", "")),
            tail=str(reply.get("tail", "")),
            total=int(reply.get("total", 0)),
            status=reply.get("status"),
            timeout=timeout,
            timed_out=bool(reply.get("timed_out")),
            interrupted=reply.get("interrupted"),
            ended=_ending(ended, self.process.oom_kills() > 0) if ended is not None else None,
        )
        if ended is not None:
            await self.stop()
        return result

    async def stop(self) -> None:
        """Kill the process and everything it started (idempotent)."""
        if self.process.returncode is None:
            await self.process.stop()
        if self._watcher is not asyncio.current_task():
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        self.process.close()

    async def stderr(self) -> str:
        stream = self.process.stderr
        if stream is None:
            return ""
        with contextlib.suppress(TimeoutError):
            data = await asyncio.wait_for(stream.read(4096), 1.0)
            return data.decode(errors="replace").strip()
        return ""

    async def _watch(self) -> None:
        """Reap the process when it ends by itself; kill it if the event loop goes down."""
        try:
            await self.process.wait()
        finally:
            if self.process.returncode is None:
                self.process.kill_now()


def _ending(ended: dict[str, Any], memory_full: bool) -> str:
    """The note that tells the model its shell ended and what a new one keeps."""
    if memory_full:
        how = "was killed at the memory limit"
    elif "signal" in ended:
        how = f"was killed (signal {ended['signal']})"
    else:
        how = f"exited with status {ended.get('exit_code')}"
    return (
        f"the shell {how}; the next command starts a new shell in the work dir "
        "(files are kept; the current directory, variables and background jobs are not)"
    )
