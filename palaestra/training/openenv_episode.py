"""One rollout of a palaestra environment driven call by call from outside, as OpenEnv does.

OpenEnv's harness (``palaestra.training.openenv``) and OpenEnv's client protocol
(``palaestra.serve.openenv_app``) both own the model loop themselves: they start an episode,
call tools one at a time and end it with ``verify``. ``Episode`` is that life cycle over any
palaestra ``EnvironmentClient`` (in process or remote), with no dependency on OpenEnv: it seeds
a session, turns the task's prompt into chat messages, runs tool calls the way palaestra's own
agent does (a rejected call is text fed back to the model, a broken tool fails the rollout),
records the trajectory as Responses items, and verifies it.

A verdict that is a failure is never turned into a reward: ``verify`` raises ``EpisodeFailed``
with its kind and reason.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import orjson

from palaestra.agents.tool_calling import request_params
from palaestra.environment.running.client import EnvironmentClient
from palaestra.environment.users import UserTurn
from palaestra.errors import InputError, PalaestraError, ToolCallRejected
from palaestra.models.chat_format import chat_request_to_responses_params, responses_to_chat
from palaestra.types import (
    Failure,
    JsonDict,
    Producer,
    Verdict,
    assistant_message,
    function_call_output,
    input_items,
    output_as_text,
    user_message,
)
from palaestra.wire.rows import PARAMS


class EpisodeFailed(PalaestraError):
    """Verification returned a failure (``Verdict.failed``): the rollout has no reward."""

    def __init__(self, failure: Failure) -> None:
        self.failure = failure
        super().__init__(f"rollout failed ({failure.kind.value}): {failure.reason}")


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """A tool call's output as the model reads it; ``rejected`` when the call was wrong."""

    text: str
    rejected: bool = False


def mcp_tools(tools: list[JsonDict]) -> list[JsonDict]:
    """Responses function tools as MCP ``tools/list`` entries (``name``, ``description``,
    ``inputSchema``)."""
    return [
        {
            "name": tool["name"],
            "description": tool.get("description") or "",
            "inputSchema": tool.get("parameters") or {"type": "object", "properties": {}},
        }
        for tool in tools
        if tool.get("type", "function") == "function"
    ]


def prompt_messages(task: JsonDict) -> list[JsonDict]:
    """The task's prompt (``responses_create_params``) as Chat Completions messages."""
    params = task.get(PARAMS)
    if not isinstance(params, dict):
        raise InputError("the task has no object here", field=PARAMS)
    messages: list[JsonDict] = responses_to_chat({**params, "tools": []})["messages"]
    return messages


def transcript_items(messages: list[JsonDict]) -> list[JsonDict]:
    """Chat messages after the prompt (assistant turns, tool results) as Responses items."""
    if not messages:
        return []
    items: list[JsonDict] = chat_request_to_responses_params({"messages": messages})["input"]
    return items


class Episode:
    """A seeded session of ``client`` for ``task``; close it (``close``) when done."""

    def __init__(
        self, client: EnvironmentClient, task: JsonDict, session_id: str, episode_id: str
    ) -> None:
        self.client = client
        self.task = task
        self.session_id = session_id
        self.episode_id = episode_id
        self.items: list[JsonDict] = []
        """The trajectory so far: assistant messages, function calls and their outputs, and a
        simulated user's messages."""
        self.producers: list[str] = []
        """Who produced each item of ``items`` (the row's ``producers``): the policy its calls
        and messages, the tools their outputs, the simulated user its messages."""
        self.step_count = 0
        self._call_ids: Iterator[int] = itertools.count(1)
        self._closed = False

    @classmethod
    async def start(
        cls, client: EnvironmentClient, task: JsonDict, episode_id: str | None = None
    ) -> Episode:
        prompt_messages(task)  # a task without a prompt is refused before a session exists
        session_id = await client.seed(task)
        return cls(client, task, session_id, episode_id or uuid.uuid4().hex)

    def initial_messages(self) -> list[JsonDict]:
        return prompt_messages(self.task)

    def tools(self) -> list[JsonDict]:
        """The task's own tools when it names some (as palaestra's agent offers), else the
        environment's, as MCP entries."""
        return mcp_tools(request_params(self.task, self.client).get("tools") or [])

    async def call_tool(self, name: str, arguments: JsonDict) -> ToolOutcome:
        """Run one tool call and record it; a wrong call is an outcome, a broken tool raises."""
        call_id = f"call_{next(self._call_ids)}"
        self.items.append(
            {
                "type": "function_call",
                "call_id": call_id,
                "name": name,
                "arguments": orjson.dumps(arguments).decode(),
                "status": "completed",
            }
        )
        self.producers.append(Producer.POLICY)
        self.step_count += 1
        try:
            output = await self.client.call_tool(self.session_id, name, arguments)
            outcome = ToolOutcome(output_as_text(output))
        except ToolCallRejected as rejected:
            outcome = ToolOutcome(f"Error: {rejected}", rejected=True)  # as palaestra's agent
        self.items.append(function_call_output(call_id, outcome.text))
        self.producers.append(Producer.TOOL)
        return outcome

    def say(self, text: str) -> None:
        """Record an assistant message (the model's answer) in the trajectory."""
        self.items.append(assistant_message(text, item_id=f"msg_{len(self.items)}"))
        self.producers.append(Producer.POLICY)
        self.step_count += 1

    async def user_turn(self) -> UserTurn | None:
        """The simulated user's answer to the policy's last message, recorded as the user's
        (never the policy's); None when the environment has no user or it said nothing."""
        if not self.client.has_user:
            return None
        history = input_items(self.task[PARAMS]) + self.items
        turn = await self.client.user_turn(self.session_id, history)
        if turn is not None and turn.text:
            self.items.append(user_message(turn.text))
            self.producers.append(Producer.USER)
        return turn

    def response(self, items: list[JsonDict] | None = None) -> JsonDict:
        """The trajectory (``items`` or the recorded one) as the Response ``verify`` reads."""
        return {
            "id": f"resp_{self.episode_id}",
            "object": "response",
            "status": "completed",
            "model": "openenv",
            "output": list(self.items if items is None else items),
        }

    async def verify(self, response: JsonDict | None = None) -> Verdict:
        """Score the trajectory; ``EpisodeFailed`` when the verdict is a failure."""
        verdict = await self.client.verify(
            self.session_id, self.task, response if response is not None else self.response()
        )
        if verdict.failure is not None:
            raise EpisodeFailed(verdict.failure)
        return verdict

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self.client.close(self.session_id)


def verdict_metrics(verdict: Verdict) -> JsonDict:
    """The verdict's numeric fields (reward components flattened), for a trainer's metrics."""
    metrics: JsonDict = {}
    for key, value in verdict.metrics.items():
        if isinstance(value, int | float):  # bools too: a flag's mean is a rate
            metrics[key] = float(value)
    for key, value in (verdict.reward_components or {}).items():
        metrics[f"reward_components/{key}"] = value
    return metrics
