"""The ``Agent`` interface and what one rollout produces."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from palaestra.environment.client import EnvironmentClient
from palaestra.models.affinity import RolloutScope, rollout_scope
from palaestra.models.base import Model
from palaestra.types import AgentResult, JsonDict


@runtime_checkable
class RolloutRunner(Protocol):
    """What the collector drives: something that turns a task into a finished rollout.

    ``BoundAgent`` runs an agent in this process; a remote agent server is another runner.
    A runner may say ``durable = False`` when none of its rollouts can checkpoint: the
    collector then lends them no ``Durability`` (``palaestra.agents.durable``); a runner
    that does not say is lent one for every rollout.
    """

    async def check(self) -> None:
        """Fail fast (``ModelUnreachable``, ``ConfigError``) when nothing could run."""
        ...

    async def run(self, task: JsonDict) -> AgentResult: ...


@runtime_checkable
class Agent(Protocol):
    """The harness that drives one rollout of a task against an environment and a model."""

    name: str

    async def run(self, task: JsonDict, env: EnvironmentClient, model: Model) -> AgentResult:
        """Run the task to a verdict or a failure, which it returns rather than raises.

        An agent may also define ``async preflight(env, model)``: ``BoundAgent.check`` calls
        it instead of ``model.check()`` (for an agent that needs no model, or more than one),
        and ``async aclose()``, which the run calls when it ends (an agent that serves
        something, such as a harness agent's gateway).

        The one exception is ``ModelUnreachable``: when the model cannot be reached at all,
        the agent raises it so the collector can stop instead of failing every task.
        """
        ...


def scoped(result: AgentResult, scope: RolloutScope, closed_book: bool | None) -> AgentResult:
    """``result`` with what its rollout's scope recorded: the pool endpoints its calls went
    to, the policy versions that served them and, for a run that says whether its route is
    closed-book (``closed_book`` not None), that and the hosted tools its requests went
    without. ``BoundAgent`` and the agent server both use it, so their rows agree."""
    if scope.urls is not None:
        result.endpoints = scope.urls
    if scope.versions is not None:
        result.policy_versions = scope.versions
    if closed_book is not None:
        result.closed_book = closed_book
        if scope.hosted is not None:
            result.hosted_tools_dropped = scope.hosted
    return result


class BoundAgent:
    """An agent bound to the environment and model it runs against, in this process.

    Each ``run`` is one rollout scope (``palaestra.models.affinity``): a model pool keeps the
    rollout's calls on one endpoint, and the result says which (``endpoints``).
    """

    def __init__(
        self,
        agent: Agent,
        env: EnvironmentClient,
        model: Model,
        *,
        closed_book: bool | None = None,
    ) -> None:
        self.agent, self.env, self.model = agent, env, model
        self.closed_book = closed_book
        """Whether ``model`` is a closed-book route (``palaestra.models.closed_book``): each
        result says so, and which hosted tools its requests went without. None: not said."""
        self.durable: bool = bool(getattr(env, "restorable", False))
        """Whether its rollouts may checkpoint: an agent checkpoints only against an
        environment that can export and restore its state (``RolloutRunner``)."""

    async def check(self) -> None:
        """Fail fast when nothing could run. An agent with a ``preflight(env, model)``
        says what it needs (the oracle and null agents never call the model, so they neither
        reach nor load it); otherwise the model must answer."""
        own = getattr(self.agent, "preflight", None)
        if callable(own):
            await own(self.env, self.model)
        else:
            await self.model.check()

    async def run(self, task: JsonDict) -> AgentResult:
        with rollout_scope() as scope:
            result = await self.agent.run(task, self.env, self.model)
        return scoped(result, scope, self.closed_book)

    def endpoint_stats(self) -> list[JsonDict]:
        """The model's per-endpoint counts when it is a pool (``ModelPool.endpoint_stats``),
        else none; the collector puts them in the run summary and the aggregate file."""
        stats = getattr(self.model, "endpoint_stats", None)
        return list(stats()) if callable(stats) else []
