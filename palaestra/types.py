"""The public vocabulary: tasks, verdicts, failures, rollouts and Responses-API items.

Inside the hot loop everything is a plain dict (the JSON shape of the OpenAI Responses API);
these types name the shapes and hold the few helpers that build them.
"""

from __future__ import annotations

import enum
import os
import time
from dataclasses import dataclass, field
from typing import Any

JsonDict = dict[str, Any]
"""A JSON object as parsed by orjson; the currency of the hot path."""


class FailureKind(enum.StrEnum):
    """Why a rollout could not be scored. Recorded in the failures sidecar."""

    MODEL_ERROR = "model_error"
    TIMEOUT = "timeout"
    TOOL_ERROR = "tool_error"
    ENV_ERROR = "env_error"
    SESSION_LOST = "session_lost"
    VERIFIER_ERROR = "verifier_error"
    INVALID_INPUT = "invalid_input"
    SANDBOX_LIMIT = "sandbox_limit"
    WORKER_CRASH = "worker_crash"
    INTERNAL_ERROR = "internal_error"
    USER_MODEL_ERROR = "user_model_error"
    SANDBOX_ERROR = "sandbox_error"
    AGENT_ERROR = "agent_error"


class Producer(enum.StrEnum):
    """Who produced an item of a trajectory's output (the row's ``producers``)."""

    POLICY = "policy"
    """The model being trained: its messages, reasoning and tool calls. The only trainable one."""
    TOOL = "tool"
    """A tool's output (``function_call_output``), or the agent's error text for a bad call."""
    USER = "user"
    """A simulated user's message (``Environment.user_turn``)."""
    ENVIRONMENT = "environment"
    """An environment's own message (a turn-based environment's observation)."""


TRAINABLE_PRODUCERS: frozenset[str] = frozenset({Producer.POLICY})
"""The producers whose items a trainer may put in the loss: the policy's alone."""

CALL_INDEX = "call_index"
"""Item field a gateway puts beside a call's token ids: the call's index in the rollout."""
CALL_PARENT = "call_parent"
"""Item field a gateway puts beside a call's token ids: the ``call_index`` of the call it
continues at the message level (absent for a call that starts a branch).
``palaestra.training.tree`` checks it against the ids and counts what was re-tokenised."""


def producers_of(output: list[JsonDict], recorded: Any = None) -> list[str]:
    """Who produced each item of ``output``: ``recorded`` (a row's ``_palaestra.producers``)
    when it is aligned with it, else derived as rows without it were written (a tool output is
    the tool's, a ``role: user`` message the environment's, anything else the policy's)."""
    if isinstance(recorded, list) and len(recorded) == len(output):
        return [str(producer) for producer in recorded]
    return [_derived_producer(item) for item in output]


def _derived_producer(item: Any) -> str:
    if not isinstance(item, dict):
        return Producer.POLICY
    if item.get("type") == "function_call_output":
        return Producer.TOOL
    if item.get("role") == "user":
        return Producer.ENVIRONMENT
    return Producer.POLICY


@dataclass(frozen=True, slots=True)
class Failure:
    """An explicit failure: the rollout has no reward. ``masked``: leave it out of training.
    ``transient``: a service the rollout needed was gone (``ServiceUnreachable``), so the
    rollout did nothing wrong and a resume runs it again (its record's class says so)."""

    kind: FailureKind
    reason: str
    masked: bool = True
    transient: bool = False

    def to_json(self) -> JsonDict:
        return {"kind": str(self.kind), "reason": self.reason, "masked": self.masked}


@dataclass(slots=True)
class Verdict:
    """What verification returns.

    ``metrics`` are extra numeric or string fields written beside ``reward`` in the rollout row
    (NeMo Gym writes verifier fields flat, and so do we). A verdict with a ``failure`` is not a
    score: the rollout goes to the failures sidecar instead of the output.
    """

    reward: float = 0.0
    reward_components: dict[str, float] | None = None
    step_rewards: list[float] | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    failure: Failure | None = None

    @classmethod
    def failed(cls, kind: FailureKind, reason: str, *, masked: bool = True) -> Verdict:
        return cls(failure=Failure(kind, reason, masked))

    def to_fields(self) -> JsonDict:
        """The verifier fields as they appear in a rollout row."""
        fields: JsonDict = dict(self.metrics)
        fields["reward"] = float(self.reward)
        if self.reward_components is not None:
            fields["reward_components"] = dict(self.reward_components)
        if self.step_rewards is not None:
            fields["step_rewards"] = list(self.step_rewards)
        return fields


# --- Responses-API item helpers -------------------------------------------------------------


def user_message(text: str) -> JsonDict:
    return {"type": "message", "role": "user", "content": text}


def input_items(params: JsonDict) -> list[JsonDict]:
    """The ``input`` of Responses create params as a list of items (a string becomes a message)."""
    raw = params.get("input", [])
    if isinstance(raw, str):
        return [user_message(raw)]
    return list(raw)


def assistant_message(text: str, *, item_id: str = "msg_0") -> JsonDict:
    """A completed assistant message saying ``text``, as a Responses output item."""
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


ToolOutput = str | list[JsonDict]
"""What a tool call answers: text, or Responses content parts (``input_text`` and
``input_image``, e.g. a screenshot) when the tool returned a list of them."""

CONTENT_PART_TYPES = frozenset({"input_text", "input_image"})


def content_parts(value: object) -> list[JsonDict] | None:
    """``value`` as a tool output's content parts when it is a non-empty list of
    ``input_text``/``input_image`` parts (what a tool returns to show an image), else None."""
    if not isinstance(value, list) or not value:
        return None
    for part in value:
        if not isinstance(part, dict) or part.get("type") not in CONTENT_PART_TYPES:
            return None
    return value


