"""Durable rollouts: what an agent checkpoints at turn boundaries, and how it resumes.

The collector (the single writer of a run's files) lends each rollout it starts a
``Durability`` in the rollout's context (``RolloutContext``, an argument of ``Agent.run``):
the rollout's last checkpoint when a stopped collection left one, and ``save`` to record a new
one. An agent checkpoints only against an environment client that is ``restorable`` (its
environment implements ``export_state`` and ``restore_state``); ``RolloutContext.checkpoints``
makes the agent's ``Checkpoints`` then, and every other rollout restarts as before.

A checkpoint is taken before the first model call (the seeded state, or the reset episode:
without it a rollout stopped during its first turn would be seeded again, and an idempotency
key drawn in ``seed`` would change, so the turn's effect outside the state would happen twice)
and after a turn completed (the tools of an answer ran and their outputs were added, or a
simulated user's message was): the trajectory so far (the ``response`` with
every output item, token ids included when the backend returns them, and the usage), who
produced each item, the counters, the policy versions and endpoints of the calls so far, and
the environment's exported state. A resumed rollout opens its session with
``restore_state`` instead of ``seed`` and goes on from there: the turn that was in progress is
done again, the completed turns are not.

``save`` returns False when the writer refused it: the rollout's attempt was superseded (a
newer attempt of the same rollout exists), so this one is stale and must not write. The
agent then stops checkpointing; the collector refuses its result the same way.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from palaestra.environment.running.client import EnvironmentClient
from palaestra.errors import EnvironmentFailure
from palaestra.models.affinity import RolloutScope
from palaestra.types import AgentResult, JsonDict

__all__ = [
    "DURABLE_FIELD",
    "Checkpoints",
    "Durability",
    "checkpoint",
    "checkpoint_of",
    "encoded_checkpoint",
    "folded",
    "restore_result",
]

FORMAT = 2
"""The checkpoint's layout version (``"v"``): a resume ignores a checkpoint it cannot read.
2: written a turn at a time (``encoded_checkpoint``); whole, a 1 reads the same."""
READABLE = frozenset((1, FORMAT))


@dataclass(slots=True)
class Durability:
    """One attempt of one rollout, as the writer knows it."""

    save: Callable[[JsonDict | bytes], bool]
    """Record the latest checkpoint of the rollout (a dict, or its JSON encoding as a worker
    process sends it); False: the attempt is stale (fenced)."""
    resume: JsonDict | None = None
    """The rollout's last checkpoint (from a stopped collection), or None: start afresh."""
    attempt: int = 1
    """This attempt's number (epoch): the writer accepts only the newest attempt's writes."""
    fenced: bool = False
    """Set when the writer refused a save: the attempt is stale."""
    sent: int = 0
    """How many of the trajectory's output items this attempt's checkpoints hold already
    (``encoded_checkpoint`` writes only the ones after them)."""
    renew: Callable[[], None] | None = None
    """Supersede this attempt by a new one of the same rollout, resuming from its latest
    checkpoint (the dispatcher, when the worker running it died): ``save``, ``resume`` and
    ``attempt`` then are the new attempt's, and the old ``save`` is refused."""


DURABLE_FIELD = "_palaestra_durable"
"""A task sent to a worker process carries its rollout's ``{"resume", "attempt"}`` under this
key (popped by the worker before the agent sees the task)."""


