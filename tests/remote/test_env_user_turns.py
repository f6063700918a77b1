"""A conversation with a simulated user through a served environment (``POST /user_turn``)."""

from __future__ import annotations

from typing import Any

import orjson

from palaestra import ToolCallingAgent
from palaestra.envs.counter.environment import Counter
from palaestra.errors import ModelError
from palaestra.http.runner import BackgroundServer
from palaestra.models import build_model
from palaestra.remote.env import RemoteEnvironmentClient
from palaestra.serve.env_app import environment_app
from palaestra.spec import ModelConfig
from palaestra.transport import HttpAnswer, HttpClient
from palaestra.types import FailureKind, JsonDict, message_text
from tests.environment.test_users import Answering
from tests.support.fake_model import FakeModel, say
from tests.support.scripted_model import ScriptedModelServer, text_response, tool_call_response
from tests.support.user_envs import Interview, ModelInterview

TASK: JsonDict = {"responses_create_params": {"input": "hello"}, "turns": ["book it", "thanks"]}


class CountingHttp(HttpClient):
    """Notes the route of every POST it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.posts: list[str] = []

    async def request(self, method: str, url: str, **options: Any) -> HttpAnswer:
        if method == "POST":
            self.posts.append(url.rsplit("/", 1)[1])
        return await super().request(method, url, **options)


def policy(params: JsonDict) -> JsonDict:
    """Calls the note tool once right after "book it", else answers with what it heard last."""
    last = params["input"][-1]
    if last.get("role") == "user" and last.get("content") == "book it":
        return tool_call_response("note", '{"text": "booked"}', call_id="c1")
    return text_response(f"heard {len(params['input'])} items")


async def test_a_served_conversation_runs_every_user_turn_over_real_http() -> None:
    with (
        ScriptedModelServer(policy) as served_model,
        BackgroundServer(environment_app(Interview())) as server,
    ):
        model = build_model(ModelConfig(url=served_model.url, api="responses"))
        http = CountingHttp()
        remote = await RemoteEnvironmentClient.connect(server.url, http=http)
        try:
            assert remote.has_user
            result = await ToolCallingAgent().run(TASK, remote, model)
        finally:
            await remote.aclose()
            await model.aclose()
            await http.aclose()
    assert result.failure is None, result.failure
    assert result.verdict is not None and result.verdict.reward == 1.0  # every turn was said
    assert result.user_turns == 2 and result.model_calls == 4 and result.tool_calls == 1
    assert result.producers == ["policy", "user", "policy", "tool", "policy", "user", "policy"]
    assert result.response is not None
    said = [message_text(i) for i in result.response["output"] if i.get("role") == "user"]
    assert said == ["book it", "thanks"]
    assert http.posts.count("user_turn") == 3  # the third is the user's "done"


async def test_a_served_user_model_that_fails_is_a_user_model_error_here() -> None:
    app = environment_app(ModelInterview(), user_model=Answering(error=ModelError("refused")))
    task = {"responses_create_params": {"input": "hi"}, "persona": "You are Ana."}
    with BackgroundServer(app) as server:
        remote = await RemoteEnvironmentClient.connect(server.url)
        try:
            result = await ToolCallingAgent().run(task, remote, FakeModel(lambda p: say("hi")))
        finally:
            await remote.aclose()
    assert result.verdict is None
    assert result.failure is not None and result.failure.kind == FailureKind.USER_MODEL_ERROR
    assert "refused" in result.failure.reason


async def test_a_server_without_a_user_announces_none_and_is_never_asked() -> None:
    with BackgroundServer(environment_app(Counter())) as server:
        http = CountingHttp()
        remote = await RemoteEnvironmentClient.connect(server.url, http=http)
        tools = orjson.loads((await http.request("GET", f"{server.url}/tools")).body)
        try:
            task = {"responses_create_params": {"input": "count"}, "target_value": 0}
            result = await ToolCallingAgent().run(task, remote, FakeModel(lambda p: say("0")))
        finally:
            await remote.aclose()
            await http.aclose()
    assert "user_turn" not in tools and not remote.has_user
    assert result.failure is None and "user_turn" not in http.posts
