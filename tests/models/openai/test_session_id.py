"""``X-Session-ID``: every model call of a rollout names it as the ecosystem's routers expect,
beside palaestra's own header, over real HTTP; a simulated user's calls are a session of their
own (``<rollout>.user``)."""

from __future__ import annotations

import pytest

from palaestra import LocalEnvironmentClient
from palaestra.agents import ToolCallingAgent
from palaestra.agents.base import BoundAgent
from palaestra.models.affinity import rollout_scope
from palaestra.models.openai import endpoint as endpoint_module
from palaestra.models.openai.chat import OpenAIChatModel
from palaestra.models.openai.responses import OpenAIResponsesModel
from palaestra.spec import ModelConfig
from palaestra.types import JsonDict
from palaestra.wire.protocol import ROLLOUT_HEADER, SESSION_ID_HEADER
from tests.support.scripted_model import ScriptedModelServer, text_response
from tests.support.user_envs import ModelInterview


def _policy(params: JsonDict) -> JsonDict:
    return text_response("sure")


def _user(params: JsonDict) -> JsonDict:
    # The user's own messages (the task's first one too) come back as assistant turns: done on
    # its second answer.
    said = [item for item in params["input"] if item.get("role") == "assistant"]
    return text_response("DONE" if len(said) > 1 else "I want a flight.")


async def test_every_policy_and_user_call_of_a_rollout_carries_x_session_id() -> None:
    task = {"responses_create_params": {"input": "hi"}, "persona": "You are Ana."}
    with ScriptedModelServer(_policy) as policy_server, ScriptedModelServer(_user) as user_server:
        policy = OpenAIChatModel(ModelConfig(url=policy_server.url, model="m"))
        user_model = OpenAIResponsesModel(ModelConfig(url=user_server.url, model="u"))
        env = LocalEnvironmentClient(ModelInterview(), user_model=user_model)
        runner = BoundAgent(ToolCallingAgent(), env, policy)
        try:
            first = await runner.run(task)
            second = await runner.run(task)
        finally:
            await policy.aclose()
            await user_model.aclose()
        policy_headers, user_headers = policy_server.headers, user_server.headers
    assert first.failure is None and second.failure is None
    assert first.model_calls == second.model_calls == 2 and first.user_turns == 2
    assert len(policy_headers) == 4 and len(user_headers) == 4  # 2 rollouts x 2 calls each
    sessions = [headers.get(SESSION_ID_HEADER) for headers in policy_headers]
    rollouts = [headers.get(ROLLOUT_HEADER) for headers in policy_headers]
    assert sessions == rollouts  # beside palaestra's own header, one value
    assert sessions[0] is not None and sessions[0] == sessions[1]  # one rollout, one id
    assert sessions[2] is not None and sessions[2] == sessions[3] != sessions[0]
    user_sessions = [headers.get(SESSION_ID_HEADER) for headers in user_headers]
    assert user_sessions == [f"{sessions[0]}.user"] * 2 + [f"{sessions[2]}.user"] * 2
    assert [headers.get(ROLLOUT_HEADER) for headers in user_headers] == user_sessions


async def test_a_call_outside_a_rollout_names_no_session() -> None:
    with ScriptedModelServer(_policy) as server:
        model = OpenAIChatModel(ModelConfig(url=server.url, model="m"))
        try:
            await model.respond({"input": "hi"})
        finally:
            await model.aclose()
        (headers,) = server.headers
    assert SESSION_ID_HEADER not in headers and ROLLOUT_HEADER not in headers


async def test_rollouts_past_the_kept_headers_still_name_their_own_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Three rollouts, their calls interleaved, through an endpoint that keeps the headers of
    # two: the third forgets the first two, whose next calls frame theirs again.
    monkeypatch.setattr(endpoint_module, "ROLLOUTS_KEPT", 2)
    with ScriptedModelServer(_policy) as server:
        model = OpenAIChatModel(ModelConfig(url=server.url, model="m"))
        scopes = [rollout_scope() for _ in range(3)]
        try:
            for _ in range(2):
                for scope in scopes:
                    with scope:
                        await model.respond({"input": "hi"})
        finally:
            await model.aclose()
        sent = [headers.get(SESSION_ID_HEADER) for headers in server.headers]
    keys = [scope.key for scope in scopes]
    assert sent == keys * 2
    assert len(model.endpoint._by_rollout) <= 2
