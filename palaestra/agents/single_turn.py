"""The single-turn agent: one model call, no tool execution, then verify."""

from __future__ import annotations

import time

from palaestra.agents.context import NO_CONTEXT, RolloutContext
from palaestra.agents.episode import run_episode
from palaestra.environment.running.client import EnvironmentClient
from palaestra.models.base import Model
from palaestra.types import AgentResult, JsonDict
from palaestra.wire.rows import PARAMS


class SingleTurnAgent:
    """Ask once, score the answer. For QA, math and instruction-following tasks."""

    name = "single_turn"

    async def run(
        self,
        task: JsonDict,
        env: EnvironmentClient,
        model: Model,
        context: RolloutContext = NO_CONTEXT,
    ) -> AgentResult:
        async def body(session_id: str, result: AgentResult) -> None:
            phase = time.perf_counter()
            result.response = await model.respond(dict(task[PARAMS]))
            result.add_time("model", phase)
            result.model_calls = 1

        return await run_episode(task, env, body)
