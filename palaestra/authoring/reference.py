"""The oracle and null checks: the gold actions score 1, doing nothing scores 0. No model.

For an environment whose tasks carry gold actions (``Environment.gold_actions``),
``palaestra test`` runs two agents on every example task, in this process (one task at a time;
two at a time for a machine environment, whose rollouts mostly wait on their boxes):

- ``oracle``: the oracle agent (``palaestra.agents.oracle``) replays the task's gold calls turn
  by turn, with the environment's simulated user answering between turns; ``verify`` must give
  exactly 1. A task that scores less, or whose rollout fails, is named with its verdict.
- ``null agent``: the null agent never calls a tool and answers every turn with a polite
  refusal; on every task whose gold actions hold at least one action (a call, or an answer
  to give) ``verify`` must give exactly 0. A reward above 0 there can be had by doing nothing, which
  a policy in training will find; a null rollout that fails instead of scoring (a verifier
  that breaks on a plain refusal) fails the check too, since a real model refuses as well.
  Tasks whose gold actions are empty (doing nothing is right) are not checked; an environment
  whose gold actions also hold lookups that change nothing says which tasks doing nothing
  fails with ``Environment.requires_action(task)`` (it then decides alone).

An environment that does not implement ``gold_actions``, or whose tasks all give None, skips
both checks with a note. An environment whose simulated user needs a model gets the one
``palaestra test --user-model`` names; without one, its rollouts that fail as
``user_model_error`` could not be made, and the check is skipped saying so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from palaestra.agents.oracle import (
    GoldActions,
    NoModel,
    NullAgent,
    OracleAgent,
    gold_actions,
    gold_calls,
)
from palaestra.authoring.report import Check, counted
from palaestra.environment.base import Environment
from palaestra.environment.kinds.harbor import HarborEnvironment
from palaestra.environment.kinds.harbor.environment import TESTS_NETWORK, UNVERIFIED
from palaestra.environment.kinds.harbor.tasks import TASK_FIELD
from palaestra.environment.running.client import LocalEnvironmentClient
from palaestra.errors import RolloutFailure
from palaestra.types import AgentResult, FailureKind, JsonDict

ORACLE = "oracle"
NULL = "null agent"
SHOWN = 3
"""Problems a check's reason names (the details list them all)."""
SHOWN_METRICS = 4
"""Metrics of a verdict shown beside its reward in a problem."""
MACHINES_AT_ONCE = 2
"""Rollouts of a machine environment in flight at once (each a box of its own, most of its
time spent waiting on the box); other environments' run one at a time."""


@dataclass(frozen=True, slots=True)
class GoldTask:
    index: int
    row: JsonDict
    gold: GoldActions
    required: bool | None = None
    """The environment's own answer to "does doing nothing fail this task?" (its
    ``requires_action``), when it has one."""

    @property
    def calls(self) -> int:
        return gold_calls(self.gold)

    @property
    def acts(self) -> bool:
        """Whether the task requires an action: the environment's word, else whether its gold
        actions hold any (a call, or an answer to give)."""
        return any(self.gold) if self.required is None else self.required


async def reference_checks(
    client: LocalEnvironmentClient, rows: list[JsonDict], *, user_model: bool = False
) -> list[Check]:
    """The ``oracle`` and ``null agent`` checks of ``rows`` run in ``client``'s environment.

    ``user_model``: whether the client lends the environment a user model. Without one, a
    rollout that fails as ``user_model_error`` could not be made: the check is skipped saying
    so (with one, it fails like any other failure).
    """
    if type(client.environment).gold_actions is Environment.gold_actions:
        note = "no gold actions (implement Environment.gold_actions to replay a task's solution)"
        return [Check.skipped(ORACLE, note), Check.skipped(NULL, note)]
    tasks, problems = await _gold_tasks(client, rows)
    if problems:  # gold_actions itself broke: nothing to replay on those tasks
        reason = joined(problems)
        return [Check.failed(ORACLE, reason, problems=problems), Check.skipped(NULL, reason)]
    if not tasks:
        note = "no example task has gold actions (gold_actions gave None for each)"
        return [Check.skipped(ORACLE, note), Check.skipped(NULL, note)]
    return [
        await _oracle_check(_Runs(client, user_model), tasks),
        await _null_check(_Runs(client, user_model), tasks),
    ]


