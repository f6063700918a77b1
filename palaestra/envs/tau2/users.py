"""τ²'s users: the LLM user simulator (with telecom's device tools) and a scripted gold user.

- airline and retail: ``palaestra.environment.users.ModelUser`` on the run's user model, with
  τ²'s user system prompt (its guidelines and the task's scenario) and stop signals.
- telecom (dual control): ``DeviceUser``, a ``ModelUser`` that may also call the user's own
  tools (its phone) before it answers, as τ²'s user simulator does. Its calls run on the
  rollout's τ² environment (``requestor="user"``); the model sees them and their outputs in
  its own history, the policy never does, and the τ² messages they make are kept for the
  verifier (τ² replays the user's calls too).
- ``GoldUser`` (``--env-arg user=gold``): no model; on its k-th turn it makes the user's part
  of the task's gold actions for that turn and then says τ²'s stop signal once the gold
  actions are done. For the oracle check (``palaestra test``) and offline benchmarks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from palaestra import (
    InvalidTask,
    JsonDict,
    ModelError,
    ModelUser,
    UserModelFailure,
    UserTurn,
    as_seen_by_user,
    function_calls,
    output_text,
    user_model_failed,
    user_model_named,
)
from palaestra.envs.tau2.suite import Action, Message, Tau2Environment, tau2_module

MAX_TOOL_ROUNDS = 10
"""User tool calls one user turn may make before it must answer (then: user_model_error)."""
GOLD_NEXT = "I did what was needed on my side. What's next?"
USER_CALLS = "user_tool_calls"
"""The verdict's metric (so a row's field) keeping the user's own tool calls, one list per
user turn of ``{"name", "arguments", "output", "error"}``: the policy's trajectory does not
hold them (a user turn is one message), and τ² replays them, so re-verifying a telecom row
needs them."""


class DeviceUser(ModelUser):
    """τ²'s telecom user: a model that may use its device's tools before it answers."""

    def __init__(
        self,
        *args: Any,
        tools: list[JsonDict],
        environment: Tau2Environment,
        log: list[list[Message]],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.tools = tools
        self.environment = environment
        self.log = log
        """τ² messages of the user's tool calls, one list per user turn (the verifier's)."""
        self._own: list[list[JsonDict]] = []
        """The user model's own tool items (calls and outputs) before each of its messages."""

    async def reply(self, conversation: Sequence[JsonDict]) -> UserTurn:
        items: list[JsonDict] = []
        messages: list[Message] = []
        self._own.append(items)
        self.log.append(messages)
        for _ in range(MAX_TOOL_ROUNDS):
            response = await self._ask(self._view(conversation))
            calls = function_calls(response)
            if not calls:
                text = output_text(response).strip()
                if not text:
                    raise UserModelFailure(f"{user_model_named(self.model)} answered nothing")
                return UserTurn(text, done=any(s in text for s in self.stop_signals))
            for call in calls:
                items.append(call)
                output = self._run(call, messages)
                items.append(
                    {"type": "function_call_output", "call_id": call["call_id"], "output": output}
                )
        raise UserModelFailure(
            f"{user_model_named(self.model)} called its tools {MAX_TOOL_ROUNDS} times "
            "without answering"
        )

    async def _ask(self, history: list[JsonDict]) -> JsonDict:
        params: JsonDict = {"instructions": self.instructions, "input": history}
        params["tools"] = self.tools
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.max_output_tokens is not None:
            params["max_output_tokens"] = self.max_output_tokens
        try:
            return await self.model.respond(params)
        except ModelError as error:
            raise user_model_failed(error, self.model) from error

    def _view(self, conversation: Sequence[JsonDict]) -> list[JsonDict]:
        """The conversation from the user's side, its own tool items before each of its
        messages (and this turn's so far at the end)."""
        view: list[JsonDict] = []
        turn = 0
        for item in as_seen_by_user(conversation):
            if item["role"] == "assistant":  # the user's own message
                if turn < len(self._own):
                    view.extend(self._own[turn])
                turn += 1
            view.append(item)
        view.extend(self._own[-1])
        return view

    def _run(self, call: JsonDict, messages: list[Message]) -> str:
        """Run a user tool call on the rollout's τ² environment; record it for the verifier."""
        message = tau2_module("tau2.data_model.message")
        call_id = f"user_{call.get('call_id') or len(messages)}"
        try:
            arguments = orjson.loads(call.get("arguments") or "{}")
        except orjson.JSONDecodeError as error:
            return f"Error: the arguments are not valid JSON ({error})"
        if not isinstance(arguments, dict):
            return "Error: the arguments must be a JSON object"
        tool_call = message.ToolCall(
            id=call_id, name=str(call.get("name", "")), arguments=arguments, requestor="user"
        )
        result = self.environment.get_response(tool_call)
        messages.append(message.UserMessage(role="user", tool_calls=[tool_call]))
        messages.append(result)
        return str(result.content)