class Checkpoints:
    """One durable rollout's checkpointing, as its agent uses it (made by
    ``RolloutContext.checkpoints`` for a rollout lent a ``Durability`` against an environment
    that can restore): the checkpoint to resume from, if one this version can read, how the
    session then opens, and ``save`` at each turn boundary."""

    __slots__ = ("durability", "env", "resume", "scope")

    def __init__(
        self, durability: Durability, env: EnvironmentClient, scope: RolloutScope | None
    ) -> None:
        self.durability, self.env, self.scope = durability, env, scope
        resume = durability.resume
        self.resume: JsonDict | None = resume if readable(resume) else None
        """The checkpoint the rollout goes on from; None: it starts afresh (none was left, or
        one this version cannot read)."""

    def start(self, task: JsonDict, *more: Any) -> Callable[[], Awaitable[str]] | None:
        """How the rollout's session opens: restored from the checkpoint's state when it
        resumes (``more``: what the client's ``restore`` takes after the state), else None
        (seeded, ``run_episode``'s default)."""
        resume = self.resume
        if resume is None:
            return None
        state: JsonDict = resume["env_state"]
        restore = self.env.restore  # type: ignore[attr-defined]  # a restorable client has it
        return lambda: restore(task, state, *more)

    async def save(self, session_id: str, result: AgentResult, extra: JsonDict | None) -> None:
        """Record the rollout at this turn boundary (``checkpoint``)."""
        await checkpoint(self.durability, self.env, session_id, result, extra, scope=self.scope)

    def restored(self, result: AgentResult) -> None:
        """Put the checkpoint's counters back into ``result`` (``restore_result``)."""
        assert self.resume is not None
        restore_result(result, self.resume, self.durability, scope=self.scope)


def checkpoint_of(
    result: AgentResult,
    env_state: JsonDict,
    *,
    with_response: bool = True,
    scope: RolloutScope | None = None,
) -> JsonDict:
    """The rollout as it stands at a turn boundary (JSON-safe as its parts are)."""
    checkpoint: JsonDict = {
        "v": FORMAT,
        "turn": result.model_calls,
        "producers": result.producers,
        "model_calls": result.model_calls,
        "tool_calls": result.tool_calls,
        "user_turns": result.user_turns,
        "env_state": env_state,
    }
    if with_response:
        checkpoint["response"] = result.response
    if scope is not None:
        if scope.versions is not None:
            checkpoint["policy_versions"] = scope.versions
        if scope.urls is not None:
            checkpoint["endpoints"] = scope.urls
    return checkpoint


async def checkpoint(
    durable: Durability,
    env: EnvironmentClient,
    session_id: str,
    result: AgentResult,
    extra: JsonDict | None = None,
    *,
    scope: RolloutScope | None = None,
) -> None:
    """Record the rollout at this turn boundary (``extra``: the agent's own fields; ``scope``:
    the rollout's, whose policy versions and endpoints so far are kept); once the writer
    refused a save (a newer attempt exists), this stale attempt saves no more."""
    if durable.fenced:
        return
    phase = time.perf_counter()
    state = await env.export_state(session_id)  # type: ignore[attr-defined]
    try:
        encoded = encoded_checkpoint(durable, result, state, extra, scope=scope)
    except TypeError:
        try:  # only now, on the error path: which part JSON could not hold
            orjson.dumps(state)
        except TypeError as error:
            raise EnvironmentFailure(
                f"export_state returned a state JSON cannot hold ({error})"
            ) from None
        raise
    if not durable.save(encoded):
        durable.fenced = True
    result.add_time("checkpoint", phase)


DELTA = "from"
"""A checkpoint as written carries only what its attempt's previous ones did not: the output
items from this index on (``items``, with their ``producers``), then the rest whole (counters,
usage, state). 0: it is whole by itself. ``folded`` rebuilds the whole checkpoint."""
_EMPTY: JsonDict = {}
_NONE: list[JsonDict] = []
_NO_PRODUCERS: list[str] = []


