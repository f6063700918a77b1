"""The environment server over real HTTP, driven the way NeMo Gym's agents drive it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import aiohttp
import orjson
import pytest

from palaestra import LocalEnvironmentClient, ToolCallingAgent
from palaestra.agents import StepAgent
from palaestra.envs.counter.environment import Counter
from palaestra.envs.number_guess.environment import NumberGuess, task
from palaestra.envs.synonyms.environment import Synonyms
from palaestra.errors import EnvironmentFailure, ToolCallRejected
from palaestra.serve.env_app import environment_app
from palaestra.serve.guard import Guard
from palaestra.serve.remote_env import RemoteEnvironmentClient
from palaestra.serve.uvicorn_runner import BackgroundServer
from palaestra.types import JsonDict
from tests.envs.test_counter import stepper
from tests.envs.test_counter import tasks as counter_tasks
from tests.envs.test_number_guess import bisector
from tests.support.cookie_resources_server import cookie_resources_app


@pytest.fixture
def counter_server() -> Iterator[BackgroundServer]:
    with BackgroundServer(environment_app(Counter())) as server:
        yield server


async def test_a_nemo_gym_style_client_with_cookies_gets_the_in_process_rewards(
    counter_server: BackgroundServer,
) -> None:
    rows = counter_tasks()
    local = LocalEnvironmentClient(Counter())
    expected = [(await ToolCallingAgent().run(row, local, stepper(row))).verdict for row in rows]
    rewards = []
    for row in rows:
        # one cookie jar per rollout, as NeMo Gym's agent keeps one per request chain;
        # unsafe=True lets aiohttp keep cookies set by an IP-address host such as 127.0.0.1
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(base_url=counter_server.url, cookie_jar=jar) as http:
            async with http.post("/seed_session", json=row) as seeded:
                assert seeded.status == 200 and await seeded.json() == {}
            for amount in row["increments"]:
                async with http.post("/increment", json={"amount": amount}) as called:
                    assert called.status == 200
                    value = await called.json()
            async with http.post("/read_counter", json={}) as read:
                assert await read.json() == value
            body = {**row, "response": {"output": [], "id": "r"}}
            async with http.post("/verify", json=body) as verified:
                answer = await verified.json()
            assert answer["responses_create_params"] == row["responses_create_params"]
            assert answer["final_value"] == row["target_value"]
            rewards.append(answer["reward"])
            async with http.post("/close_session", json={}) as closed:
                assert closed.status == 200
    assert rewards == [v.reward for v in expected if v is not None] == [1.0] * 5


async def test_remote_client_runs_the_agent_unchanged(counter_server: BackgroundServer) -> None:
    remote = await RemoteEnvironmentClient.connect(counter_server.url)
    try:
        assert [t["name"] for t in remote.tools()] == ["increment", "read_counter"]
        rows = counter_tasks()
        results = await asyncio.gather(
            *(ToolCallingAgent().run(row, remote, stepper(row)) for row in rows)
        )
        for row, result in zip(rows, results, strict=True):
            assert result.failure is None and result.verdict is not None
            assert result.verdict.reward == 1.0
            assert result.verdict.metrics["final_value"] == row["target_value"]
    finally:
        await remote.aclose()
    assert len(counter_server._server.config.app.state.client.sessions) == 0  # all closed


async def test_remote_tool_mistakes_are_fed_back_like_in_process() -> None:
    with BackgroundServer(environment_app(Synonyms())) as server:
        remote = await RemoteEnvironmentClient.connect(server.url)
        local = LocalEnvironmentClient(Synonyms())
        try:
            for client in (remote, local):
                session = await client.seed({"expected_synonyms": ["joyful"]})
                assert await client.call_tool(session, "get_synonym", {"word": "happy"}) == (
                    "joyful"
                )
                with pytest.raises(ToolCallRejected, match="zebra"):
                    await client.call_tool(session, "get_synonym", {"word": "zebra"})
                with pytest.raises(ToolCallRejected, match="word"):
                    await client.call_tool(session, "get_synonym", {"wrd": "x"})
                await client.close(session)
        finally:
            await remote.aclose()


async def test_remote_client_drives_a_cookie_only_nemo_gym_style_server() -> None:
    with BackgroundServer(cookie_resources_app()) as server:
        remote = await RemoteEnvironmentClient.connect(server.url)
        try:
            assert remote.tools() == []  # NeMo Gym servers do not list tools
            task: JsonDict = {"responses_create_params": {"input": "x"}, "target_value": 3}
            sessions = [await remote.seed(task) for _ in range(2)]
            await remote.call_tool(sessions[0], "increment", {"amount": 3})
            await remote.call_tool(sessions[1], "increment", {"amount": 1})
            first = await remote.verify(sessions[0], task, {"output": []})
            second = await remote.verify(sessions[1], task, {"output": []})
            assert (first.reward, first.metrics) == (1.0, {"final_value": 3})
            assert (second.reward, second.metrics) == (0.0, {"final_value": 1})
        finally:
            await remote.aclose()


async def test_protocol_errors_are_clear(counter_server: BackgroundServer) -> None:
    async with aiohttp.ClientSession(base_url=counter_server.url) as http:
        async with http.post("/seed_session", data=b"{nope") as bad:
            assert bad.status == 400
        async with http.post("/increment", json={"amount": 1}) as no_session:
            assert no_session.status == 401
            assert "seed_session" in (await no_session.json())["error"]["message"]
        async with http.post("/verify", json={"responses_create_params": {}}) as missing:
            assert missing.status == 422
            assert (await missing.json())["error"]["param"] == "response"
        forged = {"x-palaestra-session": "abc.def"}
        async with http.post("/increment", json={}, headers=forged) as denied:
            assert denied.status == 401
        async with http.post("/seed_session", json={}) as seeded:
            token = seeded.headers["x-palaestra-session"]
        async with http.post(
            "/increment", json={"amount": "many"}, headers={"x-palaestra-session": token}
        ) as invalid:
            assert invalid.status == 422
            assert "amount" in (await invalid.json())["error"]["message"]


async def test_verify_without_a_session_scores_in_a_fresh_one(
    counter_server: BackgroundServer,
) -> None:
    async with aiohttp.ClientSession(base_url=counter_server.url) as http:
        body = {
            "responses_create_params": {"input": "x"},
            "initial_value": 4,
            "target_value": 4,
            "response": {"output": []},
        }
        async with http.post("/verify", json=body) as verified:
            assert (await verified.json())["reward"] == 1.0


async def test_aggregate_metrics_endpoint() -> None:
    with BackgroundServer(environment_app(Counter())) as server:
        async with aiohttp.ClientSession(base_url=server.url) as http:
            rows = [{"reward": 1.0, "_ng_task_index": 0}, {"reward": 0.0, "_ng_task_index": 0}]
            async with http.post("/aggregate_metrics", json={"verify_responses": rows}) as done:
                metrics = await done.json()
    assert metrics["agent_metrics"]["mean/reward"] == 0.5
    assert metrics["key_metrics"]["pass@2"] == 1.0
    assert set(metrics) == {"agent_metrics", "key_metrics", "group_level_metrics"}


async def test_guard_requires_the_token_and_bounds_the_body() -> None:
    app = Guard(environment_app(Counter()), token="s3cret", max_body=1000)
    with BackgroundServer(app) as server:
        async with aiohttp.ClientSession(base_url=server.url) as http:
            async with http.get("/") as anonymous:
                assert anonymous.status == 401
            auth = {"Authorization": "Bearer s3cret"}
            async with http.get("/", headers=auth) as allowed:
                assert allowed.status == 200
            big = orjson.dumps({"pad": "x" * 5000})
            async with http.post("/seed_session", data=big, headers=auth) as too_big:
                assert too_big.status == 413


async def test_turn_based_environment_over_http_gives_the_same_episode() -> None:
    row = task(low=1, high=64, target=45)
    local = await StepAgent(max_steps=8).run(row, LocalEnvironmentClient(NumberGuess()), bisector())
    with BackgroundServer(environment_app(NumberGuess())) as server:
        remote_client = await RemoteEnvironmentClient.connect(server.url)
        try:
            assert remote_client.default_agent == "step"
            remote = await StepAgent(max_steps=8).run(row, remote_client, bisector())
        finally:
            await remote_client.aclose()
        plain = await RemoteEnvironmentClient.connect(server.url)
        try:
            counter_like = await plain.seed({})
            with pytest.raises(EnvironmentFailure, match="/step answered 500"):
                await plain.step(counter_like, "3")  # reset was never called: a clear failure
        finally:
            await plain.aclose()
    assert local.verdict is not None and remote.verdict is not None
    assert remote.verdict.reward == local.verdict.reward == 1.0
    assert remote.verdict.step_rewards == local.verdict.step_rewards
    assert remote.response["output"] == local.response["output"]  # type: ignore[index]
