"""The step agent: drives a turn-based (reset/step) environment, one model turn per step.

seed → reset (first observation as a user message) → repeat { the model answers; its text is
the action; the environment steps; stop when terminated or truncated, else the observation is
the next user message } at most ``max_steps`` times → verify → close. Per-step rewards go into
the verdict's ``step_rewards``. An episode still going after ``max_steps`` is verified as it
stands and marked ``truncated = "max_steps"``. A restorable environment's episode is
checkpointed after its reset and after every step that goes on
(``palaestra.agents.durable``), with the step rewards so far, and a resumed one continues
from its last step without ``reset``.
"""

from __future__ import annotations

import time

from palaestra.agents.durable import (
    DURABILITY,
    Durability,
    checkpoint,
    readable,
    restore_result,
)
from palaestra.agents.episode import Conversation, run_episode
from palaestra.environment.client import EnvironmentClient, StepEnvironmentClient
from palaestra.models.base import Model
from palaestra.types import (
    AgentResult,
    Failure,
    FailureKind,
    JsonDict,
    Producer,
    output_text,
    user_message,
)
from palaestra.wire.rows import PARAMS


class StepAgent:
    """Turn-based episodes: games, interactive tasks, conversations with a simulated user."""

    name = "step"

    def __init__(self, *, max_steps: int = 8) -> None:
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.max_steps = max_steps

    async def run(self, task: JsonDict, env: EnvironmentClient, model: Model) -> AgentResult:
        if not isinstance(env, StepEnvironmentClient):
            return AgentResult(
                failure=Failure(
                    FailureKind.ENV_ERROR, f"environment '{env.name}' has no reset/step"
                )
            )
        step_env = env
        durable = DURABILITY.get() if getattr(env, "restorable", False) else None
        resume = durable.resume if durable is not None else None
        if resume is not None and not readable(resume):
            resume = None  # a checkpoint this version cannot read: the episode restarts

        async def body(session_id: str, result: AgentResult) -> None:
            await self._episode(task, session_id, step_env, model, result, durable, resume)

        if resume is None:
            return await run_episode(task, env, body)
        state: JsonDict = resume["env_state"]
        rewards = resume.get("step_rewards")
        restore = env.restore  # type: ignore[attr-defined]  # a restorable client has it
        return await run_episode(task, env, body, start=lambda: restore(task, state, rewards))

    async def _episode(
        self,
        task: JsonDict,
        session_id: str,
        env: StepEnvironmentClient,
        model: Model,
        result: AgentResult,
        durable: Durability | None = None,
        resume: JsonDict | None = None,
    ) -> None:
        conversation = Conversation(dict(task[PARAMS]), result)
        rewards: list[float] = []
        if resume is not None and durable is not None:  # restored: no reset, the steps taken
            conversation.restore(resume)
            restore_result(result, resume, durable)
            rewards = [float(reward) for reward in resume.get("step_rewards") or []]
        else:
            conversation.add(user_message(await env.reset(session_id)), Producer.ENVIRONMENT)
            result.response = {"output": conversation.outputs, "usage": conversation.usage}
            if durable is not None:  # the reset episode, before the first step can act on it
                await checkpoint(durable, env, session_id, result, {"step_rewards": rewards})
        for _ in range(result.model_calls, self.max_steps):
            response = await conversation.ask(model)
            phase = time.perf_counter()
            step = await env.step(session_id, output_text(response))
            result.add_time("steps", phase)
            if step.terminated or step.truncated:
                break
            conversation.add(user_message(step.observation), Producer.ENVIRONMENT)
            if durable is not None:
                rewards.append(float(step.reward))
                await checkpoint(durable, env, session_id, result, {"step_rewards": rewards})
        else:  # the episode was still going when the step budget ran out
            result.truncated = "max_steps"