async def _gold_tasks(
    client: LocalEnvironmentClient, rows: list[JsonDict]
) -> tuple[list[GoldTask], list[str]]:
    tasks: list[GoldTask] = []
    problems: list[str] = []
    for index, row in enumerate(rows):
        try:
            gold = await gold_actions(client, row)
        except RolloutFailure as failure:
            problems.append(f"task {index}: {failure}")
            continue
        if gold is None:
            continue
        try:
            tasks.append(GoldTask(index, row, gold, _required(client.environment, row)))
        except Exception as error:  # the environment's own code: named, never a traceback
            raised = f"{type(error).__name__}: {error}"
            problems.append(f"task {index}: requires_action raised {raised}")
    return tasks, problems


def _required(environment: Environment, task: JsonDict) -> bool | None:
    """``environment.requires_action(task)``: an environment whose gold actions include lookups
    that change nothing (τ²-bench's) says which tasks doing nothing fails, so a task where
    refusing is right is not held against it; None leaves it to the gold actions."""
    required = environment.requires_action(task)
    return None if required is None else bool(required)


class _Runs:
    """One check's rollouts: the tasks that missed, and those that could not be made."""

    def __init__(self, client: LocalEnvironmentClient, user_model: bool) -> None:
        self.client = client
        self.user_model = user_model
        self.problems: list[str] = []
        self.unmade: list[int] = []
        self.results: list[str] = []
        """One line per task run: what it scored, or why it was not scored."""

    async def run(
        self,
        make: Callable[[GoldTask], OracleAgent | NullAgent],
        tasks: list[GoldTask],
        *,
        oracle: bool,
    ) -> None:
        """Run each task with its agent (``make(task)``): one at a time, in task order, or
        ``MACHINES_AT_ONCE`` at a time for a machine environment; record them in task order."""
        machines = isinstance(self.client.environment, HarborEnvironment)
        gate = asyncio.Semaphore(MACHINES_AT_ONCE if machines else 1)

        async def one(task: GoldTask) -> AgentResult:
            async with gate:
                return await make(task).run(task.row, self.client, NoModel())

        results = await asyncio.gather(*(one(task) for task in tasks))
        for task, result in zip(tasks, results, strict=True):
            self.record(task, result, oracle)

    def record(self, task: GoldTask, result: AgentResult, oracle: bool) -> None:
        failure = result.failure
        needs_model = failure is not None and failure.kind is FailureKind.USER_MODEL_ERROR
        label = _label(task)
        if needs_model and not self.user_model:  # the user needed a model it was not given
            self.unmade.append(task.index)
            self.results.append(f"{label}: not run (the simulated user needs a user model)")
            return
        what, wanted = ("the gold actions", 1) if oracle else ("doing nothing", 0)
        if not scored(result, float(wanted)):
            outcome = _outcome(result, what, wanted)
            self.problems.append(f"{label}: {outcome}")
            self.results.append(f"FAIL {label}: {outcome}")
        else:
            self.results.append(f"ok   {label}: {what} scored {wanted}")

    def verdict(self, name: str, passed: str, **details: Any) -> Check:
        """Failed when a task missed; skipped when a task needed a user model; else passed."""
        details["results"] = self.results
        if self.problems:
            return Check.failed(name, joined(self.problems), problems=self.problems, **details)
        if self.unmade:
            shown = ", ".join(map(str, self.unmade[:SHOWN]))
            more = f" (+{len(self.unmade) - SHOWN} more)" if len(self.unmade) > SHOWN else ""
            return Check.skipped(
                name,
                f"the simulated user needs a user model (pass --user-model): "
                f"{counted(len(self.unmade), 'task')} not run ({shown}{more})",
                unmade=self.unmade,
                **details,
            )
        return Check.passed(name, passed, **details)


