"""The model and agent servers' ``/v1/responses`` and the rows, as Open Responses has them.

Over real HTTP against scripted backends: every answer, every streamed event and every row is
validated against the spec's schemas (tests/support/open_responses.py), and the compliance
suite ``llm-comply`` runs its Open Responses checks against both servers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from llm_comply import result as comply_result
from llm_comply import runner as comply_runner
from llm_comply.config import ComplianceConfig
from llm_comply.schema import SpecLoader
from llm_comply.tests.open_responses import OPEN_RESPONSES_TESTS

from palaestra import LocalEnvironmentClient, ToolCallingAgent
from palaestra.agents import BoundAgent
from palaestra.collection.collector import CollectConfig, collect
from palaestra.envs.weather.environment import Weather
from palaestra.http.runner import BackgroundServer
from palaestra.models.openai.responses import OpenAIResponsesModel
from palaestra.remote.agent import RemoteAgent
from palaestra.serve import model_app
from palaestra.serve.agent_app import agent_app
from palaestra.types import JsonDict
from tests.cli.test_collect_cli import weather_script
from tests.collection.test_collector import Quiet, read_jsonl
from tests.support.open_responses import (
    error_problems,
    response_problems,
    spec_path,
    stream_problems,
)
from tests.support.scripted_model import (
    ScriptedModelServer,
    text_response,
    tool_call_response,
)

NOT_APPLICABLE = {
    # The spec's CreateResponseBody requires no field, and a palaestra server serves one model:
    # a request that names none is answered by it, not refused.
    "error-handling": ["HTTP 200 (expected [400, 422])"],
}
"""llm-comply's checks that palaestra does not pass, each with exactly the errors it reports
(docs/peers.md says why): any other error fails the test."""


def compliance_script(params: JsonDict) -> JsonDict:
    """A backend that calls the first tool it is offered once, else says hello."""
    items = params["input"] if isinstance(params["input"], list) else []
    tools = params.get("tools") or []
    if tools and not any(item.get("type") == "function_call_output" for item in items):
        return tool_call_response(tools[0]["name"], '{"location": "Paris"}')
    return text_response("Hello from palaestra.")


@pytest.fixture(scope="module")
def model_server() -> Iterator[str]:
    with (
        ScriptedModelServer(compliance_script) as backend,
        BackgroundServer(model_app(OpenAIResponsesModel(backend.url), model_id="m")) as served,
    ):
        yield served.url


@pytest.fixture(scope="module")
def agent_server() -> Iterator[str]:
    with ScriptedModelServer(weather_script()) as backend:
        app = agent_app(
            ToolCallingAgent(), LocalEnvironmentClient(Weather()), OpenAIResponsesModel(backend.url)
        )
        with BackgroundServer(app) as served:
            yield served.url


async def _post(url: str, body: JsonDict) -> tuple[int, str, bytes]:
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{url}/v1/responses", json=body) as answer,
    ):
        return answer.status, answer.headers["content-type"], await answer.read()


ASKS: list[JsonDict] = [
    {"model": "m", "input": "Say hello."},
    {
        "model": "m",
        "input": [{"role": "user", "content": "Weather in Rome?"}],
        "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
        "temperature": 0.5,
    },
]


@pytest.mark.parametrize("server", ["model_server", "agent_server"])
@pytest.mark.parametrize("ask", ASKS, ids=["text", "tools"])
async def test_an_answer_and_its_stream_conform_to_the_spec(
    server: str, ask: JsonDict, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue(server)
    status, kind, body = await _post(url, ask)
    assert status == 200 and kind.startswith("application/json")
    whole = orjson.loads(body)
    assert response_problems(whole) == []
    status, kind, raw = await _post(url, {**ask, "stream": True})
    assert status == 200 and kind.startswith("text/event-stream")
    events, problems = stream_problems(raw)
    assert problems == []
    final = events[-1]["response"]
    assert [item["type"] for item in final["output"]] == [i["type"] for i in whole["output"]]
    assert final["temperature"] == ask.get("temperature", 1.0)


def _compliance(url: str) -> dict[str, Any]:
    config = ComplianceConfig(base_url=f"{url}/v1", api_key="unused", model="m", timeout=60)
    runner = comply_runner.TestRunner(config, OPEN_RESPONSES_TESTS, SpecLoader(str(spec_path())))
    suite = runner.run_all()
    return {result.id: result for result in suite.results}


@pytest.mark.parametrize("server", ["model_server", "agent_server"])
async def test_llm_comply_s_open_responses_checks_pass_but_the_ones_named_not_applicable(
    server: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue(server)
    results = await asyncio.to_thread(_compliance, url)
    assert len(results) == len(OPEN_RESPONSES_TESTS)
    failed = {
        id: r.errors for id, r in results.items() if r.status is comply_result.TestStatus.FAILED
    }
    assert failed == NOT_APPLICABLE
    ran = {id for id, r in results.items() if r.status is comply_result.TestStatus.PASSED}
    for check in ("basic-response", "tool-calling", "streaming-response", "streaming-usage"):
        assert check in ran


@pytest.mark.parametrize("where", ["in process", "served"])
async def test_every_row_a_collection_writes_is_a_spec_response(
    tmp_path: Path, where: str, request: pytest.FixtureRequest
) -> None:
    task = {"responses_create_params": {"input": "Weather in Rome?", "temperature": 0.3}}
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(orjson.dumps(task) + b"\n" + orjson.dumps(task) + b"\n")
    config = CollectConfig(input=tasks, output=tmp_path / "out.jsonl")
    with ScriptedModelServer(weather_script()) as backend:
        model = OpenAIResponsesModel(backend.url)
        runner: Any = BoundAgent(ToolCallingAgent(), LocalEnvironmentClient(Weather()), model)
        if where == "served":  # the agent server's /run answers are the rows
            runner = RemoteAgent(request.getfixturevalue("agent_server"))
        try:
            summary = await collect(runner, config, Quiet())
        finally:
            await model.aclose()
            if isinstance(runner, RemoteAgent):
                await runner.aclose()
    assert summary.done == 2
    for row in read_jsonl(tmp_path / "out.jsonl"):
        assert response_problems(row["response"]) == []
        assert row["response"]["temperature"] == 0.3
        assert [i["type"] for i in row["response"]["output"]] == [
            "function_call",
            "function_call_output",
            "message",
        ]


@pytest.mark.parametrize("server", ["model_server", "agent_server"])
@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("previous_response_id", "resp_1", "stores no Response"),
        ("conversation", "conv_1", "no conversation state"),
        ("background", True, "foreground only"),
        ("stream", "yes", "must be a boolean"),
    ],
)
async def test_a_request_palaestra_cannot_serve_is_refused_naming_the_field(
    server: str, field: str, value: Any, words: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue(server)
    status, _, body = await _post(url, {"model": "m", "input": "Say hello.", field: value})
    error = orjson.loads(body)["error"]
    assert status == 422 and error["param"] == field and words in error["message"]
    assert error_problems(error) == []
    status, _, body = await _post(url, {"model": "m", "input": "Say hello.", field: None})
    assert status == 200 and response_problems(orjson.loads(body)) == []
