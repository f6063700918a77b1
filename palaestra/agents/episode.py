"""The frame every agent shares: seed a session, run the agent's part, verify, always close.

Failures are caught here once, for every agent and every environment client: a
``RolloutFailure`` becomes the result's failure (with the trajectory so far kept),
``ServiceUnreachable`` (model or served environment) propagates so the collector can stop,
and the session is closed whatever happened.

One rule for every agent and environment when the prompt outgrows the model's context (the
model's answer is then an empty incomplete Response with ``incomplete_details.code``
``context_length_exceeded``: ``palaestra.models.base.Model``): the episode ends there, is
marked ``truncated = "context_exceeded"`` and is verified as it stands, like an episode that
ran out of ``max_steps``; the summary and the aggregate count it with the other truncations.

A verdict whose reward, reward components or step rewards are not finite numbers is a
``verifier_error`` failure, never a score.

The trajectory's ``Response`` is completed here, once per rollout, for every agent and model
backend (``whole_response``): it carries every field NeMo Gym's ``Response`` has, in its
order, the request's settings where the model did not echo them and null where unknown, so a
NeMo Gym verifier accepts it and a row reads as NeMo Gym's own.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from palaestra.agents.context import RolloutContext
from palaestra.agents.durable import Checkpoints
from palaestra.environment.running.boundary import Boundary
from palaestra.environment.running.client import EnvironmentClient
from palaestra.environment.verdicts import verdict_problem
from palaestra.errors import (
    EnvironmentFailure,
    EnvironmentTimeout,
    PalaestraError,
    RolloutFailure,
    ServiceUnreachable,
    VerifierFailure,
)
from palaestra.models.base import Model
from palaestra.models.chat_format import CONTEXT_LENGTH_EXCEEDED
from palaestra.types import (
    AgentResult,
    Failure,
    JsonDict,
    Producer,
    add_usage,
    empty_usage,
    input_items,
)
from palaestra.wire.open_responses import Layout
from palaestra.wire.rows import PARAMS

Body = Callable[[str, AgentResult], Awaitable[None]]
"""The agent's own part: given the session id, fill ``result.response`` (and counters)."""

CONTEXT_EXCEEDED = "context_exceeded"
"""``AgentResult.truncated`` of an episode whose prompt outgrew the model's context."""


class ContextExceeded(PalaestraError):
    """The model could not read the prompt: it no longer fits its context. Raised by
    ``Conversation.ask`` so that no agent goes on with an empty answer; ``run_episode`` ends
    the episode there and verifies it."""


def context_exceeded(response: JsonDict | None) -> bool:
    """Whether ``response`` is a model's answer to a prompt past its context."""
    if response is None or response.get("status") != "incomplete":
        return False
    details = response.get("incomplete_details")
    return isinstance(details, dict) and details.get("code") == CONTEXT_LENGTH_EXCEEDED


async def run_episode(
    task: JsonDict,
    env: EnvironmentClient,
    body: Body,
    *,
    start: Callable[[], Awaitable[str]] | None = None,
) -> AgentResult:
    """``start`` opens the session instead of ``env.seed(task)`` (a durable rollout resumed
    from its checkpoint restores it: ``palaestra.agents.durable``)."""
    result = AgentResult()
    started = time.perf_counter()
    session_id: str | None = None
    try:
        phase = time.perf_counter()
        session_id = await (env.seed(task) if start is None else start())
        result.add_time("seed", phase)
        with contextlib.suppress(ContextExceeded):  # result.response says why, and holds
            await body(session_id, result)  # the trajectory so far
        if context_exceeded(result.response):
            result.truncated = CONTEXT_EXCEEDED
        if result.response is None:
            raise RolloutFailure("the agent produced no response")
        result.response = whole_response(result.response, task)
        result.conformed = True
        phase = time.perf_counter()
        verdict = await env.verify(session_id, task, result.response)
        result.add_time("verify", phase)
        problem = verdict_problem(verdict)  # NaN, inf or a non-number: never a score
        if problem is not None:
            raise VerifierFailure(problem)
        result.verdict = verdict
    except ServiceUnreachable:
        raise  # nothing can go on without the model or the env: the collector stops the run
    except RolloutFailure as failure:
        result.failure = Failure(failure.kind, failure.reason)
        if result.response is not None:  # the trajectory so far, in the same form
            result.response = whole_response(result.response, task)
            result.conformed = True
    finally:
        if session_id is not None:
            await close_session(env, session_id, result)
        result.add_time("total", started)
    return result


