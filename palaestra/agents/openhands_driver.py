"""Run OpenHands' agent (``openhands-sdk``, unmodified) on one task, its terminal in a box.

Run by ``palaestra.agents.openhands`` with the interpreter of the harness' own venv (it
imports nothing of palaestra, which is not installed there)::

    python -I openhands_driver.py SETTINGS.json

``SETTINGS.json`` (written by the agent in the rollout's private directory, so the key stays
out of ``ps``) holds ``base_url``, ``api_key``, ``model``, ``instruction``, ``box_exec``,
``workdir``, ``max_iterations``, ``box_timeout``, ``model_attempts``, ``model_timeout`` and
``condenser`` (null, or the ``max_size`` and ``keep_first`` of the SDK's
``LLMSummarizingCondenser``, given a copy of the agent's ``LLM`` as the SDK's presets do).

Everything is the SDK's own, set through its documented API: its ``LLM`` (litellm) at the
rollout's gateway, its ``Agent`` with its own system prompt, its ``TerminalTool`` (the tool
the model sees, its schema and description) and its built-in finish and think tools, its
``Conversation`` loop with its iteration limit and stuck detection. The one piece given to it
is the terminal tool's executor (``TerminalTool.create``'s ``executor`` argument, the tool
registered with ``register_tool``): its commands run in the rollout's box through
``{box_exec}`` instead of a shell on the host. Each
command runs in a shell of its own; the working directory it ends in is where the next one
starts (as in a terminal), variables do not carry over, and since every command runs to its
end before it answers, input for a running one (``is_input``) is refused as the SDK's own
terminal refuses it when nothing runs.

Exits 0 when the conversation ended on its own (finished, stuck, or stopped by the SDK at its
iteration limit, which it reports as an error event coded ``MaxIterationsReached``: the box is
scored as it is), 1 when the run failed (the model could not be called, the SDK raised).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import warnings
from typing import Any

import litellm
from openhands.sdk import LLM, Agent, Conversation, Tool
from openhands.sdk.context.condenser import LLMSummarizingCondenser
from openhands.sdk.conversation.state import ConversationExecutionStatus
from openhands.sdk.event.condenser import Condensation
from openhands.sdk.event.conversation_error import ConversationErrorEvent
from openhands.sdk.tool import ToolExecutor, register_tool
from openhands.tools.terminal import TerminalObservation, TerminalTool
from openhands.tools.terminal.metadata import CmdOutputMetadata

_MARK = "__palaestra_cwd__"
"""Printed after each command with the directory it ended in."""
_TIMED_OUT = 124
LIMITS = frozenset({"MaxIterationsReached", "MaxBudgetReached"})
"""The codes of the SDK's error events that say a run reached its limit: an end, not a crash."""
_SLACK_S = 5.0
"""Seconds the driver waits beyond the box's own timeout before it gives up on a command."""


