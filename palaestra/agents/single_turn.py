"""The single-turn agent: one model call, no tool execution, then verify."""

from __future__ import annotations

import time

from palaestra.agents.base import AgentResult
from palaestra.agents.tool_calling import close_session
from palaestra.env_client import EnvironmentClient
from palaestra.errors import ModelUnreachable, RolloutFailure
from palaestra.models.base import Model
from palaestra.types import Failure, JsonDict


class SingleTurnAgent:
    """Ask once, score the answer. For QA, math and instruction-following tasks."""

    name = "single_turn"

    async def run(self, task: JsonDict, env: EnvironmentClient, model: Model) -> AgentResult:
        result = AgentResult()
        started = time.perf_counter()
        session_id: str | None = None
        try:
            session_id = await env.seed(task)
            phase = time.perf_counter()
            result.response = await model.respond(dict(task["responses_create_params"]))
            result.add_time("model", phase)
            result.model_calls = 1
            phase = time.perf_counter()
            result.verdict = await env.verify(session_id, task, result.response)
            result.add_time("verify", phase)
        except ModelUnreachable:
            raise  # nothing can go on without the model: the collector stops the run
        except RolloutFailure as failure:
            result.failure = Failure(failure.kind, failure.reason)
        finally:
            if session_id is not None:
                await close_session(env, session_id, result)
            result.add_time("total", started)
        return result