_RESPONSE_FIELDS: JsonDict = {
    "id": None,
    "created_at": None,
    "error": None,
    "incomplete_details": None,
    "instructions": None,
    "metadata": None,
    "model": None,
    "object": "response",
    "output": None,
    "parallel_tool_calls": True,
    "temperature": None,
    "tool_choice": "auto",
    "tools": None,  # [] below: a list here would be shared by every row
    "top_p": None,
    "background": None,
    "conversation": None,
    "max_output_tokens": None,
    "max_tool_calls": None,
    "previous_response_id": None,
    "prompt": None,
    "prompt_cache_key": None,
    "reasoning": None,
    "safety_identifier": None,
    "service_tier": None,
    "status": None,
    "text": None,
    "top_logprobs": None,
    "truncation": None,
    "usage": None,
    "user": None,
}
"""NeMo Gym 0.4's ``Response`` (OpenAI's, openai 2.7), field by field in its order, with the
value it has when nothing is known (OpenAI's defaults where it requires one)."""
_ECHOED = frozenset(_RESPONSE_FIELDS) - {
    "id",
    "created_at",
    "error",
    "incomplete_details",
    "object",
    "output",
    "conversation",
    "prompt_cache_key",
    "safety_identifier",
    "status",
    "usage",
}
"""Fields a Response echoes from its request (what NeMo Gym's vLLM model server copies)."""


_NEMO_GYM = Layout(_RESPONSE_FIELDS, _ECHOED)


def whole_response(response: JsonDict, task: JsonDict) -> JsonDict:
    """``response`` with every field of NeMo Gym's ``Response``, in its order, conformed to
    Open Responses (``palaestra.wire.open_responses.conform``): the verifier and the row read
    the same Response, and the row's builder need not walk it again.

    What the model answered wins; a field it left out is the request's setting (``model``,
    ``tools``, sampling), else null (or the spec's default). Fields NeMo Gym does not know
    (token ids a backend added) follow, then the spec's own. An id, a creation time and a
    model name are required by the schema, so a trajectory that got none (no model call
    answered) is given them. Idempotent.
    """
    return _NEMO_GYM.conform(response, task.get(PARAMS))


Turns = Callable[["Conversation"], Awaitable[None]]
"""An agent's turns over one rollout's ``Conversation`` (``run_conversation``)."""


def run_conversation(
    task: JsonDict,
    env: EnvironmentClient,
    context: RolloutContext,
    turns: Turns,
    *,
    params: JsonDict | None = None,
) -> Coroutine[Any, Any, AgentResult]:
    """``run_episode`` for an agent whose rollout is one ``Conversation`` (of ``params``, by
    default the task's): ``turns`` asks the model, adds what others produce, and calls
    ``conversation.checkpoint()`` at each turn boundary.

    Durable by the ``context``: lent a ``Durability`` against a restorable ``env``, the
    rollout is checkpointed once its session is seeded (before the first turn can act on
    it) and at every boundary ``turns`` marks; a rollout stopped by the run goes on from its
    last checkpoint when the run resumes: the session restored instead of seeded, the
    conversation and the counters as they were, ``turns`` called on it (``result.model_calls``
    then counts the turns already made).

    Returns ``run_episode``'s coroutine to await (not a coroutine of its own: one frame less
    on every suspension of the rollout)."""
    checkpoints = context.checkpoints(env)
    params = dict(task[PARAMS]) if params is None else params

    async def body(session_id: str, result: AgentResult) -> None:
        conversation = Conversation(params, result, session_id, checkpoints)
        if checkpoints is not None:
            if checkpoints.resume is not None:
                conversation.restore(checkpoints.resume)
                checkpoints.restored(result)
            else:  # the seeded state, before the first turn can act on it
                await conversation.checkpoint()
        await turns(conversation)

    start = None if checkpoints is None else checkpoints.start(task)
    return run_episode(task, env, body, start=start)


