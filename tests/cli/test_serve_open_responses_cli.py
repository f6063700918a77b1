"""``palaestra serve model`` and ``serve agent`` driven by a real Open Responses client.

The client is the Vercel AI SDK's Open Responses provider (``@ai-sdk/open-responses`` on npm),
run by node from the cache ``scripts/install_node_clients.sh`` fills: ``generateText`` reads
the JSON answer, ``streamText`` the server-sent events. The model server serves the embedded
local model (what it answers is the model's; the test checks what the client made of it
against the same answer read whole) and a scripted backend (a tool call the client must see).
"""

from __future__ import annotations

import os
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.cli.test_collect_cli import weather_script
from tests.cli.test_serve_cli import Served
from tests.models.test_local import needs_local
from tests.serve.test_open_responses import compliance_script
from tests.support.open_responses import response_problems, stream_problems
from tests.support.scripted_model import ScriptedModelServer

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "tests" / "support" / "ai_sdk" / "client.mjs"


@pytest.fixture(scope="module")
def node_modules() -> str:
    """The AI SDK's packages (installed once per machine; a cache hit after scripts/test.sh)."""
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "install_node_clients.sh")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def ai_sdk(node_modules: str, url: str, mode: str, prompt: str, *tool: str) -> dict[str, Any]:
    """What the AI SDK made of ``url``'s answer (``mode``: generate or stream)."""
    done = subprocess.run(
        ["node", str(CLIENT), f"{url}/v1/responses", mode, prompt, *tool],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NODE_PATH": node_modules},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer: dict[str, Any] = orjson.loads(done.stdout.strip().splitlines()[-1])
    assert answer["errors"] == []
    return answer


def post(url: str, body: dict[str, Any]) -> bytes:
    request = urllib.request.Request(
        f"{url}/v1/responses",
        data=orjson.dumps(body),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        data: bytes = answer.read()
        return data


@pytest.fixture(scope="module")
def local_model() -> Iterator[str]:
    served = Served("model", env={"OMP_WAIT_POLICY": "PASSIVE"})
    try:
        yield served.url
    finally:
        served.process.terminate()
        served.process.wait(timeout=30)


@pytest.fixture(scope="module")
def scripted_model() -> Iterator[str]:
    with ScriptedModelServer(compliance_script) as backend:
        served = Served("model", "--model", backend.url)
        try:
            yield served.url
        finally:
            served.process.terminate()
            served.process.wait(timeout=30)


@pytest.fixture(scope="module")
def weather_agent() -> Iterator[str]:
    with ScriptedModelServer(weather_script()) as backend:
        served = Served("agent", "--env", "weather", "--model", backend.url)
        try:
            yield served.url
        finally:
            served.process.terminate()
            served.process.wait(timeout=30)


@pytest.mark.local_model
@needs_local
def test_the_ai_sdk_reads_the_local_model_whole_and_streamed(
    node_modules: str, local_model: str
) -> None:
    ask = {"input": "Say hello.", "max_output_tokens": 24, "temperature": 0, "seed": 7}
    whole = orjson.loads(post(local_model, ask))
    assert response_problems(whole) == []
    events, problems = stream_problems(post(local_model, {**ask, "stream": True}))
    assert problems == []
    text = "".join(p["text"] for i in whole["output"] for p in i["content"])
    assert text.strip()
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert "".join(deltas) == text  # temperature 0, one seed: the same answer, streamed
    generated = ai_sdk(node_modules, local_model, "generate", "Say hello.")
    streamed = ai_sdk(node_modules, local_model, "stream", "Say hello.")
    for answer in (generated, streamed):
        assert answer["text"].strip()
        assert answer["finishReason"] in ("stop", "length")
        assert answer["usage"]["outputTokens"] > 0
    assert streamed["parts"][:3] == ["start", "start-step", "text-start"]
    assert streamed["parts"][-2:] == ["finish-step", "finish"]


@pytest.mark.parametrize("mode", ["generate", "stream"])
def test_the_ai_sdk_sees_a_served_model_s_tool_call_and_text(
    node_modules: str, scripted_model: str, mode: str
) -> None:
    called = ai_sdk(node_modules, scripted_model, mode, "Weather in Rome?", "get_weather")
    assert called["toolCalls"] == [{"name": "get_weather", "input": {"location": "Paris"}}]
    assert called["finishReason"] == "tool-calls"
    said = ai_sdk(node_modules, scripted_model, mode, "Say hello.")
    assert said["text"] == "Hello from palaestra." and said["finishReason"] == "stop"
    assert said["usage"]["inputTokens"] == 10 and said["usage"]["outputTokens"] == 5


@pytest.mark.parametrize("mode", ["generate", "stream"])
def test_the_ai_sdk_reads_a_served_agent_s_whole_trajectory(
    node_modules: str, weather_agent: str, mode: str
) -> None:
    answer = ai_sdk(node_modules, weather_agent, mode, "Weather in Rome?")
    # The agent ran the tool itself: its call is in the trajectory beside the final text.
    assert answer["toolCalls"] == [{"name": "get_weather", "input": {"city": "Paris"}}]
    assert answer["finishReason"] == "tool-calls"  # docs/peers.md: not to be run again
    assert answer["text"] == "It is cold, take a coat."
    assert answer["usage"]["totalTokens"] == 30
