"""``MachineTools``: the shell, the file editor and ``submit`` as tools of any environment.

An environment whose tasks are a machine mixes it in before ``Environment`` and gets three
tools on a per-rollout sandboxed ``Machine`` (started on the first call, killed in
``close``)::

    class FixIt(MachineTools, Environment):
        def machine_files(self, task):            # what /work holds at the start
            return {"app.py": task["source"]}

        async def verify(self, session, response):
            result = await self.machine_of(session).run("python3 -m pytest -q", timeout=120)
            return 1.0 if result.status == 0 else 0.0

- ``bash``: a persistent shell (``cd``, variables and files stay between calls), each call
  bounded by a timeout (interrupted with SIGINT, killed if it will not stop), its output cut
  to its head and tail with the bytes dropped said, its exit status shown.
- ``str_replace_editor``: view / create / str_replace / insert / undo_edit, the command set
  SWE-agent and OpenHands agents are trained on, confined to the work dir.
- ``submit``: the agent says it is done; recorded in ``MachineState.submitted``. It ends the
  episode (``tool(ends_episode=True)``): the tool-calling agent asks the model no more and
  the rollout is verified; any later call (another agent's) is refused with a note that the
  episode is over.

A task whose machine is a whole image (a Harbor task's ``environment/``) overrides
``machine_box`` to start a box per rollout from a sandbox provider
(``palaestra.sandbox.machines``); the same three tools then work in the box (the editor
over its whole file system, commands in the image's workdir as its user), and ``close``
closes it. A box that cannot be started fails the rollout as ``sandbox_error``.

A subclass that keeps more per-rollout state returns a subclass of ``MachineState`` from
``seed``; one that overrides ``close`` awaits ``super().close(session)``. A machine that
cannot start fails the rollout as ``tool_error`` (never a reward of 0); what the model's
commands run into is told to the model as the tool's output.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from palaestra.environment.kinds.machine.machine import Machine
from palaestra.environment.kinds.machine.shell import ShellEnded
from palaestra.environment.sessions import Session
from palaestra.environment.tools import tool
from palaestra.errors import ConfigError, ToolError, ToolFailure
from palaestra.sandbox import DEBIAN_PYTHON, Isolation, Limits, Sandbox
from palaestra.sandbox.machines.provider import Box
from palaestra.types import JsonDict

EditorCommand = Literal["view", "create", "str_replace", "insert", "undo_edit"]


@dataclass(slots=True)
class MachineState:
    """One rollout's machine (started on the first call) and what the agent did with it."""

    machine: Machine | None = None
    submitted: bool = False
    commands: int = 0
    timeouts: int = 0
    edits: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    closed: bool = False


