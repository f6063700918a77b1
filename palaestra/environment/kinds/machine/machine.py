"""``Machine``: one rollout's sandboxed machine: a work dir, a persistent shell, an editor.

A machine runs either in the host ``Sandbox`` (a work dir of its own, below) or in a
``Box`` a sandbox provider started from a task's image (``palaestra.sandbox.machines``):
then the shell, ``check`` and the editor all work on the box's whole file system, commands
start in the image's workdir as the image's user, and the machine owns the box (``close``
closes it). The shell's supervisor is a Python program, so a box's image needs ``python3``
on its ``PATH`` (the offline Debian base has it). ::

    machine = Machine(box=await provider.start(image, BoxSpec()))
    await machine.run("cd /app && make")
    await machine.check("bash /tests/test.sh")

The sandbox machine owns its work dir (``/work`` inside the sandbox, a bounded tmpfs as root) and
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
from collections.abc import Awaitable, Callable

from palaestra.environment.kinds.machine.editor import Editor
from palaestra.environment.kinds.machine.shell import ShellEnded, ShellProcess, ShellResult
from palaestra.errors import ConfigError
from palaestra.sandbox import Limit, Limits, Sandbox
from palaestra.sandbox.isolation import WORK_DIR
from palaestra.sandbox.machines.inside import resolve_user
from palaestra.sandbox.machines.provider import Box
from palaestra.sandbox.process import SandboxProcess, supervised
from palaestra.sandbox.workdir import WorkDir

BoxSource = Box | Callable[[], Awaitable[Box | None]]
"""A box, or how to start one when the machine is first used (``None``: use the sandbox)."""


class Machine:
    """Start nothing until used; ``close()`` (or ``async with``) ends everything.

    ``box``: run in this box (or in the one this coroutine function starts on first use;
    when it gives ``None``, in ``sandbox``). With a box, ``limits`` bounds each command's
    wall time and output only: the box's ``BoxSpec`` bounds its resources; ``files`` are
    written into the image's workdir when the box is first used.
    """

    def __init__(
        self,
        sandbox: Sandbox | None = None,
        limits: Limits | None = None,
        *,
        box: BoxSource | None = None,
        idle_ttl: float = 1800.0,
        head_bytes: int = 6000,
        tail_bytes: int = 4000,
        files: dict[str, str | bytes] | None = None,
    ) -> None:
        if sandbox is None and box is None:
            raise ConfigError("a Machine needs a sandbox or a box")
        self._sandbox = sandbox
        self.limits = limits or (sandbox.limits if sandbox is not None else Limits())
        self.box: Box | None = box if isinstance(box, Box) else None
        self._box_source = None if isinstance(box, Box) else box
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
        self._starting = asyncio.Lock()
        self.restarts = 0
        """Shells started after the first (the previous one had ended)."""

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            raise ConfigError("this machine runs in a box, not in a sandbox")
        return self._sandbox

    async def ready(self) -> None:
        """Start the box if the machine was given a way to start one (once), and write the
        initial files into a box. Commands call it; call it before using ``editor``."""
        async with self._starting:
            if self._closed:
                raise ShellEnded("the machine is closed")
            if self._box_source is not None:
                source, self._box_source = self._box_source, None
                box = await source()
                if box is not None and self._closed:  # closed while the box started
                    await box.close()
                    raise ShellEnded("the machine was closed while its box started")
                if box is None and self._sandbox is None:
                    raise ConfigError("the machine's box source gave no box and it has no sandbox")
                self.box = box
            if self.box is not None and self._files:
                files, self._files = self._files, {}
                editor = self.editor
                for name, content in files.items():
                    text = content.decode() if isinstance(content, bytes) else content
                    editor.create(name, text)

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
        """The work dir's path as commands in the sandbox see it (a box: the image's
        workdir)."""
        if self.box is not None:
            return self.box.image.workdir or "/"
        if self.sandbox.isolation == "bubblewrap":
            return WORK_DIR
        return str(self.work_dir.path)

    @property
    def editor(self) -> Editor:
        """The file editor: over the work dir, or over a box's whole file system (relative
        paths from the image's workdir; new files belong to the image's user)."""
        if self._editor is None and self.box is not None:
            user = resolve_user(self.box.root, self.box.image.user)
            self._editor = Editor(
                self.box.root, "/", owner=user.uid, group=user.gid, relative_to=self.inside
            )
        if self._editor is None:
            if self._box_source is not None:
                raise ShellEnded("the machine's box is not started yet: await ready() first")
            work = self.work_dir
            self._editor = Editor(work.path, self.inside, owner=self._uid)
        return self._editor

    async def run(self, command: str, *, timeout: float = 60.0) -> ShellResult:
        """Run ``command`` in the shell (started, or restarted with a note, as needed)."""
        if "\0" in command:
            raise ValueError("a command cannot contain a NUL byte")
        await self.ready()
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

    async def check(
        self, command: str, *, timeout: float = 120.0, user: str | None = None
    ) -> ShellResult:
        """Run ``command`` for a verifier: the agent's shell and everything it started are
        stopped first, and ``command`` runs in a new sandboxed ``bash -c`` over the same
        files, so nothing the agent left in its shell (a function named ``cat``, a changed
        directory, a process still writing) can answer for it. Its stdout comes before its
        stderr; ``status`` is ``None`` when it ran past ``timeout`` (then ``timed_out``).
        ``user``: in a box, who runs it (default the image's user; e.g. ``"root"`` for a
        Harbor task's tests); the sandbox has one user only."""
        if user is not None and self.box is None and self._box_source is None:
            raise ConfigError("check(user=...) needs a machine in a box")
        await self.ready()
        async with self._lock:
            shell, self._shell = self._shell, None
            if shell is not None:
                await shell.stop()
            limits = self.limits.replace(wall_time=timeout)
            argv = ["/bin/bash", "--noprofile", "--norc", "-c", command]
            process: SandboxProcess
            if self.box is not None:
                process = await self.box.launch(argv, stdin=subprocess.DEVNULL, user=user)
            else:
                process = await self.sandbox._launch(
                    argv, self.work_dir, self._uid, limits, None, subprocess.DEVNULL
                )
            outcome = await supervised(process, limits)
        data = outcome.stdout + outcome.stderr
        head = data[: self.head_bytes].decode(errors="replace")
        tail = data[self.head_bytes :][-self.tail_bytes :].decode(errors="replace")
        timed_out = outcome.limit is Limit.WALL_TIME
        status = None if timed_out else outcome.status
        return ShellResult(head, tail, len(data), status, timeout, timed_out=timed_out)

    async def close(self) -> None:
        """Kill the shell and everything it started, remove the work dir (close the box).
        Idempotent."""
        self._closed = True
        async with self._lock:
            shell, self._shell = self._shell, None
            try:
                if shell is not None:
                    await shell.stop()
            finally:
                box, self.box = self.box, None
                self._release()
                if box is not None:
                    await box.close()

    async def __aenter__(self) -> Machine:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def _start(self) -> ShellProcess:
        reply_bytes = self.head_bytes + self.tail_bytes
        if self.box is not None:
            shell = await ShellProcess.start_in_box(
                self.box, self.limits, idle_ttl=self.idle_ttl, reply_bytes=reply_bytes
            )
        else:
            shell = await ShellProcess.start(
                self.sandbox,
                self.work_dir,
                self._uid,
                self.limits,
                idle_ttl=self.idle_ttl,
                reply_bytes=reply_bytes,
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
        uids = self._sandbox._uids if self._sandbox is not None else None
        if uids and self._uid is not None:
            uids.release(self._uid)
            self._uid = None
        self._editor = None


_KEPT = "files in the work dir are kept; the current directory and variables are reset"
