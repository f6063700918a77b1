"""The ``Agent`` interface and what one rollout produces."""

from __future__ import annotations

import inspect
import warnings
from typing import Protocol, runtime_checkable

from palaestra.agents.context import NO_CONTEXT, RolloutContext
from palaestra.environment.running.client import EnvironmentClient
from palaestra.models.affinity import RolloutScope
from palaestra.models.base import Model
from palaestra.types import AgentResult, JsonDict


@runtime_checkable
class RolloutRunner(Protocol):
    """What the collector drives: something that turns a task into a finished rollout.

    ``BoundAgent`` runs an agent in this process; a remote agent server and the workers'
    dispatcher are others. Each subclasses this protocol, so the optional parts below have
    their defaults and the collector asks for them without probing.
    """

    durable: bool = True
    """Whether a rollout may checkpoint: False when none can (a served agent), and the
    collector then lends them no ``Durability`` (``palaestra.agents.durable``); True: each
    rollout is lent one."""

    async def check(self) -> None:
        """Fail fast (``ModelUnreachable``, ``ConfigError``) when nothing could run."""
        ...

    async def run(self, task: JsonDict, context: RolloutContext = NO_CONTEXT) -> AgentResult:
        """Run one rollout of ``task``; ``context`` is what its writer lends it (the
        ``Durability`` to checkpoint with, for a ``durable`` runner)."""
        ...

    def endpoint_stats(self) -> list[JsonDict]:
        """Per-endpoint counts of the runner's model pool, for the run summary and the
        aggregate file; none by default (a single endpoint, or a model run elsewhere)."""
        return []

    def worker_counts(self) -> JsonDict | None:
        """The model and environment counters of the worker processes running the rollouts,
        added up; None by default: the rollouts run in this process."""
        return None


@runtime_checkable
class Agent(Protocol):
    """The harness that drives one rollout of a task against an environment and a model.

    Write one as a subclass (``class MyAgent(Agent)``) or as any class with a ``name`` and
    this ``run``. Its ``context`` says what the run lends the rollout: an agent that hands it
    to ``run_conversation`` (``palaestra.agents.episode``) checkpoints at its turn
    boundaries and resumes a stopped rollout where it was, against an environment that can
    restore. An agent whose ``run`` takes no ``context`` (written before it existed) still
    runs, with a ``DeprecationWarning``, and never checkpoints; that form goes in 0.3.
    """

    name: str

    async def run(
        self, task: JsonDict, env: EnvironmentClient, model: Model, context: RolloutContext
    ) -> AgentResult:
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


class BoundAgent(RolloutRunner):
    """An agent bound to the environment and model it runs against, in this process.

    Each ``run`` is one rollout scope (``palaestra.models.affinity``): a model pool keeps the
    rollout's calls on one endpoint, and the result says which (``endpoints``). The agent
    gets the scope and the lent ``Durability`` in its ``RolloutContext``.
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
        self.durable: bool = env.restorable
        """Whether its rollouts may checkpoint: an agent checkpoints only against an
        environment that can export and restore its state (``RolloutRunner``)."""
        self.takes_context = takes_context(agent)
        """Whether ``agent.run`` takes the ``RolloutContext`` (an agent written before it
        did is called without, warned once here)."""

    async def check(self) -> None:
        """Fail fast when nothing could run. An agent with a ``preflight(env, model)``
        says what it needs (the oracle and null agents never call the model, so they neither
        reach nor load it); otherwise the model must answer."""
        own = getattr(self.agent, "preflight", None)
        if callable(own):
            await own(self.env, self.model)
        else:
            await self.model.check()

    async def run(self, task: JsonDict, context: RolloutContext = NO_CONTEXT) -> AgentResult:
        scope = context.scope
        if scope is None:
            scope = RolloutScope()
            context = RolloutContext(context.durability, scope)
        with scope:  # the model clients beneath the agent see it (``ROLLOUT_SCOPE``)
            if self.takes_context:
                result = await self.agent.run(task, self.env, self.model, context)
            else:
                result = await self.agent.run(task, self.env, self.model)  # type: ignore[call-arg]
        return scoped(result, scope, self.closed_book)

    def endpoint_stats(self) -> list[JsonDict]:
        """The model's per-endpoint counts when it is a pool (``ModelPool.endpoint_stats``),
        else none; the collector puts them in the run summary and the aggregate file."""
        stats = getattr(self.model, "endpoint_stats", None)
        return list(stats()) if callable(stats) else []


def takes_context(agent: Agent) -> bool:
    """Whether ``agent.run`` takes a fourth argument, the ``RolloutContext``. One that does not
    (written for ``run(task, env, model)``) is warned with a ``DeprecationWarning``: it still
    runs, but cannot checkpoint; the form is removed in 0.3."""
    try:
        parameters = inspect.signature(agent.run).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a builtin): assume the new form
        return True
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if sum(p.kind in positional for p in parameters) >= 4 or any(
        p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters
    ):
        return True
    warnings.warn(
        f"agent {type(agent).__name__}'s run(task, env, model) takes no context: give it a "
        "fourth argument, context (palaestra.agents.RolloutContext), and pass it on to "
        "run_conversation so its rollouts can checkpoint; the old form is removed in 0.3",
        DeprecationWarning,
        stacklevel=3,
    )
    return False
