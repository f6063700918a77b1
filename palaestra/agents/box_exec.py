"""``{box_exec}``: a command prefix that runs a command in one rollout's box, for a harness.

A harness runs on the host; the task's box (``terminal``, ``swe_local``, any ``harbor:``
folder) is the environment's. ``BoxExec`` serves the box of one rollout on a Unix socket in the
rollout's private directory and writes beside it an executable ``box-exec`` (its path is the
placeholder's value)::

    {box_exec} 'cd /app && make test'     # prints what the command printed, exits with its status
    bash -c "{box_exec} ls -la /app"

Each command runs through the session's ``bash`` tool, the same shell the tool-calling agent
uses, in a ``bash -c`` of its own with no input: nothing one command sets (a directory, a
variable, ``exit``) reaches the next, as with ``ssh``. Its output is stdout and stderr
together, cut in the middle like the tool's; a command that runs past ``timeout`` seconds is
interrupted and exits 124. A harness that gives up on a command (kills ``box-exec``) stops it
in the box too. When the environment itself fails (the box is gone: a ``RolloutFailure``)
every later command exits 255 and the agent fails the rollout with that failure's kind.

``box-exec --docker`` (``docker_executable``) is the same box behind the ``docker`` command
line, for harnesses that drive a container (``palaestra.agents.box_exec_client``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shlex
import sys
from pathlib import Path

from palaestra.environment.running.client import EnvironmentClient
from palaestra.errors import RolloutFailure
from palaestra.types import JsonDict, output_as_text

BOX_TOOL = "bash"
"""The environment tool a box's commands run through (``MachineTools.bash``)."""
FAILED = 255
"""A command the box could not run (``ssh``'s status for its own failure)."""
TIMED_OUT = 124
"""A command that ran past its timeout (``timeout(1)``'s status)."""
PREFIX_NAME = "box-exec"
"""The ``{box_exec}`` script's name in the rollout's directory."""
DOCKER_NAME = "box-docker"
"""The ``docker`` stand-in's name in the rollout's directory."""
_CLIENT = Path(__file__).with_name("box_exec_client.py")
_LINE_LIMIT = 64 * 1024 * 1024
"""The longest command one request may carry (heredocs of whole files fit)."""
_STATUS = re.compile(r"(?:\A|\n)\[exit status (-?\d+)\]\Z")
_TIMED_OUT = re.compile(r"(?:\A|\n)\[timed out after [^\n]*\]\Z")


def has_box(env: EnvironmentClient) -> bool:
    """Whether the environment's rollouts have a box to run commands in (a ``bash`` tool)."""
    return any(spec.get("name") == BOX_TOOL for spec in env.tools())


class BoxExec:
    """The box of session ``session_id`` served on ``directory/box.sock`` while open.

    ``prefix`` is the ``{box_exec}`` value, ``docker_executable`` the ``docker`` stand-in;
    ``commands`` counts the commands run, ``failure`` holds the environment's failure, if any.
    """

    def __init__(
        self, env: EnvironmentClient, session_id: str, directory: Path, *, timeout: float
    ) -> None:
        self.env = env
        self.session_id = session_id
        self.timeout = timeout
        self.socket = directory / "box.sock"
        self.prefix = str(directory / PREFIX_NAME)
        self.docker_executable = str(directory / DOCKER_NAME)
        self.commands = 0
        self.failure: RolloutFailure | None = None
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(
            self._serve, path=str(self.socket), limit=_LINE_LIMIT
        )
        self.socket.chmod(0o600)
        client = f"{shlex.quote(sys.executable)} -I -S {shlex.quote(str(_CLIENT))}"
        for path, mode in ((self.prefix, ""), (self.docker_executable, " --docker")):
            script = f'#!/bin/sh\nexec {client}{mode} {shlex.quote(str(self.socket))} "$@"\n'
            Path(path).write_text(script, encoding="utf-8")
            Path(path).chmod(0o700)

    async def aclose(self) -> None:
        """Stop serving; commands still running are cancelled (and stopped in the box)."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for handler in list(self._handlers):
            handler.cancel()
        for handler in list(self._handlers):
            with contextlib.suppress(BaseException):
                await handler

    async def __aenter__(self) -> BoxExec:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handler = asyncio.current_task()
        assert handler is not None
        self._handlers.add(handler)
        try:
            answer = await self._answer(reader)
            if answer is not None:
                writer.write(json.dumps(answer).encode() + b"\n")
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass  # the harness went away mid-answer: nothing to tell it
        finally:
            self._handlers.discard(handler)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader) -> dict[str, object] | None:
        """The answer to one request, or ``None`` when the harness hung up before it."""
        try:
            request = json.loads(await reader.readline())
            command = request["command"]
            if not isinstance(command, str):
                raise TypeError("command is not a string")
        except (ValueError, KeyError, TypeError) as error:
            return {"output": "", "status": FAILED, "error": f"a request it cannot read: {error}"}
        running = asyncio.ensure_future(self.run(command))
        hung_up = asyncio.ensure_future(reader.read(1))
        try:
            await asyncio.wait({running, hung_up}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            hung_up.cancel()
            if not running.done():  # the harness gave up on it (or the rollout is over)
                running.cancel()
                with contextlib.suppress(BaseException):
                    await running
        if running.cancelled():
            return None
        status, output, reason = running.result()
        return {"output": output, "status": status, "error": reason}

    async def run(self, command: str) -> tuple[int, str, str | None]:
        """Run ``command`` in the box: its status, its output and why it could not run."""
        if self.failure is not None:
            return FAILED, "", f"the rollout's box failed: {self.failure}"
        arguments: JsonDict = {
            "command": f"bash -c {shlex.quote(command)} < /dev/null",
            "timeout": self.timeout,
        }
        try:
            text = await self.env.call_tool(self.session_id, BOX_TOOL, arguments)
        except RolloutFailure as failure:
            self.failure = failure
            return FAILED, "", f"the rollout's box failed: {failure}"
        except Exception as error:  # a client's own bug: told, not fatal here
            return FAILED, "", f"the box could not run it: {type(error).__name__}: {error}"
        self.commands += 1
        return parsed(output_as_text(text))


def parsed(text: str) -> tuple[int, str, str | None]:
    """The status and output of a ``bash`` tool's answer (``ShellResult.text``).

    Its closing ``[exit status N]`` line is the status (a signal's negative number becomes
    ``128 + N``, as a shell reports it); a timed out command is ``TIMED_OUT`` whatever status
    its interruption left, with the tool's note kept in the output; any other answer (the
    tool refused the command, the shell ended) is ``FAILED`` with the tool's words as the
    reason.
    """
    found = _STATUS.search(text)
    body = text if found is None else text[: found.start()]
    if _TIMED_OUT.search(body):
        return TIMED_OUT, _line_ended(body), None
    if found is not None:
        status = int(found[1])
        return (128 - status if status < 0 else status), _line_ended(body), None
    return FAILED, "", text


def _line_ended(output: str) -> str:
    return output + "\n" if output and not output.endswith("\n") else output
