"""The command agent: any harness, run as a command line, its model calls through a gateway.

``--agent command --agent-arg cmd='my-agent --url {base_url} --key {api_key} {instruction}'``
runs ``cmd`` with ``bash -c`` once per rollout, its placeholders filled in (each value
shell-quoted, so write them bare):

- ``{base_url}``: the rollout's OpenAI-compatible endpoint (``/chat/completions``,
  ``/completions``, ``/responses``), a ``palaestra.gateway.Gateway`` in front of the run's model;
- ``{api_key}``: the rollout's secret for it (a call without it is refused);
- ``{instruction}``: the text of the task's (last) user message;
- ``{workdir}``: a fresh empty directory of the rollout's, the harness' working directory,
  removed afterwards;
- ``{box_exec}``: for a task with a box (``terminal``, ``swe_local``, ``harbor:`` folders), a
  command prefix that runs a command in the rollout's box (``palaestra.agents.box_exec``).

The harness also finds them in its environment: ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
``PALAESTRA_INSTRUCTION``, ``PALAESTRA_WORKDIR`` and ``PALAESTRA_BOX_EXEC``. Unknown ``{...}``
are left as they are.

The trajectory is what the harness said through the gateway (``GatewayRollout.response``:
every call's new input and its answer, with producers and, when the model captures them, the
token ids), and the environment's own ``verify`` scores it, on any environment. A harness
that exits with an error, runs past ``timeout`` seconds or never calls the model is an
``agent_error`` failure whose reason ends with the last lines of its stderr, never a score.

One gateway serves every rollout of an agent: started on its first rollout over the model
handed to ``run`` (another for another model), closed by ``aclose``.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from palaestra.agents.box_exec import BoxExec, has_box
from palaestra.agents.context import NO_CONTEXT, RolloutContext
from palaestra.agents.episode import run_episode
from palaestra.agents.harness_process import HarnessExit, run_harness
from palaestra.environment.running.client import EnvironmentClient
from palaestra.errors import AgentFailure, ConfigError, InvalidTask
from palaestra.gateway import Call, Gateway, GatewayRollout
from palaestra.models.base import Model
from palaestra.types import AgentResult, JsonDict, input_items, message_text, producers_of
from palaestra.wire.rows import PARAMS

PLACEHOLDERS = ("base_url", "api_key", "instruction", "workdir", "box_exec")
"""What ``cmd`` may name in braces."""
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")
_ENVIRONMENT = {
    "base_url": "OPENAI_BASE_URL",
    "api_key": "OPENAI_API_KEY",
    "instruction": "PALAESTRA_INSTRUCTION",
    "workdir": "PALAESTRA_WORKDIR",
    "box_exec": "PALAESTRA_BOX_EXEC",
}
"""The variable each placeholder's value is also given in."""


