"""The client ``palaestra test`` checks an environment through: a ``LocalEnvironmentClient``
that keeps what one check learned and another would otherwise pay for again.

- A task's gold actions are asked of the environment once, however many checks replay them
  (the task list reads them, then the oracle's rollout; ScienceWorld starts a simulator to
  find them). An agent takes a client's own ``gold_actions`` before the environment's.
- Each session's start is noted where it costs nothing more: a turn-based environment's first
  observation (``reset``, which the rollout makes anyway), or the state ``seed`` built as JSON
  (an environment that exports its state is not asked for it here). The ``seeded start`` check
  then compares two starts of one task that earlier checks seeded (the oracle's and the null
  agent's rollouts), and seeds the task itself only when they did not.
"""

from __future__ import annotations

import inspect
from typing import Any

import orjson

from palaestra.environment.base import Environment, restorable
from palaestra.environment.running.client import LocalEnvironmentClient
from palaestra.environment.step import StepEnvironment
from palaestra.models.base import Model
from palaestra.types import JsonDict


class ReviewClient(LocalEnvironmentClient):
    """The client of ``check_environment``'s checks (module docstring)."""

    def __init__(self, environment: Environment, *, user_model: Model | None = None) -> None:
        super().__init__(environment, user_model=user_model)
        self._gold: dict[bytes, Any] = {}
        self._starts: dict[bytes, list[object]] = {}
        self._unstarted: dict[str, bytes] = {}
        """Sessions of a turn-based environment not reset yet, and their task's key."""

    async def gold_actions(self, task: JsonDict) -> Any:
        """What ``Environment.gold_actions`` gave for ``task`` (asked on first use; an error
        is raised again on the next call, never kept)."""
        key = task_key(task)
        if key not in self._gold:
            value = self.environment.gold_actions(task)
            self._gold[key] = await value if inspect.isawaitable(value) else value
        return self._gold[key]

    def starts(self, task: JsonDict) -> list[object]:
        """The starts noted of ``task``'s sessions so far, in the order they were seeded or
        reset (``seeded_start``'s form: an observation, or the state's JSON or None)."""
        return list(self._starts.get(task_key(task), ()))

    async def seed(self, task: JsonDict) -> str:
        key = task_key(task)
        session_id = await super().seed(task)
        if isinstance(self.environment, StepEnvironment):
            self._unstarted[session_id] = key
        elif not restorable(self.environment):
            self._starts.setdefault(key, []).append(state_json(self.sessions.get(session_id).state))
        return session_id

    async def reset(self, session_id: str) -> str:
        observation = await super().reset(session_id)
        key = self._unstarted.pop(session_id, None)
        if key is not None:
            self._starts.setdefault(key, []).append(observation)
        return observation

    async def close(self, session_id: str) -> None:
        self._unstarted.pop(session_id, None)
        await super().close(session_id)


def task_key(task: JsonDict) -> bytes:
    """One task's identity here: its row as canonical JSON."""
    return orjson.dumps(task, option=orjson.OPT_SORT_KEYS)


def state_json(state: Any) -> bytes | None:
    """A seeded state as canonical JSON, or None for a state that is not JSON."""
    try:
        return orjson.dumps(state, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return None