def encoded_checkpoint(
    durable: Durability,
    result: AgentResult,
    env_state: JsonDict,
    extra: JsonDict | None,
    *,
    scope: RolloutScope | None = None,
) -> bytes:
    """``checkpoint_of`` as written: JSON of the output items this attempt has not saved yet
    (``durable.sent`` on), their producers, the usage, the counters and ``env_state``.

    A trajectory only grows by appended items (never changed once appended), so a turn's
    checkpoint is the size of the turn, not of the rollout: encoding the whole trajectory at
    every turn was most of what a checkpoint cost. The latest answer's other fields (id,
    model, status) are left out, as the next answer replaces them: a rollout resumed with its
    step budget spent is verified with them filled in as for any trajectory
    (``episode.whole_response``)."""
    response: JsonDict = result.response or _EMPTY
    outputs: list[JsonDict] = response.get("output") or _NONE
    start = durable.sent
    if start > len(outputs):  # not the trajectory this attempt saved: whole again
        start = 0
    checkpoint: JsonDict = {
        "v": FORMAT,
        DELTA: start,
        "turn": result.model_calls,
        "model_calls": result.model_calls,
        "tool_calls": result.tool_calls,
        "user_turns": result.user_turns,
        "env_state": env_state,
        "items": outputs[start:],
        "producers": (result.producers or _NO_PRODUCERS)[start:],
        "usage": response.get("usage"),
    }
    if scope is not None:
        if scope.versions is not None:
            checkpoint["policy_versions"] = scope.versions
        if scope.urls is not None:
            checkpoint["endpoints"] = scope.urls
    if extra:
        checkpoint.update(extra)
    encoded = orjson.dumps(checkpoint)
    durable.sent = len(outputs)
    return encoded


_DELTA_ONLY = frozenset((DELTA, "items", "producers", "usage"))


def folded(checkpoints: list[JsonDict]) -> JsonDict | None:
    """The whole checkpoint of one attempt's checkpoints as written, oldest first (what
    ``encoded_checkpoint`` wrote, or whole ones: the collector's copy of the checkpoint an
    attempt resumed from, an earlier version's, a sampler's finished result). A part that
    does not continue the items before it (one before it was never written) is skipped, and
    so is every later one: the rollout resumes from the last checkpoint whole up to there."""
    whole: JsonDict | None = None
    for part in checkpoints:
        start = part.get(DELTA)
        if start is None:  # whole by itself
            whole = part
            continue
        items, producers = part.get("items"), part.get("producers")
        if not isinstance(start, int) or not isinstance(items, list):
            break
        if start == 0:
            before: list[JsonDict] = []
            before_producers: list[str] = []
        else:
            response = whole.get("response") if whole is not None else None
            before = response.get("output") if isinstance(response, dict) else None  # type: ignore[assignment]
            if whole is None or not isinstance(before, list) or len(before) != start:
                break
            before_producers = list(whole.get("producers") or [])
        rest = {key: value for key, value in part.items() if key not in _DELTA_ONLY}
        rest["producers"] = before_producers + list(producers or [])
        rest["response"] = {"output": before + items, "usage": part.get("usage")}
        whole = rest
    return whole


def restore_result(
    result: AgentResult,
    checkpoint: JsonDict,
    durable: Durability,
    *,
    scope: RolloutScope | None = None,
) -> None:
    """Put a checkpoint's counters back into ``result`` (and ``scope``'s versions and
    endpoints: the rollout's), so the finished row counts the whole rollout, not only its
    last attempt, and say it resumed; ``durable`` goes on from the checkpoint's items (the
    collector wrote the checkpoint again for this attempt, so its next ones carry only the
    items after them)."""
    result.model_calls = int(checkpoint["model_calls"])
    result.tool_calls = int(checkpoint["tool_calls"])
    result.user_turns = int(checkpoint["user_turns"])
    if scope is not None:
        versions, urls = checkpoint.get("policy_versions"), checkpoint.get("endpoints")
        if isinstance(versions, list):
            scope.versions = list(versions)
        if isinstance(urls, list):
            scope.urls = list(urls)
    durable.sent = len(checkpoint["response"].get("output") or [])
    result.resumed = {"from_turn": result.model_calls, "attempts": durable.attempt}


def readable(checkpoint: object) -> bool:
    """Whether ``checkpoint`` is one this version can resume from."""
    return (
        isinstance(checkpoint, dict)
        and checkpoint.get("v") in READABLE
        and isinstance(checkpoint.get("response"), dict)
        and isinstance(checkpoint.get("env_state"), dict)
    )