class CommandAgent:
    """Run ``cmd`` per rollout; score what it said through the gateway.

    ``timeout``: seconds the harness may run; ``box_timeout``: seconds one ``{box_exec}``
    command may run; ``stderr_lines``: how much of a failed harness' stderr its failure
    keeps.
    """

    name = "command"
    records_tokens = True
    """Its rollouts are trained from what the gateway recorded: a run with the embedded model
    captures the sampled ids in token mode unless the model's options say otherwise
    (``palaestra.collection.assembly.model_for``)."""

    def __init__(
        self,
        *,
        cmd: str,
        timeout: float = 1800.0,
        box_timeout: float = 300.0,
        stderr_lines: int = 20,
    ) -> None:
        if not cmd.strip():
            raise ConfigError("agent 'command': cmd is empty")
        if timeout <= 0 or box_timeout <= 0:
            raise ConfigError("agent 'command': timeout and box_timeout must be above 0")
        if stderr_lines < 1:
            raise ConfigError("agent 'command': stderr_lines must be at least 1")
        self.cmd = cmd
        self.timeout = timeout
        self.box_timeout = box_timeout
        self.stderr_lines = stderr_lines
        self._gateways: list[tuple[Model, Gateway]] = []
        self._starting = asyncio.Lock()

    async def preflight(self, env: EnvironmentClient, model: Model) -> None:
        """The model must answer; a ``cmd`` naming ``{box_exec}`` needs tasks with a box."""
        if self.uses_box_exec() and not has_box(env):
            raise ConfigError(
                "agent 'command': cmd uses {box_exec}, but this environment's tasks have no "
                "box (no bash tool)"
            )
        await model.check()

    def uses_box_exec(self) -> bool:
        return "{box_exec}" in self.cmd

    async def gateway(self, model: Model) -> Gateway:
        """The agent's gateway over ``model``, started on first use. A trainer that swaps
        its model gets a gateway over the new one; the old one serves its rollouts still
        running until ``aclose``."""
        async with self._starting:
            for served, gateway in self._gateways:
                if served is model:
                    return gateway
            gateway = Gateway(model)
            await gateway.start()
            self._gateways.append((model, gateway))
            return gateway

    async def aclose(self) -> None:
        """Close the gateways (rollouts still running get errors from them)."""
        gateways, self._gateways = self._gateways, []
        for _, gateway in gateways:
            await gateway.aclose()

    def command_line(self, values: Mapping[str, str], directory: Path) -> str:
        """The command to run for one rollout: ``cmd`` with its placeholders filled in.
        ``directory`` is the rollout's private directory (the work dir is inside it), where a
        subclass may write what its harness reads (a config file)."""
        return fill(self.cmd, values)

    def harness_environment(self, directory: Path) -> dict[str, str]:
        """Variables the harness gets beside the placeholders' (a subclass' settings)."""
        return {}

    async def run(
        self,
        task: JsonDict,
        env: EnvironmentClient,
        model: Model,
        context: RolloutContext = NO_CONTEXT,
    ) -> AgentResult:
        gateway = await self.gateway(model)
        boxed = has_box(env)

        async def body(session_id: str, result: AgentResult) -> None:
            rollout = gateway.open(scope=context.scope)
            try:
                await self._drive(task, env, session_id, rollout, boxed, result)
            finally:
                rollout.close()

        return await run_episode(task, env, body)

    async def _drive(
        self,
        task: JsonDict,
        env: EnvironmentClient,
        session_id: str,
        rollout: GatewayRollout,
        boxed: bool,
        result: AgentResult,
    ) -> None:
        with tempfile.TemporaryDirectory(
            prefix="palaestra-harness-", ignore_cleanup_errors=True
        ) as private:
            directory = Path(private)
            workdir = directory / "work"
            workdir.mkdir()
            values = {
                "base_url": rollout.base_url,
                "api_key": rollout.api_key,
                "instruction": instruction(task),
                "workdir": str(workdir),
            }
            box = BoxExec(env, session_id, directory, timeout=self.box_timeout) if boxed else None
            if box is not None:
                await box.start()
                values["box_exec"] = box.prefix
            try:
                command = self.command_line(values, directory)
                environment = {
                    **os.environ,
                    **{_ENVIRONMENT[k]: v for k, v in values.items()},
                    **self.harness_environment(directory),
                }
                phase = time.perf_counter()
                ended = await run_harness(
                    command, cwd=workdir, env=environment, timeout=self.timeout, logs=directory
                )
                result.add_time("harness", phase)
            finally:
                if box is not None:
                    await box.aclose()
            record(rollout, result)
            if box is not None and box.failure is not None:
                raise box.failure
            problem = self.problem(ended, rollout)
            if problem is not None:
                raise AgentFailure(problem)

    def problem(self, ended: HarnessExit, rollout: GatewayRollout) -> str | None:
        """Why the harness' run is no outcome to score, or ``None`` when it is one."""
        if ended.status is None:
            why = f"the harness ran past its timeout ({self.timeout:g} s) and was killed"
        elif ended.status != 0:
            why = f"the harness exited with status {_status(ended.status)}"
        elif not rollout.calls:
            why = "the harness never called the model"
        else:
            return None
        failed = [call.error for call in rollout.calls if call.error is not None]
        if failed:
            why += f"; {len(failed)} of its {len(rollout.calls)} model calls failed: {failed[-1]}"
        stderr = ended.stderr_tail(self.stderr_lines)
        return f"{why}; its stderr ends:\n{stderr}" if stderr else f"{why} (its stderr is empty)"


def record(rollout: GatewayRollout, result: AgentResult) -> None:
    """Put the rollout's trajectory and counts from the gateway into ``result``."""
    response = rollout.response()
    output = response.get("output") or []
    result.response = response
    result.model_calls = len(rollout.calls)
    recorded = [item.get("producer") for item in output]
    result.producers = producers_of(output, None if None in recorded else recorded)
    versions = [call.policy_version for call in rollout.calls if call.policy_version is not None]
    if versions:
        result.policy_versions = versions
    result.branches, result.retokenized = call_shape(rollout.calls)


def call_shape(calls: Sequence[Call]) -> tuple[int, int]:
    """The branches (leaves) of ``calls`` and how many were re-tokenised: a call continues
    the call the gateway matched its messages to (``Call.parent``) unless both carry token ids
    and its prompt does not start with that call's prompt and generation; it is then counted
    as re-tokenised and starts a branch of its own, as ``palaestra.training.tree`` never
    splices it. A failed call answered nothing and is no branch."""
    parents: dict[int, int | None] = {}
    retokenized = 0
    for call in calls:
        if call.error is not None:
            continue
        parent = calls[call.parent] if call.parent is not None else None
        if parent is not None and not _extends(call, parent):
            retokenized += 1
            parent = None
        parents[call.index] = parent.index if parent is not None else None
    continued = {parent for parent in parents.values() if parent is not None}
    return sum(1 for index in parents if index not in continued), retokenized


def _extends(call: Call, parent: Call) -> bool:
    if call.prompt_ids is None or parent.prompt_ids is None or parent.sampled_ids is None:
        return True  # no ids to check: the messages decide
    history = parent.prompt_ids + parent.sampled_ids
    return call.prompt_ids[: len(history)] == history


def fill(cmd: str, values: Mapping[str, str]) -> str:
    """``cmd`` with each placeholder replaced by its value, shell-quoted; ``{box_exec}`` (a
    path) as a word of its own. A placeholder without a value is a one-line ``ConfigError``."""

    def value(match: re.Match[str]) -> str:
        name = match[1]
        if name not in values:
            raise ConfigError(f"agent 'command': cmd uses {{{name}}}, which this task has none of")
        return shlex.quote(values[name])

    return _PLACEHOLDER.sub(value, cmd)


def instruction(task: JsonDict) -> str:
    """The text of the task's last user message: what a harness is asked to do."""
    params = task.get(PARAMS)
    items = input_items(params) if isinstance(params, dict) else []
    texts = [message_text(item) for item in items if item.get("role") == "user"]
    if not texts:
        raise InvalidTask("the task has no user message to give the harness as {instruction}")
    return texts[-1]


def _status(status: int) -> str:
    return f"{status} (killed by signal {-status})" if status < 0 else str(status)