async def _oracle_check(runs: _Runs, tasks: list[GoldTask]) -> Check:
    # Every gold turn is answered, however many: the budget is not what is checked.
    await runs.run(lambda task: OracleAgent(max_steps=len(task.gold) + 16), tasks, oracle=True)
    calls = sum(task.calls for task in tasks)
    return runs.verdict(
        ORACLE,
        f"replaying the gold actions scores 1 on {counted(len(tasks), 'task')} "
        f"({counted(calls, 'call')})",
        tasks=len(tasks),
        calls=calls,
    )


async def _null_check(runs: _Runs, tasks: list[GoldTask]) -> Check:
    acting = [task for task in tasks if task.acts]
    idle = len(tasks) - len(acting)
    if not acting:
        return Check.skipped(NULL, "no example task requires an action")
    await runs.run(lambda task: NullAgent(), acting, oracle=False)
    aside = f"; {counted(idle, 'task')} needing no action not checked" if idle else ""
    return runs.verdict(
        NULL,
        f"doing nothing scores 0 on {counted(len(acting), 'task')} that require an action{aside}",
        tasks=len(acting),
        no_action_needed=idle,
    )


def _label(task: GoldTask) -> str:
    """``task N``, with the task folder's name for a Harbor task."""
    folder = task.row.get(TASK_FIELD)
    return f"task {task.index} ({folder})" if isinstance(folder, str) else f"task {task.index}"


def scored(result: AgentResult, wanted: float) -> bool:
    """Whether the rollout was scored ``wanted``: a verdict that is a failure (verify's
    ``Verdict.failed``: the collector records it as a failure) is no score, and neither is a
    Harbor box scored 0 because its tests gave no reward (``unverified``): the agent's 0 in
    a run, but here no agent acted against them, so the task's tests are at fault; nor is a
    Harbor score whose tests tried to reach the network (``tests_network``): its 0 may be the
    missing network's, not the task's."""
    verdict = result.verdict
    if result.failure is not None or verdict is None or verdict.failure is not None:
        return False
    if verdict.metrics.get(UNVERIFIED) or verdict.metrics.get(TESTS_NETWORK):
        return False
    return float(verdict.reward) == wanted


def _outcome(result: AgentResult, what: str, wanted: int) -> str:
    """How a rollout missed ``wanted``: its reward and metrics, or its failure."""
    verdict = result.verdict
    if result.failure is not None or verdict is None or verdict.failure is not None:
        failure = result.failure or (verdict.failure if verdict is not None else None)
        why = f"{failure.kind}: {failure.reason}" if failure is not None else "no verdict"
        return f"{what} was not scored ({why})"
    if verdict.metrics.get(UNVERIFIED):
        return f"{what} was not verified ({UNVERIFIED}: {verdict.metrics[UNVERIFIED]})"
    if verdict.metrics.get(TESTS_NETWORK):
        return (
            f"{what} scored {float(verdict.reward):g}, but the tests tried to reach the network, "
            f"which machines here do not have: {verdict.metrics[TESTS_NETWORK]}"
        )
    shown = _metrics(verdict.metrics.items())
    return f"{what} scored {float(verdict.reward):g}, not {wanted}" + (
        f" ({shown})" if shown else ""
    )


def _metrics(items: Iterable[tuple[str, object]]) -> str:
    pairs = [f"{key}={value}" for key, value in items if value not in ("", None)]
    more = len(pairs) - SHOWN_METRICS
    return ", ".join(pairs[:SHOWN_METRICS]) + (f", +{more} more" if more > 0 else "")


def joined(problems: list[str]) -> str:
    more = len(problems) - SHOWN
    return "; ".join(problems[:SHOWN]) + (f"; +{more} more" if more > 0 else "")