def output_as_text(output: ToolOutput) -> str:
    """A tool output as text, for readers of text only: an image part reads ``[image]``."""
    if isinstance(output, str):
        return output
    return "".join(
        str(part.get("text", "")) if part.get("type") == "input_text" else "[image]"
        for part in output
    )


def function_call_output(call_id: str, output: ToolOutput) -> JsonDict:
    """A tool's output item, in NeMo Gym's field order, with an id of its own (Open Responses
    wants one on every item; made here, it need not be made later from the item's place)."""
    return {
        "call_id": call_id,
        "output": output,
        "type": "function_call_output",
        "id": f"fco_{os.urandom(12).hex()}",
        "status": "completed",
    }


def output_text(response: JsonDict) -> str:
    """All assistant text of a Response, joined: what a verifier usually reads."""
    parts: list[str] = []
    for item in response.get("output", []):
        if item.get("type") == "message" and item.get("role", "assistant") == "assistant":
            content = item.get("content", [])
            if isinstance(content, str):
                parts.append(content)
                continue
            for part in content:
                if part.get("type") in ("output_text", "text"):
                    parts.append(str(part.get("text", "")))
    return "".join(parts)


def message_text(item: JsonDict) -> str:
    """The text of one message item, whatever its content's form (a string, or parts)."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") in ("output_text", "input_text", "text")
        )
    return ""


def function_calls(response: JsonDict) -> list[JsonDict]:
    """The ``function_call`` items of a response's output, in order."""
    return [item for item in response.get("output", []) if item.get("type") == "function_call"]


def empty_usage() -> JsonDict:
    return {
        "input_tokens": 0,
        "output_tokens": 0,
        "total_tokens": 0,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }


def add_usage(total: JsonDict, usage: JsonDict | None) -> None:
    """Add one call's ``usage`` into ``total`` in place (details included)."""
    if not usage:
        return
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        total[key] = total.get(key, 0) + int(usage.get(key) or 0)
    for details, key in (
        ("input_tokens_details", "cached_tokens"),
        ("output_tokens_details", "reasoning_tokens"),
    ):
        value = (usage.get(details) or {}).get(key) or 0
        total.setdefault(details, {})[key] = total.get(details, {}).get(key, 0) + int(value)


@dataclass(slots=True)
class AgentResult:
    """One finished rollout: a trajectory with a verdict, or an explicit failure.

    ``response`` is the whole trajectory as one OpenAI Response (every output item of every
    model call and tool output, usage summed); it is kept on failure too, as far as it got.
    """

    response: JsonDict | None = None
    verdict: Verdict | None = None
    failure: Failure | None = None
    model_calls: int = 0
    tool_calls: int = 0
    truncated: str | None = None
    """Why the agent stopped before the model finished (``"max_steps"``, ``"max_user_turns"``);
    the row says so."""
    producers: list[str] | None = None
    """Who produced each item of ``response["output"]`` (a ``Producer``), aligned with it;
    None when the agent did not say (every item is then the policy's, as before)."""
    user_turns: int = 0
    """Messages a simulated user added to the trajectory."""
    timings: dict[str, float] = field(default_factory=dict)
    endpoints: list[str] | None = None
    """The model endpoints of a pool the rollout's calls went to, in order (more than one:
    it moved after a failure); None when the model is not a pool. Set by ``BoundAgent``."""
    policy_versions: list[int] | None = None
    """The policy version that served each model request of the rollout, in order (a call
    an engine aborted and palaestra resumed has one per segment); None when no version was
    known (``palaestra.models.versions``). Set by ``BoundAgent``."""
    resumed: dict[str, int] | None = None
    """A durable rollout continued from its checkpoint after its collection stopped:
    ``{"from_turn": n, "attempts": a}`` (``palaestra.agents.durable``); the row says so."""
    worker_reruns: int = 0
    """Times the rollout was started again because the worker running it died (``--workers``,
    ``--executor ray``); the row says so when it is not 0. Set by the dispatcher."""
    branches: int | None = None
    """How many branches (leaves) the rollout's model calls form, for an agent whose calls went
    through a gateway (``palaestra.agents.command.record``): 1 for a line, more when the harness
    compacted its history, retried a call or ran a sub-agent. Each branch is one training
    sequence (``palaestra.training.tree``). None when the agent did not say."""
    retokenized: int = 0
    """Calls a gateway continued by their messages whose token ids do not extend the call they
    continue (re-tokenised on the way): placed as roots of their own, never spliced."""
    closed_book: bool | None = None
    """Whether the rollout's model requests went without provider-hosted tools
    (``palaestra.models.closed_book``); None when the runner did not say. Set by
    ``BoundAgent``."""
    hosted_tools_dropped: list[str] | None = None
    """The hosted tool types a closed-book route kept out of its requests (a task that named
    ``web_search``); None when none was asked for. Set by ``BoundAgent``."""
    conformed: bool = False
    """Whether ``response`` is an Open Responses Response already (``run_episode`` made it
    so before verifying it): the row then writes it as it is, without walking it again."""

    def add_time(self, phase: str, started: float) -> None:
        self.timings[phase] = self.timings.get(phase, 0.0) + time.perf_counter() - started


@dataclass(frozen=True, slots=True)
class StepResult:
    observation: str
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> JsonDict:
        return {
            "observation": self.observation,
            "reward": self.reward,
            "terminated": self.terminated,
            "truncated": self.truncated,
            "info": self.info,
        }
