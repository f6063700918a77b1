"""The tool-calling agent: NeMo Gym simple_agent semantics, bounded and honest about failures.

seed → repeat { call the model with the input plus every output item so far; stop when the
answer is incomplete; when it calls no tool, ask the environment's simulated user for its turn
(none: stop); run each function call and append its output; after a call of a tool that ends
the episode, ask the user likewise (none: stop) } at most ``max_steps`` model calls → verify →
close.

A tool that ends the episode (``tool(ends_episode=True)``, ``client.ending_tools``: the machine
tools' ``submit``) ends it when a call of it runs (a refused call, with wrong arguments or a
``ToolError``, does not): the calls after it in the same answer are answered "not executed",
and the model is asked no more; the verdict is what ``verify`` says then. With a simulated
user it ends the policy's turn instead, as an answer without a tool does: the user speaks
next (a multi-step task's next step) and the episode goes on unless the user is done.

A rollout whose last allowed answer still called tools is verified as it stands and marked
``truncated = "max_steps"``. At most ``max_calls_per_turn`` calls of one answer run; the rest
are answered with an error output (every ``call_id`` gets its output), not executed.

An environment with a simulated user (``Environment.user_turn``, ``client.has_user``) answers
each answer that calls no tool: its message is appended as a ``role: user`` message produced
by ``user`` (never trained on) and the policy is asked again, until the user is done (a done
turn, or None), ``max_steps`` model calls were made, or ``max_user_turns`` user messages were
added (then ``truncated = "max_user_turns"``). Without a user the loop is as it always was: no
call is made to ask (``has_user`` is known once, when the client is made).
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import orjson

from palaestra.agents.context import NO_CONTEXT, RolloutContext
from palaestra.agents.episode import Conversation, run_conversation
from palaestra.environment.running.client import EnvironmentClient
from palaestra.errors import ToolCallRejected
from palaestra.models.base import Model
from palaestra.types import (
    AgentResult,
    JsonDict,
    Producer,
    function_call_output,
    function_calls,
    user_message,
)
from palaestra.wire.rows import PARAMS


class ToolCallingAgent:
    """Multi-turn tool use. Tools come from the task's params, else from the environment."""

    name = "tool_calling"

    def __init__(
        self, *, max_steps: int = 8, max_calls_per_turn: int = 64, max_user_turns: int = 30
    ) -> None:
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        if max_calls_per_turn < 1:
            raise ValueError("max_calls_per_turn must be at least 1")
        if max_user_turns < 0:
            raise ValueError("max_user_turns must be at least 0")
        self.max_steps = max_steps
        self.max_calls_per_turn = max_calls_per_turn
        self.max_user_turns = max_user_turns
        self._over_cap = f"Error: not executed: at most {max_calls_per_turn} calls per turn"

    async def run(
        self,
        task: JsonDict,
        env: EnvironmentClient,
        model: Model,
        context: RolloutContext = NO_CONTEXT,
    ) -> AgentResult:
        turns = partial(self._loop, env, model)  # not a closure: one coroutine less a rollout
        params = request_params(task, env)
        return await run_conversation(task, env, context, turns, params=params)

    async def _loop(self, env: EnvironmentClient, model: Model, conversation: Conversation) -> None:
        """The turns; a durable rollout checkpoints after each (``conversation.checkpoint``)."""
        result, session_id = conversation.result, conversation.session_id
        durable = conversation.checkpoints is not None
        has_user = env.has_user
        ending = env.ending_tools
        for _ in range(result.model_calls, self.max_steps):
            response = await conversation.ask(model)
            calls = function_calls(response)
            if response.get("status") == "incomplete":
                break
            if not calls:
                if not has_user or not await self._user_turn(conversation, session_id, env):
                    break
                if durable:
                    await conversation.checkpoint()
                continue
            phase = time.perf_counter()
            ended: str | None = None
            for call in calls[: self.max_calls_per_turn]:
                if ended is not None:
                    refused = f"Error: not executed: it came after '{ended}'"
                    conversation.add(function_call_output(call_id_of(call), refused), Producer.TOOL)
                    continue
                output, ran = await self._run_call(call, session_id, env)
                conversation.add(output, Producer.TOOL)
                result.tool_calls += 1
                if ran and call.get("name") in ending:
                    ended = str(call["name"])
            for call in calls[self.max_calls_per_turn :]:
                output = function_call_output(call_id_of(call), self._over_cap)
                conversation.add(output, Producer.TOOL)
            result.add_time("tools", phase)
            if ended is not None and not (
                has_user and await self._user_turn(conversation, session_id, env)
            ):
                break  # verified as it stands: no checkpoint, a resume redoes this turn
            if durable:
                await conversation.checkpoint()
        else:  # the model still called tools (or the user still talked) when the budget ran out
            result.truncated = "max_steps"

    async def _user_turn(
        self, conversation: Conversation, session_id: str, env: EnvironmentClient
    ) -> bool:
        """Ask the user for its turn and append its message; whether the conversation goes on."""
        result = conversation.result
        if result.user_turns >= self.max_user_turns:
            result.truncated = "max_user_turns"
            return False
        phase = time.perf_counter()
        turn = await env.user_turn(session_id, conversation.history + conversation.outputs)
        result.add_time("user", phase)
        if turn is None:
            return False
        if turn.text:
            conversation.add(user_message(turn.text), Producer.USER)
            result.user_turns += 1
        return not turn.done

    async def _run_call(
        self, call: JsonDict, session_id: str, env: EnvironmentClient
    ) -> tuple[JsonDict, bool]:
        """The call's output item, and whether the tool ran (not refused)."""
        call_id = call_id_of(call)
        name = str(call.get("name", ""))
        arguments = parse_arguments(call.get("arguments"))
        if isinstance(arguments, str):
            return function_call_output(call_id, arguments), False
        try:
            output = await env.call_tool(session_id, name, arguments)
        except ToolCallRejected as rejected:
            return function_call_output(call_id, f"Error: {rejected}"), False
        return function_call_output(call_id, output), True


def request_params(task: JsonDict, env: EnvironmentClient) -> JsonDict:
    """The task's create params; the environment's tools are offered when the task names none."""
    params: JsonDict = dict(task[PARAMS])
    if "tools" not in params:
        tools = env.tools()
        if tools:
            params["tools"] = tools
    return params


def call_id_of(call: JsonDict) -> str:
    return str(call.get("call_id") or call.get("id") or "")


def parse_arguments(raw: Any) -> JsonDict | str:
    """A function call's ``arguments`` as a dict, or the error text to feed back to the model."""
    if isinstance(raw, dict):
        return raw
    try:
        parsed = orjson.loads(raw if raw not in (None, "") else "{}")
    except (orjson.JSONDecodeError, TypeError) as error:
        return f"Error: the arguments are not valid JSON ({error}); got: {str(raw)[:200]}"
    if not isinstance(parsed, dict):
        return f"Error: the arguments must be a JSON object; got: {str(raw)[:200]}"
    return parsed
