"""The agent server over real HTTP, and the collector driving it through ``RemoteAgent``."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import orjson

from palaestra import LocalEnvironmentClient, ToolCallingAgent
from palaestra.collection.collector import CollectConfig, collect
from palaestra.envs.weather.environment import Weather
from palaestra.http.runner import BackgroundServer
from palaestra.models.openai.responses import OpenAIResponsesModel
from palaestra.remote.agent import RemoteAgent
from palaestra.serve.agent_app import agent_app
from palaestra.types import FailureKind
from tests.cli.test_collect_cli import weather_script
from tests.collection.test_collector import Quiet, read_jsonl
from tests.support.scripted_model import ScriptedFault, ScriptedModelServer

TASK = {"responses_create_params": {"input": "Weather in Rome?"}, "city": "Rome"}


def weather_agent_app(model_url: str):  # type: ignore[no-untyped-def]
    model = OpenAIResponsesModel(model_url)
    return agent_app(ToolCallingAgent(), LocalEnvironmentClient(Weather()), model)


async def test_run_answers_the_verify_answer() -> None:
    with (
        ScriptedModelServer(weather_script()) as model,
        BackgroundServer(weather_agent_app(model.url)) as agent,
    ):
        async with aiohttp.ClientSession() as http:
            async with http.post(f"{agent.url}/run", json=TASK) as done:
                assert done.status == 200
                row = await done.json()
            async with http.post(
                f"{agent.url}/v1/responses", json=TASK["responses_create_params"]
            ) as as_model:
                trajectory = await as_model.json()
            async with http.post(f"{agent.url}/run", json={"city": "x"}) as bad:
                assert bad.status == 422
                assert (await bad.json())["error"]["param"] == "responses_create_params"
    assert row["reward"] == 1.0 and row["called_tool"] is True and row["city"] == "Rome"
    assert [i["type"] for i in row["response"]["output"]] == [
        "function_call",
        "function_call_output",
        "message",
    ]
    assert trajectory["object"] == "response"
    assert len(trajectory["output"]) == 3


async def test_a_failed_rollout_is_a_nemo_gym_failure_row_not_an_error_status() -> None:
    broken = ScriptedFault(status=400, body={"error": {"message": "bad request"}})
    with (
        ScriptedModelServer(lambda p: broken) as model,
        BackgroundServer(weather_agent_app(model.url)) as agent,
    ):
        async with (
            aiohttp.ClientSession() as http,
            http.post(f"{agent.url}/run", json=TASK) as done,
        ):
            status, body = done.status, await done.json()
        runner = RemoteAgent(agent.url)
        try:
            result = await runner.run(TASK)
        finally:
            await runner.aclose()
    # NeMo Gym's collector raises on any non-2xx from /run (its whole run stops) and files a
    # 200 row carrying _ng_failure_class under failures; palaestra's RemoteAgent reads "failure".
    assert status == 200
    assert body["_ng_failure_class"] == "transient"
    assert body["failure"]["kind"] == "model_error"
    assert "reward" not in body
    assert body["city"] == "Rome"
    assert result.verdict is None
    assert result.failure is not None and result.failure.kind is FailureKind.MODEL_ERROR


async def test_collect_through_a_served_agent(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(orjson.dumps(TASK) + b"\n" + orjson.dumps(TASK) + b"\n")
    with (
        ScriptedModelServer(weather_script()) as model,
        BackgroundServer(weather_agent_app(model.url)) as agent,
    ):
        runner = RemoteAgent(agent.url)
        try:
            summary = await collect(
                runner,
                CollectConfig(
                    input=tasks,
                    output=tmp_path / "out.jsonl",
                    repeats=2,
                    agent_ref={"type": "responses_api_agents", "name": "weather_remote"},
                ),
                Quiet(),
            )
        finally:
            await runner.aclose()
    assert runner.name == "tool_calling"
    assert summary.done == 4 and summary.mean_reward == 1.0
    rows = read_jsonl(tmp_path / "out.jsonl")
    assert all(r["called_tool"] is True and r["_palaestra"]["model_calls"] == 2 for r in rows)
    assert sorted((r["_ng_task_index"], r["_ng_rollout_index"]) for r in rows) == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
    ]


async def test_a_palaestra_collector_gets_the_rollout_without_its_task_echoed_back() -> None:
    with (
        ScriptedModelServer(weather_script()) as model,
        BackgroundServer(weather_agent_app(model.url)) as agent,
    ):
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{agent.url}/") as alive:
                assert (await alive.json())["no_echo"] is True
            headers = {"x-palaestra-no-echo": "1"}
            async with http.post(f"{agent.url}/run", json=TASK, headers=headers) as done:
                alone = await done.json()
            async with http.post(f"{agent.url}/run", json=TASK) as done:
                echoed = await done.json()
        checked, unchecked = RemoteAgent(agent.url), RemoteAgent(agent.url)
        try:
            await checked.check()  # learns the server takes the header
            results = [await checked.run(TASK), await unchecked.run(TASK)]
        finally:
            await checked.aclose()
            await unchecked.aclose()
    assert "city" not in alone and "responses_create_params" not in alone  # before: echoed
    assert echoed["city"] == "Rome"  # NeMo Gym's collector, which sends no header, gets its row
    assert set(echoed) - set(TASK) == set(alone)  # the same row but for the task's fields
    assert (alone["reward"], alone["called_tool"]) == (echoed["reward"], echoed["called_tool"])
    verdicts = [r.verdict for r in results]
    assert verdicts[0] is not None and verdicts[0] == verdicts[1]
    assert verdicts[0].reward == 1.0 and verdicts[0].metrics == {"called_tool": True}
