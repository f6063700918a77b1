"""A palaestra trajectory as a τ² message list, scored by τ²'s own evaluators.

The reward is what ``tau2.evaluator.evaluator.evaluate_simulation`` gives with
``EvaluationType.ALL`` (the evaluation ``tau2 run`` uses): a conversation that did not end by a
stop signal scores 0; otherwise the environment evaluator (the database after replaying the
trajectory against the database after replaying the gold actions, and the environment
assertions), the action evaluator and the communicate evaluator each score, and the reward is
the product of those in the task's ``reward_basis``. The three evaluators are τ²'s classes,
called here; the product is restated because ``tau2.evaluator.evaluator`` imports an LLM client
at module level (a test runs the real ``evaluate_simulation`` on the same trajectories and
requires the same verdict).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from palaestra import JsonDict, message_text
from palaestra.envs.tau2.suite import Domain, Message, RewardInfo, Task, tau2_module

USER_STOP = "user_stop"
PREMATURE = "max_steps"
"""τ²'s termination reasons as palaestra reads them from a trajectory: the user said a stop
signal last, or the conversation ended otherwise (a step or turn budget, an unanswered call)."""


@dataclass(frozen=True, slots=True)
class Converted:
    messages: list[Message]
    termination: str
    dropped_calls: int
    """Calls palaestra answered itself (an unknown tool, arguments that are not a JSON object,
    over the per-turn cap): they never reached τ²'s tools, so they are not in τ²'s trajectory."""


def tau2_messages(
    items: Sequence[JsonDict],
    tool_names: set[str],
    user_tool_turns: Sequence[Sequence[Message]],
    stop_signals: Sequence[str],
) -> Converted:
    """τ²'s message list for a palaestra trajectory (input items then output items).

    The policy's messages become ``AssistantMessage``s, its calls of the domain's tools an
    ``AssistantMessage`` with ``tool_calls`` followed by one ``ToolMessage`` per call (the
    output palaestra recorded: τ² replays the calls and checks them), the user's messages
    ``UserMessage``s. ``user_tool_turns[k]`` are the τ² messages of the user's own tool calls
    (telecom's device) made before its k-th message. System messages are not part of τ²'s
    trajectory.
    """
    message = tau2_module("tau2.data_model.message")
    outputs = {
        str(item.get("call_id")): str(item.get("output", ""))
        for item in items
        if item.get("type") == "function_call_output"
    }
    messages: list[Any] = []
    pending: list[Any] = []
    dropped = 0
    user_turn = 0

    def flush() -> None:
        if pending:
            messages.append(message.AssistantMessage(role="assistant", tool_calls=list(pending)))
            messages.extend(
                message.ToolMessage(
                    id=call.id, role="tool", content=outputs[call.id], requestor="assistant"
                )
                for call in pending
            )
            pending.clear()

    for item in items:
        kind = item.get("type", "message")
        if kind == "function_call":
            call_id = str(item.get("call_id") or item.get("id") or "")
            arguments = _arguments(item.get("arguments"))
            name = str(item.get("name", ""))
            if (
                name in tool_names
                and arguments is not None
                and call_id in outputs
                and not outputs[call_id].startswith("Error: not executed")
            ):
                pending.append(
                    message.ToolCall(
                        id=call_id, name=name, arguments=arguments, requestor="assistant"
                    )
                )
                continue
            dropped += 1
            continue
        if kind != "message":
            continue
        role = item.get("role")
        text = message_text(item)
        if role == "assistant" and text:
            flush()
            messages.append(message.AssistantMessage(role="assistant", content=text))
        elif role == "user" and text:
            flush()
            if user_turn < len(user_tool_turns):
                messages.extend(user_tool_turns[user_turn])
            user_turn += 1
            messages.append(message.UserMessage(role="user", content=text))
    flush()
    last = next(
        (
            m
            for m in reversed(messages)
            if isinstance(m, message.UserMessage | message.AssistantMessage)
        ),
        None,
    )
    stopped = (
        isinstance(last, message.UserMessage)
        and last.content is not None
        and any(signal in last.content for signal in stop_signals)
    )
    return Converted(messages, USER_STOP if stopped else PREMATURE, dropped)


def evaluate(domain: Domain, task: Task, messages: list[Message], termination: str) -> RewardInfo:
    """τ²'s ``RewardInfo`` for the trajectory (``evaluate_simulation``, ``EvaluationType.ALL``)."""
    simulation = tau2_module("tau2.data_model.simulation")
    tasks = tau2_module("tau2.data_model.tasks")
    if termination != USER_STOP:
        return simulation.RewardInfo(
            reward=0.0,
            reward_basis=None,
            info={"note": "Simulation terminated prematurely. Termination reason: " + termination},
        )
    if task.evaluation_criteria is None:
        return simulation.RewardInfo(
            reward=1.0, reward_basis=None, info={"note": "No evaluation criteria"}
        )
    env_info = tau2_module("tau2.evaluator.evaluator_env").EnvironmentEvaluator.calculate_reward(
        environment_constructor=domain.environment,
        task=task,
        full_trajectory=messages,
        solo_mode=False,
    )
    action_info = tau2_module("tau2.evaluator.evaluator_action").ActionEvaluator.calculate_reward(
        task=task, full_trajectory=messages
    )
    communicate_info = tau2_module(
        "tau2.evaluator.evaluator_communicate"
    ).CommunicateEvaluator.calculate_reward(task=task, full_trajectory=messages)
    kinds = tasks.RewardType
    basis = set(task.evaluation_criteria.reward_basis)
    if kinds.NL_ASSERTION in basis:
        raise ValueError(
            "NL assertions are part of the reward basis, but they are not being evaluated."
        )
    reward = 1.0
    breakdown: dict[Any, float] = {}
    for bases, info in (
        ({kinds.DB, kinds.ENV_ASSERTION}, env_info),
        ({kinds.ACTION}, action_info),
        ({kinds.COMMUNICATE}, communicate_info),
    ):
        if basis & bases:
            if info.reward_breakdown is not None:
                breakdown.update(info.reward_breakdown)
            reward *= info.reward
    return simulation.RewardInfo(
        reward=reward,
        db_check=env_info.db_check,
        env_assertions=env_info.env_assertions,
        action_checks=action_info.action_checks,
        nl_assertions=None,
        communicate_checks=communicate_info.communicate_checks,
        reward_basis=task.evaluation_criteria.reward_basis,
        reward_breakdown=breakdown,
        info={
            "env": env_info.info,
            "nl": None,
            "communicate": communicate_info.info,
            "action": action_info.info,
        },
    )


def components(info: RewardInfo) -> dict[str, float]:
    """τ²'s reward breakdown (``DB``, ``ENV_ASSERTION``, ``ACTION``, ``COMMUNICATE``: the parts
    of the task's basis), named by τ²'s ``RewardType`` values."""
    return {
        str(getattr(key, "value", key)): float(value)
        for key, value in (info.reward_breakdown or {}).items()
    }


def _arguments(raw: Any) -> dict[str, Any] | None:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = orjson.loads(raw if raw not in (None, "") else "{}")
    except (orjson.JSONDecodeError, TypeError):
        return None
    return parsed if isinstance(parsed, dict) else None