class MachineTools:
    """Mix in before ``Environment``: ``class MyEnv(MachineTools, Environment)``."""

    machine_limits: ClassVar[Limits] = Limits(
        wall_time=600,
        cpu_time=3600,
        memory_mb=2048,
        processes=256,
        file_size_mb=256,
        open_files=1024,
        output_bytes=1_000_000,
        disk_mb=1024,
    )
    """The machine's limits: CPU, memory, processes and disk bound the whole machine."""
    machine_isolation: ClassVar[Isolation] = "bubblewrap"
    machine_python: ClassVar[str] = DEBIAN_PYTHON
    """The interpreter that runs the shell's supervisor inside the sandbox."""
    shell_timeout: ClassVar[float] = 60.0
    """Seconds a command may run when the model does not say."""
    max_shell_timeout: ClassVar[float] = 600.0
    """The most seconds the model may ask for one command."""
    output_head_bytes: ClassVar[int] = 6000
    output_tail_bytes: ClassVar[int] = 4000
    """A command's output beyond head + tail bytes is dropped from the middle, with a note."""
    machine_idle_ttl: ClassVar[float] = 1800.0
    tool_timeout: ClassVar[float] = max_shell_timeout + 60.0

    _machine_sandbox: Sandbox | None = None

    def machine_sandbox(self) -> Sandbox:
        """The sandbox machines run in (one per environment, made on first use)."""
        if self._machine_sandbox is None:
            self._machine_sandbox = Sandbox(
                self.machine_limits, python=self.machine_python, isolation=self.machine_isolation
            )
        return self._machine_sandbox

    def machine_files(self, task: JsonDict) -> dict[str, str | bytes]:
        """The files the work dir holds when the machine starts (relative path -> content)."""
        return {}

    async def machine_box(self, task: JsonDict) -> Box | None:
        """The box this rollout's machine runs in, started on the machine's first use
        (``provider.start(image, spec)``); ``None`` (the default): the host sandbox with a
        work dir of ``machine_files``. The machine owns the box and closes it."""
        return None

    def seed(self, task: JsonDict) -> Any:
        return MachineState()

    def machine_of(self, session: Session) -> Machine:
        """The rollout's machine, made (not yet started) on first use; also for ``verify``."""
        state = _state(session)
        if state.closed:
            raise ToolFailure("the rollout was closed")
        if state.machine is None:
            task = session.task
            state.machine = Machine(
                self.machine_sandbox(),
                self.machine_limits,
                box=lambda: self.machine_box(task),
                idle_ttl=self.machine_idle_ttl,
                head_bytes=self.output_head_bytes,
                tail_bytes=self.output_tail_bytes,
                files=self.machine_files(session.task),
            )
        return state.machine

    @tool
    async def bash(self, session: Session, command: str, timeout: float | None = None) -> str:
        """Run a bash command in a persistent shell; returns its output and exit status.

        The working directory, variables and files stay between calls. Output longer than
        about 10 KB is cut in the middle. Do not start interactive programs.

        Args:
            command: The command(s) to run, e.g. "cd src && grep -rn 'def main' .".
            timeout: Seconds before the command is interrupted (default 60).
        """
        state = _open(session)
        limit = self.shell_timeout if timeout is None else timeout
        if not 0 < limit <= self.max_shell_timeout:
            raise ToolError(
                f"timeout must be more than 0 and at most {self.max_shell_timeout:g} seconds, "
                f"not {limit:g}"
            )
        if "\0" in command:
            raise ToolError("the command contains a NUL byte")
        machine = self.machine_of(session)
        async with state.lock:
            state.commands += 1
            try:
                result = await machine.run(command, timeout=limit)
            except (ConfigError, ShellEnded, OSError, RuntimeError) as error:
                raise ToolFailure(f"the machine cannot run commands: {error}") from error
        state.timeouts += result.timed_out
        return result.text()

    @tool
    async def str_replace_editor(
        self,
        session: Session,
        command: EditorCommand,
        path: str,
        file_text: str | None = None,
        view_range: list[int] | None = None,
        old_str: str | None = None,
        new_str: str | None = None,
        insert_line: int | None = None,
    ) -> str:
        """View, create and edit files: view, create, str_replace, insert, undo_edit.

        `view` shows a file with line numbers (`cat -n`), or a directory two levels deep.
        `create` writes a new file (never over an existing one). `str_replace` replaces
        old_str, which must occur exactly once, with new_str. `insert` inserts new_str after
        line insert_line (0: at the top). `undo_edit` reverts the last edit of the file.

        Args:
            command: One of view, create, str_replace, insert, undo_edit.
            path: Absolute path of the file or directory, e.g. /work/app.py.
            file_text: The content of the file (create).
            view_range: [first, last] lines to view; last -1 means to the end (view).
            old_str: The exact text to replace, whitespace included (str_replace).
            new_str: The new text (str_replace, insert).
            insert_line: The line after which new_str is inserted (insert).
        """
        _open(session)
        machine = self.machine_of(session)
        try:
            await machine.ready()
            editor = machine.editor
        except (ConfigError, ShellEnded, OSError, RuntimeError) as error:
            raise ToolFailure(f"the machine's files cannot be reached: {error}") from error
        state = _state(session)
        if command == "view":
            return editor.view(path, view_range)
        if command == "create":
            text = _needed(file_text, "file_text", command)
            output = editor.create(path, text)
        elif command == "str_replace":
            output = editor.str_replace(path, _needed(old_str, "old_str", command), new_str or "")
        elif command == "insert":
            line = _needed(insert_line, "insert_line", command)
            output = editor.insert(path, line, _needed(new_str, "new_str", command))
        else:
            output = editor.undo_edit(path)
        state.edits += 1
        return output

    @tool(ends_episode=True)
    def submit(self, session: Session) -> str:
        """Submit your work: call it once the task is done; it ends the episode."""
        state = _open(session)
        state.submitted = True
        return "Submitted: the episode is over and your work will now be checked."

    async def close(self, session: Session) -> None:
        """Kill the rollout's machine and everything in it, remove its files."""
        state = session.state
        if isinstance(state, MachineState):
            state.closed = True
            machine, state.machine = state.machine, None
            if machine is not None:
                with contextlib.suppress(Exception):
                    await machine.close()


def _state(session: Session) -> MachineState:
    state = session.state
    if not isinstance(state, MachineState):
        raise ConfigError(
            f"MachineTools needs seed() to return a MachineState (or a subclass), "
            f"not {type(state).__name__}"
        )
    return state


def _open(session: Session) -> MachineState:
    state = _state(session)
    if state.submitted:
        raise ToolError("You already submitted: the episode is over. Answer without calling tools.")
    return state


def _needed(value: Any, name: str, command: str) -> Any:
    if value is None:
        raise ToolError(f"the {command} command needs {name}")
    return value