class BoxTerminal(ToolExecutor):  # type: ignore[misc]  # the SDK's class, untyped here
    """The terminal tool's executor: each command through ``{box_exec}`` in the box."""

    def __init__(self, box_exec: str, timeout: float) -> None:
        self.box_exec = box_exec
        self.timeout = timeout
        self.cwd: str | None = None

    def __call__(self, action: Any, conversation: Any = None) -> Any:
        if action.reset:
            self.cwd = None
            return TerminalObservation.from_text(
                text="The terminal was reset.", command=action.command, exit_code=0
            )
        if action.is_input:
            return TerminalObservation.from_text(
                text="No previous running command to interact with.",  # as the SDK's own says
                is_error=True,
                command=action.command,
            )
        if not action.command.strip():
            return TerminalObservation.from_text(
                text="No command given.", is_error=True, command=action.command
            )
        return self.run(action.command, action.timeout)

    def run(self, command: str, timeout: float | None) -> Any:
        script = (f"cd {shlex.quote(self.cwd)} || exit 1\n" if self.cwd else "") + command
        script += f"\n__status=$?; printf '\\n{_MARK}%s\\n' \"$PWD\"; exit $__status"
        limit = min(timeout, self.timeout) if timeout and timeout > 0 else self.timeout
        try:
            done = subprocess.run(
                [self.box_exec, script],
                capture_output=True,
                text=True,
                errors="replace",
                timeout=limit + _SLACK_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return self.observation(command, "", _TIMED_OUT, timed_out=True, limit=limit)
        if done.returncode == 255 and done.stderr:  # the box could not run it
            return TerminalObservation.from_text(
                text=done.stderr.strip(), is_error=True, command=command
            )
        output = done.stdout
        head, mark, tail = output.rpartition(f"\n{_MARK}")
        if mark:
            self.cwd = tail.strip() or self.cwd
            output = head
        timed_out = done.returncode == _TIMED_OUT and not mark
        return self.observation(command, output, done.returncode, timed_out=timed_out, limit=limit)

    def observation(
        self, command: str, output: str, status: int, *, timed_out: bool, limit: float
    ) -> Any:
        if timed_out:
            output += f"\n[The command ran past {limit:g} seconds and was stopped.]"
        return TerminalObservation.from_text(
            text=output.rstrip("\n"),
            command=command,
            exit_code=status,
            timeout=timed_out,
            metadata=CmdOutputMetadata(exit_code=status, working_dir=self.cwd),
        )


class BoxTerminalTool(TerminalTool):  # type: ignore[misc]  # the SDK's class, untyped here
    """OpenHands' ``TerminalTool`` as it is (its name, schema and description), made with a
    ``BoxTerminal`` for its executor: the SDK builds its tools from a spec of JSON-able
    parameters, so the executor is made here from ``box_exec`` and ``timeout``."""

    name = TerminalTool.name

    @classmethod
    def create(cls, conv_state: Any, *, box_exec: str, timeout: float) -> Any:
        return super().create(conv_state, executor=BoxTerminal(box_exec, timeout))


BOX_TERMINAL = "palaestra_box_terminal"
"""The name ``BoxTerminalTool`` is registered under with the SDK."""


def quiet() -> None:
    """No line per model call on the harness' output about a price: the gateway's model has
    none in litellm's table, so litellm prints its provider list and the SDK warns that the
    cost could not be computed, burying a failed run's real error in the stderr the agent
    keeps."""
    litellm.suppress_debug_info = True
    warnings.filterwarnings("ignore", message="Cost calculation failed", category=UserWarning)


def main(path: str) -> int:
    with open(path, encoding="utf-8") as file:
        settings = json.load(file)
    quiet()
    llm = LLM(
        model=settings["model"],
        base_url=settings["base_url"],
        api_key=settings["api_key"],
        usage_id="agent",
        num_retries=settings["model_attempts"] - 1,
        timeout=settings["model_timeout"],
    )
    register_tool(BOX_TERMINAL, BoxTerminalTool)
    terminal = {"box_exec": settings["box_exec"], "timeout": settings["box_timeout"]}
    condenser = settings.get("condenser")
    agent = Agent(
        llm=llm,
        tools=[Tool(name=BOX_TERMINAL, params=terminal)],
        condenser=None
        if condenser is None
        else LLMSummarizingCondenser(
            llm=llm.model_copy(update={"usage_id": "condenser"}),
            max_size=condenser["max_size"],
            keep_first=condenser["keep_first"],
        ),
    )
    conversation = Conversation(
        agent=agent,
        workspace=settings["workdir"],
        max_iteration_per_run=settings["max_iterations"],
        visualizer=None,
    )
    try:
        conversation.send_message(settings["instruction"])
        conversation.run()
        status = conversation.state.execution_status
        events = list(conversation.state.events)
    finally:
        conversation.close()
    errors = [e for e in events if isinstance(e, ConversationErrorEvent)]
    condensed = sum(isinstance(e, Condensation) for e in events)
    if condenser is not None:
        print(f"openhands: the condenser summarised the history {condensed} times")
    if status == ConversationExecutionStatus.ERROR:
        if errors and errors[-1].code in LIMITS:
            print(f"openhands: the conversation reached its limit: {errors[-1].detail}")
            return 0
        why = f"{errors[-1].code}: {errors[-1].detail}" if errors else "no error event"
        print(f"openhands: the conversation ended in an error ({why})", file=sys.stderr)
        return 1
    print(f"openhands: the conversation ended {status.value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
