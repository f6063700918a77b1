"""``Machine``: one rollout's sandboxed machine: a work dir, a persistent shell, an editor.

The machine owns its work dir (``/work`` inside the sandbox, a bounded tmpfs as root) and
its sandbox uid for its whole life, so a shell that ends (``exit``, a command that could
not be interrupted, the memory bound) is replaced by a new one over the same files. The
shell starts on the first command and everything is killed and removed in ``close``. ::

    machine = Machine(Sandbox(isolation="bubblewrap"), Limits(processes=64))
    (await machine.run("cd /work && echo hi > a.txt")).text()   # "[exit status 0]"
    machine.editor.view("a.txt")
    await machine.close()
"""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess

from palaestra.environment.machine.editor import Editor
from palaestra.environment.machine.shell import ShellEnded, ShellProcess, ShellResult
from palaestra.sandbox import Limit, Limits, Sandbox
from palaestra.sandbox.isolation import WORK_DIR
from palaestra.sandbox.process import supervise
from palaestra.sandbox.workdir import WorkDir


class Machine:
    """Start nothing until used; ``close()`` (or ``async with``) ends everything."""

    def __init__(
        self,
        sandbox: Sandbox,
        limits: Limits | None = None,
        *,
        idle_ttl: float = 1800.0,
        head_bytes: int = 6000,
        tail_bytes: int = 4000,
        files: dict[str, str | bytes] | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.limits = limits or sandbox.limits
        self.idle_ttl = idle_ttl
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self._files = dict(files or {})
        self._work: WorkDir | None = None
        self._uid: int | None = None
        self._editor: Editor | None = None
        self._shell: ShellProcess | None = None
        self._lock = asyncio.Lock()
        self._closed = False
        self._started = False
        self.restarts = 0
        """Shells started after the first (the previous one had ended)."""

    @property
    def work_dir(self) -> WorkDir:
        """The machine's work dir, made (with the initial ``files``) on first use."""
        if self._closed:
            raise ShellEnded("the machine is closed")
        if self._work is None:
            self.sandbox.isolation  # noqa: B018 (decides the isolation, once, before the work dir)
            uids = self.sandbox._uids
            self._uid = uids.acquire() if uids else None
            try:
                self._work = self.sandbox.work_dir(self._uid, self.limits)
                self._work.write(self._files)
            except BaseException:
                self._release()
                raise
        return self._work

    @property
    def inside(self) -> str:
        """The work dir's path as commands in the sandbox see it."""
        if self.sandbox.isolation == "bubblewrap":
            return WORK_DIR
        return str(self.work_dir.path)

    @property
    def editor(self) -> Editor:
        if self._editor is None:
            work = self.work_dir
            self._editor = Editor(work.path, self.inside, owner=self._uid)
        return self._editor

    async def run(self, command: str, *, timeout: float = 60.0) -> ShellResult:
        """Run ``command`` in the shell (started, or restarted with a note, as needed)."""
        if "\0" in command:
            raise ValueError("a command cannot contain a NUL byte")
        async with self._lock:
            note = ""
            if self._shell is not None and not self._shell.alive:
                await self._shell.stop()
                self._shell = None
                note = "the earlier shell had ended"
            shell = self._shell or await self._start()
            try:
                result = await shell.run(command, timeout, self.head_bytes, self.tail_bytes)
            except ShellEnded as error:
                self._shell = None
                return ShellResult("", "", 0, None, timeout, ended=f"{error}; {_KEPT}")
            except BaseException:  # cancelled mid-command: the shell's state is unknown
                await shell.stop()
                self._shell = None
                raise
            if result.ended is not None:
                self._shell = None
            if note:
                return dataclasses.replace(result, note=f"{note}: this ran in a new shell; {_KEPT}")
            return result

    async def check(self, command: str, *, timeout: float = 120.0) -> ShellResult:
        """Run ``command`` for a verifier: the agent's shell and everything it started are
        stopped first, and ``command`` runs in a new sandboxed ``bash -c`` over the same
        files, so nothing the agent left in its shell (a function named ``cat``, a changed
        directory, a process still writing) can answer for it. Its stdout comes before its
        stderr; ``status`` is ``None`` when it ran past ``timeout`` (then ``timed_out``)."""
        async with self._lock:
            shell, self._shell = self._shell, None
            if shell is not None:
                await shell.stop()
            work = self.work_dir
            limits = self.limits.replace(wall_time=timeout)
            argv = ["/bin/bash", "--noprofile", "--norc", "-c", command]
            process = await self.sandbox._launch(
                argv, work, self._uid, limits, None, subprocess.DEVNULL
            )
            try:
                outcome = await supervise(process, limits)
            finally:
                if process.returncode is None:
                    process.kill_now()
                process.close()
        data = outcome.stdout + outcome.stderr
        head = data[: self.head_bytes].decode(errors="replace")
        tail = data[self.head_bytes :][-self.tail_bytes :].decode(errors="replace")
        timed_out = outcome.limit is Limit.WALL_TIME
        status = None if timed_out else outcome.status
        return ShellResult(head, tail, len(data), status, timeout, timed_out=timed_out)

    async def close(self) -> None:
        """Kill the shell and everything it started, remove the work dir. Idempotent."""
        self._closed = True
        async with self._lock:
            shell, self._shell = self._shell, None
            if shell is not None:
                await shell.stop()
            self._release()

    async def __aenter__(self) -> Machine:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def _start(self) -> ShellProcess:
        work = self.work_dir
        shell = await ShellProcess.start(
            self.sandbox,
            work,
            self._uid,
            self.limits,
            idle_ttl=self.idle_ttl,
            reply_bytes=self.head_bytes + self.tail_bytes,
        )
        self.restarts += self._started
        self._started = True
        if self._closed:  # closed while the shell started
            await shell.stop()
            raise ShellEnded("the machine was closed during the call")
        self._shell = shell
        return shell

    def _release(self) -> None:
        if self._work is not None:
            self._work.remove()
            self._work = None
        uids = self.sandbox._uids
        if uids and self._uid is not None:
            uids.release(self._uid)
            self._uid = None
        self._editor = None


_KEPT = "files in the work dir are kept; the current directory and variables are reset"
