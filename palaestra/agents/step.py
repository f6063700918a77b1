"""The step agent: drives a turn-based (reset/step) environment, one model turn per step.

seed → reset (first observation as a user message) → repeat { the model answers; its text is
the action; the environment steps; stop when terminated or truncated, else the observation is
the next user message } at most ``max_steps`` times → verify → close. Per-step rewards go into
the verdict's ``step_rewards``.
"""

from __future__ import annotations

import time

from palaestra.agents.base import AgentResult
from palaestra.agents.episode import run_episode
from palaestra.env_client import EnvironmentClient, StepEnvironmentClient
from palaestra.models.base import Model
from palaestra.types import (
    Failure,
    FailureKind,
    JsonDict,
    add_usage,
    empty_usage,
    input_items,
    output_text,
    user_message,
)


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

        async def body(session_id: str, result: AgentResult) -> None:
            await self._episode(task, session_id, step_env, model, result)

        return await run_episode(task, env, body)

    async def _episode(
        self,
        task: JsonDict,
        session_id: str,
        env: StepEnvironmentClient,
        model: Model,
        result: AgentResult,
    ) -> None:
        params: JsonDict = dict(task["responses_create_params"])
        outputs: list[JsonDict] = [user_message(await env.reset(session_id))]
        history = input_items(params)
        usage = empty_usage()
        result.response = {"output": outputs, "usage": usage}
        for _ in range(self.max_steps):
            phase = time.perf_counter()
            response = await model.respond({**params, "input": history + outputs})
            result.add_time("model", phase)
            result.model_calls += 1
            outputs.extend(response.get("output") or [])
            add_usage(usage, response.get("usage"))
            result.response = {**response, "output": outputs, "usage": usage}
            phase = time.perf_counter()
            step = await env.step(session_id, output_text(response))
            result.add_time("steps", phase)
            if step.terminated or step.truncated:
                break
            outputs.append(user_message(step.observation))