_CLOSE = Boundary(EnvironmentFailure, EnvironmentTimeout, "close")
"""A client's own bug in close is an env_error like any failure of close, never hidden."""


async def close_session(env: EnvironmentClient, session_id: str, result: AgentResult) -> None:
    """Close the session; a close failure fails a rollout that had not failed yet."""
    try:
        try:
            await env.close(session_id)
        except Exception as error:  # the boundary's mapping without its enter/exit calls
            _CLOSE.raise_for(error)
            raise
    except RolloutFailure as failure:
        if result.failure is None:
            result.failure = Failure(failure.kind, failure.reason)
            result.verdict = None


_POLICY = Producer.POLICY.value


class Conversation:
    """One rollout's growing trajectory: the task's input, then every item produced so far.

    ``ask`` sends the whole of it to the model and keeps ``result.response`` current (usage
    summed over calls), so a failure later in the rollout keeps the trajectory so far.
    ``producers`` says who produced each output item (``result.producers``, the row's
    ``producers``): ``ask`` adds the policy's, ``add`` anyone else's. ``checkpoint`` marks a
    turn boundary: a durable rollout (``checkpoints``) saves itself there.
    """

    def __init__(
        self,
        params: JsonDict,
        result: AgentResult,
        session_id: str = "",
        checkpoints: Checkpoints | None = None,
    ) -> None:
        self.params = params
        self.result = result
        self.session_id = session_id
        """The environment session the rollout runs in (``run_episode``'s)."""
        self.checkpoints = checkpoints
        """The rollout's checkpointing; None: it does not checkpoint."""
        self.history = input_items(params)
        self.outputs: list[JsonDict] = []
        self.producers: list[str] = []
        result.producers = self.producers
        self.usage = empty_usage()

    def restore(self, checkpoint: JsonDict) -> None:
        """Continue from a durable rollout's checkpoint (``palaestra.agents.durable``): its
        output items, their producers and the usage so far."""
        response: JsonDict = checkpoint["response"]
        self.outputs = list(response.get("output") or [])
        producers = checkpoint.get("producers")
        if not isinstance(producers, list) or len(producers) != len(self.outputs):
            producers = [_POLICY] * len(self.outputs)
        self.producers = [str(p) for p in producers]
        self.result.producers = self.producers
        usage = response.get("usage")
        if isinstance(usage, dict):
            self.usage = {k: dict(v) if isinstance(v, dict) else v for k, v in usage.items()}
        self.result.response = {**response, "output": self.outputs, "usage": self.usage}

    async def checkpoint(self, extra: JsonDict | None = None) -> None:
        """A turn boundary (the turn's items are added): a durable rollout saves itself here,
        with ``extra`` (the agent's own fields, read back from ``checkpoints.resume``), and a
        stopped one goes on from here. Nothing for a rollout that does not checkpoint."""
        if self.checkpoints is not None:
            await self.checkpoints.save(self.session_id, self.result, extra)

    def add(self, item: JsonDict, producer: Producer) -> None:
        """Append an item someone other than the policy produced (a tool output, a user's
        message, an environment's observation)."""
        self.outputs.append(item)
        self.producers.append(producer.value)

    async def ask(self, model: Model) -> JsonDict:
        phase = time.perf_counter()
        response = await model.respond({**self.params, "input": self.history + self.outputs})
        self.result.add_time("model", phase)
        self.result.model_calls += 1
        output = response.get("output") or []
        self.outputs.extend(output)
        self.producers.extend([_POLICY] * len(output))
        add_usage(self.usage, response.get("usage"))
        self.result.response = {**response, "output": self.outputs, "usage": self.usage}
        if context_exceeded(response):
            raise ContextExceeded
        return response
