"""Multi-step Harbor tasks (``[[steps]]``): which step a rollout is on, each step's result,
and the task's reward from them.

The agent works through the steps in one machine: each step's instruction is its next user
message, each step's tests score it when the agent ends it (``HarborEnvironment.user_turn``,
the last step's in ``verify``). A step whose reward is under its ``min_reward`` (on
``reward``, or on each key a table names; a missing key is under) ends the rollout there.
The task's reward follows ``multi_step_reward_strategy``, as Harbor's does: ``mean`` (the
default) is each component's mean over the steps judged, a component a step lacks counting
0; ``final`` is the last judged step's. A step the tests could not score (``unverified``) is
a 0 like any other: what the agent left in its machine is its outcome. The row carries every
step (``harbor_steps``: name, reward, components, and why unverified) beside the total.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from palaestra.environment.kinds.harbor.rewards import REWARD_KEY
from palaestra.types import JsonDict, Verdict
from palaestra.wire.harbor import HarborStep, StepConfig

if TYPE_CHECKING:
    from palaestra.environment.kinds.harbor.environment import HarborState

STEPS_FIELD = "harbor_steps"
UNVERIFIED = "unverified"
TESTS_NETWORK = "tests_network"


def current_step(state: HarborState) -> HarborStep | None:
    """The step the rollout is on; None for a single-step task."""
    assert state.task is not None
    return state.task.steps[state.step] if state.task.steps else None


def step_result(state: HarborState, verdict: Verdict) -> JsonDict:
    """What the row keeps of a step's verdict (its metrics too, for the last step's)."""
    step = current_step(state)
    assert step is not None
    components = dict(verdict.reward_components or {REWARD_KEY: float(verdict.reward)})
    result: JsonDict = {
        "name": step.name,
        "reward": float(verdict.reward),
        "components": components,
    }
    for said in (UNVERIFIED, TESTS_NETWORK):
        if said in verdict.metrics:
            result[said] = verdict.metrics[said]
    result["metrics"] = dict(verdict.metrics)
    return result


def below_minimum(step: StepConfig, result: JsonDict) -> bool:
    """Whether ``result`` is under the step's ``min_reward`` (never, without one)."""
    floor = step.min_reward
    if floor is None:
        return False
    components: dict[str, float] = result["components"]
    floors = {REWARD_KEY: floor} if isinstance(floor, int | float) else floor
    return any(components.get(key, -math.inf) < value for key, value in floors.items())


def combined(state: HarborState) -> Verdict:
    """The task's verdict from its judged steps (see the module)."""
    assert state.task is not None
    results = state.step_results
    strategy = state.task.config.multi_step_reward_strategy or "mean"
    last = results[-1]
    if strategy == "final":
        components = dict(last["components"])
    else:
        keys = sorted({key for result in results for key in result["components"]})
        components = {
            key: sum(result["components"].get(key, 0.0) for result in results) / len(results)
            for key in keys
        }
    reward = components.get(REWARD_KEY)
    if reward is None:
        reward = next(iter(components.values())) if len(components) == 1 else 0.0
    metrics: JsonDict = {key: value for key, value in last["metrics"].items() if key != UNVERIFIED}
    metrics[STEPS_FIELD] = [
        {key: value for key, value in result.items() if key != "metrics"} for result in results
    ]
    metrics["steps_run"] = len(results)
    metrics["steps_total"] = len(state.task.steps)
    if state.stopped:
        metrics["stopped_at_step"] = last["name"]
    tried = [f"{r['name']}: {r[TESTS_NETWORK]}" for r in results if TESTS_NETWORK in r]
    if tried:  # any step's: the total holds its 0
        metrics[TESTS_NETWORK] = "; ".join(tried)
    return Verdict(float(reward), reward_components=components, metrics=metrics)
