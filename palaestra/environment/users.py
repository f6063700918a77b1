"""Simulated users: who answers the policy when it speaks instead of calling a tool.

An environment with a user answers ``Environment.user_turn``: when the policy's answer calls no
tool, the agent asks the environment for the user's next message and the conversation goes on
until the user is done (or the agent's step budget ends). Three kinds of user share one
interface, ``SimulatedUser``:

- ``ScriptedUser``: the next recorded turn (BFCL multi-turn: the dataset holds every turn);
- ``ModelUser``: an LLM given a persona and instructions from the task, with the suite's own
  stop signals (τ²-bench); the model is the run's *user model* (``--user-model``), lent to the
  environment through its context (``EnvironmentContext.user_model``), never a global;
- a rule-based user: any object with ``reply`` (or, for turn-based games, a
  ``StepEnvironment``'s ``step``, as ``meeting_scheduler`` does).

A user's messages enter the trajectory as ``role: user`` messages produced by ``user``: they
are never trained on. A user model that fails (an error, an empty answer) raises
``UserModelFailure``: the rollout is a ``user_model_error`` failure, never a score. A user
model that is gone (unreachable after its retries, or hung) raises ``ModelOutage``: the run
stops under the policy's rule (``palaestra.collection.collector``), resumable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from palaestra.errors import ModelError, ModelOutage, RolloutFailure, UserModelFailure
from palaestra.models.affinity import ROLLOUT_SCOPE
from palaestra.models.base import Model
from palaestra.types import FailureKind, JsonDict, message_text, output_text

USER_MODEL = "the user model"
"""How failures and a run's stop name the simulated user's model (``user_model_named``)."""


class LentUserModel:
    """The run's user model as an environment is lent it (``EnvironmentContext.user_model``):
    the model, and where it is, which its failures name (``user_model_named``). A run has two
    models or more, and an error that says only "the model" does not tell which one failed.

    It answers as the model does (its errors unchanged); the lender closes the model, so
    ``aclose`` here does nothing.
    """

    def __init__(self, model: Model, urls: Sequence[str] = (), backend: str = "") -> None:
        self.model = model
        self.urls = tuple(urls)
        """The model's URLs as messages show them; none for a model not reached over HTTP."""
        self.backend = backend
        self.name = model.name
        self.stats = model.stats

    async def respond(self, params: JsonDict) -> JsonDict:
        try:
            return await self.model.respond(params)
        finally:
            self.name = self.model.name  # a remote model learns its name from its answers

    async def check(self) -> None:
        await self.model.check()

    async def aclose(self) -> None:
        return None


def user_model_named(model: Model | None, reason: str = "") -> str:
    """How a message saying ``reason`` names ``model``: ``the user model at <its URL>`` (or
    ``the user model (<backend>)``) when it is lent (``LentUserModel``), the URL left out when
    ``reason`` names it already."""
    if not isinstance(model, LentUserModel):
        return USER_MODEL
    return naming(model.urls, model.backend, reason)


def naming(urls: Sequence[str], backend: str, reason: str = "") -> str:
    """``user_model_named`` of a user model at ``urls`` (of ``backend``), built or not."""
    if not urls:
        return f"{USER_MODEL} ({backend})" if backend else USER_MODEL
    if any(url in reason for url in urls):
        return USER_MODEL
    return f"{USER_MODEL} at {', '.join(urls)}"


@dataclass(frozen=True, slots=True)
class UserTurn:
    """What the user said, and whether the conversation is over."""

    text: str
    done: bool = False
    """The user ended the conversation (a stop signal, no recorded turn left). A done turn's
    ``text`` is still added to the trajectory when it is not empty."""


@runtime_checkable
class SimulatedUser(Protocol):
    """Anything that answers the policy's last message as the user would."""

    async def reply(self, conversation: Sequence[JsonDict]) -> UserTurn:
        """The user's next message, given the trajectory so far (Responses items: the task's
        input, then every output item). Raise ``UserModelFailure`` when it cannot answer."""
        ...


class ScriptedUser:
    """The next recorded turn each time it is asked; done when none is left."""

    def __init__(self, turns: Sequence[str]) -> None:
        self.turns = list(turns)
        self._next = 0

    async def reply(self, conversation: Sequence[JsonDict]) -> UserTurn:
        if self._next >= len(self.turns):
            return UserTurn("", done=True)
        text = self.turns[self._next]
        self._next += 1
        return UserTurn(text)

    @property
    def remaining(self) -> int:
        """Recorded turns not yet said."""
        return len(self.turns) - self._next


class ModelUser:
    """An LLM playing the user: ``instructions`` (persona, goal, what it knows) as its system
    message, the conversation seen from its side, ``stop_signals`` ending it."""

    def __init__(
        self,
        model: Model,
        instructions: str,
        *,
        stop_signals: Sequence[str] = (),
        temperature: float | None = 0.0,
        max_output_tokens: int | None = 1024,
    ) -> None:
        self.model = model
        self.instructions = instructions
        self.stop_signals = tuple(stop_signals)
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens

    async def reply(self, conversation: Sequence[JsonDict]) -> UserTurn:
        params: JsonDict = {
            "instructions": self.instructions,
            "input": as_seen_by_user(conversation),
        }
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.max_output_tokens is not None:
            params["max_output_tokens"] = self.max_output_tokens
        # The user's calls are a session of their own within the rollout (``RolloutScope.user``).
        scope = ROLLOUT_SCOPE.get()
        token = None if scope is None else ROLLOUT_SCOPE.set(scope.user())
        try:
            response = await self.model.respond(params)
        except ModelError as error:
            raise user_model_failed(error, self.model) from error
        finally:
            if token is not None:
                ROLLOUT_SCOPE.reset(token)
        text = output_text(response).strip()
        if not text:
            raise UserModelFailure(f"{user_model_named(self.model)} answered nothing")
        return UserTurn(text, done=any(signal in text for signal in self.stop_signals))


def user_model_failed(error: ModelError, model: Model | None = None) -> RolloutFailure:
    """What a failed call of the user model (``model``, which names it) fails: the run, when
    the model is gone (a ``ModelOutage``: the policy's stop rule), or only its rollout
    (``UserModelFailure``)."""
    named = user_model_named(model, error.reason)
    outage = ModelOutage.of(error, named, FailureKind.USER_MODEL_ERROR)
    return outage or UserModelFailure(f"{named} failed: {error.reason}")


def as_seen_by_user(conversation: Sequence[JsonDict]) -> list[JsonDict]:
    """The conversation from the user's side: the policy's messages are what the user model
    reads (``role: user``) and the user's own earlier messages are its answers (``role:
    assistant``). Tool calls, tool outputs, reasoning and system messages stay hidden."""
    seen: list[JsonDict] = []
    for item in conversation:
        if item.get("type", "message") != "message":
            continue
        role = item.get("role")
        text = message_text(item)
        if not text:
            continue
        if role == "assistant":
            seen.append({"role": "user", "content": text})
        elif role == "user":
            seen.append({"role": "assistant", "content": text})
    return seen
