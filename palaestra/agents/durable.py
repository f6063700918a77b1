"""Durable rollouts: what an agent checkpoints at turn boundaries, and how it resumes.

The collector (the single writer of a run's files) lends each rollout it starts a
``Durability`` through a context variable: the rollout's last checkpoint when a stopped
collection left one, and ``save`` to record a new one. An agent checkpoints only against an
environment client that is ``restorable`` (its environment implements ``export_state`` and
``restore_state``); every other rollout pays one attribute test and restarts as before.

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
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field

import orjson

from palaestra.environment.client import EnvironmentClient
from palaestra.errors import EnvironmentFailure
from palaestra.models.affinity import ROLLOUT_SCOPE
from palaestra.types import AgentResult, JsonDict

__all__ = [
    "DURABILITY",
    "DURABLE_FIELD",
    "Durability",
    "checkpoint",
    "checkpoint_of",
    "restore_result",
]

FORMAT = 1
"""The checkpoint's layout version (``"v"``): a resume ignores a checkpoint it cannot read."""


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
    encoded: list[bytes] = field(default_factory=list)
    """The trajectory's output items as JSON, each encoded once (``encoded_checkpoint``)."""
    renew: Callable[[], None] | None = None
    """Supersede this attempt by a new one of the same rollout, resuming from its latest
    checkpoint (the dispatcher, when the worker running it died): ``save``, ``resume`` and
    ``attempt`` then are the new attempt's, and the old ``save`` is refused."""


DURABLE_FIELD = "_palaestra_durable"
"""A task sent to a worker process carries its rollout's ``{"resume", "attempt"}`` under this
key (popped by the worker before the agent sees the task)."""

DURABILITY: ContextVar[Durability | None] = ContextVar("palaestra_durability", default=None)


def checkpoint_of(
    result: AgentResult, env_state: JsonDict, *, with_response: bool = True
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
    scope = ROLLOUT_SCOPE.get()
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
) -> None:
    """Record the rollout at this turn boundary (``extra``: the agent's own fields); once the
    writer refused a save (a newer attempt exists), this stale attempt saves no more."""
    if durable.fenced:
        return
    phase = time.perf_counter()
    state = await env.export_state(session_id)  # type: ignore[attr-defined]
    try:
        encoded = encoded_checkpoint(durable, result, state, extra)
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


SPLICED_MAX = 16 << 10
"""Up to this many bytes of output items, a checkpoint is one ``dumps`` with the items spliced
in (``orjson.Fragment``); past it, the pieces are joined instead (``encoded_checkpoint``)."""
_FRAGMENT = getattr(orjson, "Fragment", None)
"""orjson 3.10's ``Fragment``; with an older orjson every checkpoint is joined."""


def encoded_checkpoint(
    durable: Durability, result: AgentResult, env_state: JsonDict, extra: JsonDict | None
) -> bytes:
    """``checkpoint_of`` as JSON, each output item encoded once per attempt: a trajectory
    only grows by appended items (never changed once appended), so the items of earlier
    turns (token ids and all) are reused from ``durable.encoded``, not encoded again at every
    turn.

    A short trajectory is spliced into one ``dumps`` of the rest (about half the
    instructions of encoding the response's other fields apart and joining the pieces);
    a long one, token ids and all, is joined around them (a ``Fragment`` is copied once more
    by ``dumps``, which costs more than it saves there): ``SPLICED_MAX``."""
    response: JsonDict = result.response or {}
    outputs = response.get("output") or []
    cache = durable.encoded  # each item's JSON, every one but the first after a comma
    if len(cache) > len(outputs):  # not the trajectory the cache was made for: start over
        cache.clear()
    for item in outputs[len(cache) :]:
        cache.append(b"," + orjson.dumps(item) if cache else orjson.dumps(item))
    checkpoint = checkpoint_of(result, env_state, with_response=False)
    if extra:
        checkpoint.update(extra)
    if _FRAGMENT is not None and sum(map(len, cache)) <= SPLICED_MAX:
        spliced = _FRAGMENT(b"".join((b"[", *cache, b"]")))
        checkpoint["response"] = {**response, "output": spliced}
        return orjson.dumps(checkpoint)
    head = orjson.dumps({key: value for key, value in response.items() if key != "output"})
    opening = b'{"response":' + head[:-1] + (b',"output":[' if len(head) > 2 else b'"output":[')
    # One join, so one allocation of the whole line (a large one costs its page faults).
    return b"".join((opening, *cache, b"]},", orjson.dumps(checkpoint)[1:]))


def restore_result(result: AgentResult, checkpoint: JsonDict) -> None:
    """Put a checkpoint's counters back into ``result`` (and the rollout scope's versions and
    endpoints), so the finished row counts the whole rollout, not only its last attempt."""
    result.model_calls = int(checkpoint["model_calls"])
    result.tool_calls = int(checkpoint["tool_calls"])
    result.user_turns = int(checkpoint["user_turns"])
    scope = ROLLOUT_SCOPE.get()
    if scope is not None:
        versions, urls = checkpoint.get("policy_versions"), checkpoint.get("endpoints")
        if isinstance(versions, list):
            scope.versions = list(versions)
        if isinstance(urls, list):
            scope.urls = list(urls)


def readable(checkpoint: object) -> bool:
    """Whether ``checkpoint`` is one this version can resume from."""
    return (
        isinstance(checkpoint, dict)
        and checkpoint.get("v") == FORMAT
        and isinstance(checkpoint.get("response"), dict)
        and isinstance(checkpoint.get("env_state"), dict)
    )
