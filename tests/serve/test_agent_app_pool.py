"""A served agent over a pool of model endpoints keeps each rollout's calls on one endpoint, and
its rows say where the calls went, as an in-process run's do."""

from __future__ import annotations

import aiohttp

from palaestra import LocalEnvironmentClient, ToolCallingAgent
from palaestra.collection.records import rollout_row
from palaestra.envs.weather.environment import Weather
from palaestra.http.runner import BackgroundServer
from palaestra.models import build_model
from palaestra.remote.agent import RemoteAgent
from palaestra.serve.agent_app import agent_app
from palaestra.spec import ModelConfig
from palaestra.types import JsonDict
from palaestra.wire.rows import FACTS
from tests.cli.test_collect_cli import weather_script
from tests.support.scripted_model import ScriptedFault, ScriptedModelServer

CITIES = ("Rome", "Oslo", "Lima", "Kyiv")


async def test_each_served_rollout_stays_on_one_endpoint() -> None:
    with ScriptedModelServer(weather_script()) as a, ScriptedModelServer(weather_script()) as b:
        pool = build_model(ModelConfig(urls=[a.url, b.url], api="responses"))
        app = agent_app(ToolCallingAgent(), LocalEnvironmentClient(Weather()), pool)
        with BackgroundServer(app) as agent:
            async with aiohttp.ClientSession() as http:
                for city in CITIES:  # one after another: a call outside a rollout alternates
                    task = {"responses_create_params": {"input": f"Weather in {city}?"}}
                    async with http.post(f"{agent.url}/run", json=task) as done:
                        assert (await done.json())["reward"] == 1.0
                params = {"input": "Weather in Faro?"}
                async with http.post(f"{agent.url}/v1/responses", json=params) as done:
                    assert done.status == 200
        seen = {
            server.url: [str(body["input"]) for body in server.bodies("/v1/responses")]
            for server in (a, b)
        }
    for city in (*CITIES, "Faro"):
        holders = [url for url, inputs in seen.items() if any(city in text for text in inputs)]
        assert len(holders) == 1, city  # both calls of the rollout on one endpoint
        assert sum(city in text for text in seen[holders[0]]) == 2


def _broken(params: JsonDict) -> ScriptedFault:
    return ScriptedFault(status=503)


async def test_a_served_rollout_s_answer_and_row_name_the_endpoint_its_calls_went_to() -> None:
    task: JsonDict = {"responses_create_params": {"input": "Weather in Rome?"}}
    with ScriptedModelServer(weather_script()) as a, ScriptedModelServer(weather_script()) as b:
        pool = build_model(ModelConfig(urls=[a.url, b.url], api="responses"))
        app = agent_app(ToolCallingAgent(), LocalEnvironmentClient(Weather()), pool)
        with BackgroundServer(app) as agent:
            # what NeMo Gym's collector writes: the /run answer as it is
            run = f"{agent.url}/run"
            async with aiohttp.ClientSession() as http, http.post(run, json=task) as done:
                answer = await done.json()
            remote = RemoteAgent(agent.url)
            try:
                result = await remote.run(task)
            finally:
                await remote.aclose()
        calls = {server.url: len(server.bodies("/v1/responses")) for server in (a, b)}
    assert answer["reward"] == 1.0
    assert result.verdict is not None and result.verdict.reward == 1.0
    assert len(answer[FACTS]["endpoints"]) == 1 and "endpoint_moves" not in answer[FACTS]
    assert result.endpoints is not None and len(result.endpoints) == 1
    for url in (*answer[FACTS]["endpoints"], *result.endpoints):
        assert calls[url] >= 2  # both calls of the rollout went there
    row = rollout_row(task, result, attempt=1)
    assert row[FACTS]["endpoints"] == result.endpoints
    assert "endpoint_moves" not in row[FACTS]


async def test_a_served_rollout_that_moved_says_so_in_its_row() -> None:
    task: JsonDict = {"responses_create_params": {"input": "Weather in Oslo?"}}
    with ScriptedModelServer(_broken) as a, ScriptedModelServer(weather_script()) as b:
        # a is first in turn: the first call fails there (503) and moves to b for good
        config = ModelConfig(urls=[a.url, b.url], api="responses", retry_delay=0)
        app = agent_app(ToolCallingAgent(), LocalEnvironmentClient(Weather()), build_model(config))
        with BackgroundServer(app) as agent:
            remote = RemoteAgent(agent.url)
            try:
                result = await remote.run(task)
            finally:
                await remote.aclose()
    assert result.verdict is not None and result.verdict.reward == 1.0
    assert result.endpoints == [a.url, b.url]
    row = rollout_row(task, result, attempt=1)
    assert row[FACTS]["endpoints"] == [a.url, b.url]
    assert row[FACTS]["endpoint_moves"] == 1
