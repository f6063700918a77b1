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

from palaestra.agents.context import NO_CONTEXT, RolloutContext
from palaestra.agents.episode import Conversation, run_episode
from palaestra.environment.running.client import EnvironmentClient, StepEnvironmentClient
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

    async def run(
        self,
        task: JsonDict,
        env: EnvironmentClient,
        model: Model,
        context: RolloutContext = NO_CONTEXT,
    ) -> AgentResult:
        if not isinstance(env, StepEnvironmentClient):
            return AgentResult(
                failure=Failure(
                    FailureKind.ENV_ERROR, f"environment '{env.name}' has no reset/step"
                )
            )
        step_env = env
        checkpoints = context.checkpoints(env)
        resume = None if checkpoints is None else checkpoints.resume

        async def body(session_id: str, result: AgentResult) -> None:
            conversation = Conversation(dict(task[PARAMS]), result, session_id, checkpoints)
            await self._episode(conversation, step_env, model, resume)

        if checkpoints is None or resume is None:
            return await run_episode(task, env, body)
        start = checkpoints.start(task, resume.get("step_rewards"))
        return await run_episode(task, env, body, start=start)

    async def _episode(
        self,
        conversation: Conversation,
        env: StepEnvironmentClient,
        model: Model,
        resume: JsonDict | None,
    ) -> None:
        result, session_id = conversation.result, conversation.session_id
        rewards: list[float] = []
        durable = conversation.checkpoints is not None
        if resume is not None and conversation.checkpoints is not None:
            conversation.restore(resume)  # restored: no reset, the steps taken
            conversation.checkpoints.restored(result)
            rewards = [float(reward) for reward in resume.get("step_rewards") or []]
        else:
            conversation.add(user_message(await env.reset(session_id)), Producer.ENVIRONMENT)
            result.response = {"output": conversation.outputs, "usage": conversation.usage}
            if durable:  # the reset episode, before the first step can act on it
                await conversation.checkpoint({"step_rewards": rewards})
        for _ in range(result.model_calls, self.max_steps):
            response = await conversation.ask(model)
            phase = time.perf_counter()
            step = await env.step(session_id, output_text(response))
            result.add_time("steps", phase)
            if step.terminated or step.truncated:
                break
            conversation.add(user_message(step.observation), Producer.ENVIRONMENT)
            if durable:
                rewards.append(float(step.reward))
                await conversation.checkpoint({"step_rewards": rewards})
        else:  # the episode was still going when the step budget ran out
            result.truncated = "max_steps"