class GoldUser:
    """Makes the user's gold actions turn by turn, then stops; needs no model."""

    def __init__(
        self,
        user_turns: list[list[Action]],
        environment: Tau2Environment,
        log: list[list[Message]],
        stop: str,
    ) -> None:
        self.user_turns = user_turns
        self.environment = environment
        self.log = log
        self.stop = stop

    async def reply(self, conversation: Sequence[JsonDict]) -> UserTurn:
        message = tau2_module("tau2.data_model.message")
        turn = len(self.log)
        messages: list[Message] = []
        self.log.append(messages)
        actions = self.user_turns[turn] if turn < len(self.user_turns) else []
        for index, action in enumerate(actions):
            tool_call = message.ToolCall(
                id=f"gold_user_{turn}_{index}",
                name=action.name,
                arguments=dict(action.arguments),
                requestor="user",
            )
            messages.append(message.UserMessage(role="user", tool_calls=[tool_call]))
            messages.append(self.environment.get_response(tool_call))
        if turn + 1 >= len(self.user_turns):
            return UserTurn(self.stop, done=True)
        return UserTurn(GOLD_NEXT)


def gold_turns(actions: Sequence[Action]) -> tuple[list[list[Action]], list[list[Action]]]:
    """The gold actions as turns: turn k is the agent's run ``agent[k]`` then the user's run
    ``user[k]`` (telecom interleaves them; airline and retail have one agent run)."""
    agent: list[list[Action]] = [[]]
    user: list[list[Action]] = [[]]
    for action in actions:
        if action.requestor == "user":
            user[-1].append(action)
            continue
        if user[-1]:
            agent.append([])
            user.append([])
        agent[-1].append(action)
    return agent, user


def recorded_calls(turns: Sequence[Sequence[Message]]) -> list[list[JsonDict]]:
    """The user's own tool calls of each turn as the row keeps them (``USER_CALLS``)."""
    message = tau2_module("tau2.data_model.message")
    kept: list[list[JsonDict]] = []
    for turn in turns:
        calls: list[JsonDict] = []
        for item in turn:
            if isinstance(item, message.UserMessage):
                for call in item.tool_calls or []:
                    calls.append({"name": call.name, "arguments": dict(call.arguments)})
            elif isinstance(item, message.ToolMessage) and calls:
                calls[-1].update(output=item.content, error=bool(item.error))
        kept.append(calls)
    return kept


def replayed_calls(raw: object) -> list[list[Message]]:
    """The τ² messages of the user's calls a row keeps (``USER_CALLS``; none: ``[]``);
    ``InvalidTask`` naming the field when it is not what ``recorded_calls`` writes."""
    if raw is None:
        return []
    message = tau2_module("tau2.data_model.message")
    bad = InvalidTask(
        f"{USER_CALLS} must be a list (one per user turn) of lists of "
        '{"name", "arguments", "output", "error"}'
    )
    if not isinstance(raw, list):
        raise bad
    turns: list[list[Message]] = []
    for number, turn in enumerate(raw):
        if not isinstance(turn, list):
            raise bad
        messages: list[Message] = []
        for index, call in enumerate(turn):
            if not (
                isinstance(call, dict)
                and isinstance(call.get("name"), str)
                and isinstance(call.get("arguments"), dict)
                and isinstance(call.get("output"), str)
            ):
                raise bad
            tool_call = message.ToolCall(
                id=f"user_{number}_{index}",
                name=call["name"],
                arguments=call["arguments"],
                requestor="user",
            )
            messages.append(message.UserMessage(role="user", tool_calls=[tool_call]))
            messages.append(
                message.ToolMessage(
                    id=tool_call.id,
                    role="tool",
                    content=call["output"],
                    requestor="user",
                    error=bool(call.get("error")),
                )
            )
        turns.append(messages)
    return turns
