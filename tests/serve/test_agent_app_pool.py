"""A served agent over a pool of model endpoints keeps each rollout's calls on one endpoint."""

from __future__ import annotations

import aiohttp

from palaestra import LocalEnvironmentClient, ToolCallingAgent
from palaestra.envs.weather.environment import Weather
from palaestra.models import build_model
from palaestra.serve.agent_app import agent_app
from palaestra.serve.uvicorn_runner import BackgroundServer
from palaestra.spec import ModelConfig
from tests.cli.test_collect_cli import weather_script
from tests.support.scripted_model import ScriptedModelServer

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
