"""OpenAIResponsesModel against a scripted Responses server over real HTTP."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

from palaestra.errors import ModelAuthError, ModelError, ModelUnreachable
from palaestra.models import Model, ModelConfig, OpenAIResponsesModel
from palaestra.transport import HttpClient
from palaestra.types import JsonDict, function_call_output, input_items, user_message
from tests.support.network import free_port
from tests.support.scripted_model import (
    ScriptedFault,
    ScriptedModelServer,
    Sequence,
    fail_first,
    text_response,
    tool_call_response,
)

RETRIES = 2
TOKENS: JsonDict = {
    "prompt_token_ids": [101, 102],
    "generation_token_ids": [201],
    "generation_log_probs": [-0.125],
}


def plain(url: str, **fields: Any) -> ModelConfig:
    """An endpoint at ``url`` with the default retry policy."""
    return ModelConfig(url=url, **fields)


def fast(url: str, **fields: Any) -> ModelConfig:
    """An endpoint at ``url`` that retries RETRIES times without waiting long."""
    return plain(url, max_retries=RETRIES, retry_delay=0.01, max_retry_delay=0.05, **fields)


def test_it_is_a_model() -> None:
    assert isinstance(OpenAIResponsesModel("http://127.0.0.1:1/v1"), Model)


async def test_respond_posts_params_with_the_model_filled_in() -> None:
    with ScriptedModelServer(lambda _: text_response("Paris")) as server:
        model = OpenAIResponsesModel(fast(server.url + "/", model="my-model"))
        try:
            response = await model.respond({"input": "capital of France?", "temperature": 0})
        finally:
            await model.aclose()
        [body] = server.bodies("/v1/responses")
        assert server.authorizations == [None]
    assert body == {"input": "capital of France?", "temperature": 0, "model": "my-model"}
    assert response["output"][0]["content"][0]["text"] == "Paris"
    assert model.stats.requests == 1


async def test_the_api_key_is_sent_as_a_bearer_token() -> None:
    with ScriptedModelServer(lambda _: text_response("ok")) as server:
        model = OpenAIResponsesModel(plain(server.url, model="m", api_key="sk-abc"))
        try:
            await model.respond({"input": "x"})
        finally:
            await model.aclose()
        assert server.authorizations == ["Bearer sk-abc"]


async def test_without_a_model_name_the_first_listed_model_is_looked_up_once() -> None:
    with ScriptedModelServer(lambda _: text_response("ok"), model="served-model") as server:
        model = OpenAIResponsesModel(fast(server.url))
        try:
            await model.respond({"input": "a"})
            await model.respond({"input": "b"})
        finally:
            await model.aclose()
        routes = [route for route, _ in server.requests]
        bodies = server.bodies("/v1/responses")
    assert routes.count("/v1/models") == 1
    assert [body["model"] for body in bodies] == ["served-model", "served-model"]
    assert model.name == "served-model"
    assert model.stats.requests == 2  # the lookup is not a model call


async def test_concurrent_first_calls_share_one_model_lookup() -> None:
    failing = ScriptedModelServer(
        lambda _: text_response("ok"), models=lambda: ScriptedFault(status=503)
    )
    with failing as server:
        model = OpenAIResponsesModel(fast(server.url))
        try:
            answers = await asyncio.gather(
                *(model.respond({"input": str(n)}) for n in range(6)), return_exceptions=True
            )
        finally:
            await model.aclose()
        routes = [route for route, _ in server.requests]
    assert all(isinstance(answer, ModelError) for answer in answers)
    # One lookup with its retry budget for all six, not six lookups one after another.
    assert routes == ["/v1/models"] * (RETRIES + 1)


async def test_a_failed_model_lookup_is_not_kept() -> None:
    listing = {"object": "list", "data": [{"id": "late-model", "object": "model"}]}
    script = fail_first(RETRIES + 1, ScriptedFault(status=503), then=lambda _: listing)
    with ScriptedModelServer(lambda _: text_response("ok"), models=lambda: script({})) as server:
        model = OpenAIResponsesModel(fast(server.url))
        try:
            with pytest.raises(ModelError, match="503"):
                await model.respond({"input": "a"})
            await model.respond({"input": "b"})
        finally:
            await model.aclose()
        [body] = server.bodies("/v1/responses")
    assert body["model"] == "late-model"


async def test_retries_are_counted_in_the_model_stats() -> None:
    script = fail_first(2, ScriptedFault(status=503), then=lambda _: text_response("ok"))
    with ScriptedModelServer(script) as server:
        model = OpenAIResponsesModel(fast(server.url, model="m"))
        try:
            await model.respond({"input": "x"})
        finally:
            await model.aclose()
    assert (model.stats.requests, model.stats.retries, model.stats.failures) == (1, 2, 0)


async def test_a_context_length_error_answers_an_incomplete_response() -> None:
    too_long = ScriptedFault(
        status=400, body={"error": {"message": "maximum context length is 4096 tokens"}}
    )
    with ScriptedModelServer(lambda _: too_long) as server:
        model = OpenAIResponsesModel(fast(server.url, model="m"))
        try:
            response = await model.respond({"input": "x" * 100, "max_output_tokens": 10})
        finally:
            await model.aclose()
    assert response["status"] == "incomplete"
    # The server's own reason and message, not a made-up max_output_tokens.
    assert response["incomplete_details"] == {
        "reason": None,
        "code": "context_length_exceeded",
        "message": "maximum context length is 4096 tokens",
    }
    assert response["output"] == []
    assert response["usage"]["total_tokens"] == 0
    assert response["max_output_tokens"] == 10
    assert model.stats.failures == 0


def _answer(**fields: object) -> JsonDict:
    return {**text_response("unused"), **fields}


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (_answer(output=[]), "answered no output (status 'completed'): no error message"),
        (
            _answer(output=[], status="failed", error={"code": "server_error", "message": "OOM"}),
            "answered status 'failed': server_error: OOM",
        ),
        (  # a failed status fails the call whatever the output holds
            _answer(status="failed", error={"code": "server_error", "message": "cut"}),
            "answered status 'failed': server_error: cut",
        ),
        (_answer(output=[], status="cancelled"), "answered status 'cancelled'"),
    ],
)
async def test_an_empty_or_failed_answer_is_a_model_error_carrying_the_servers_message(
    answer: JsonDict, said: str
) -> None:
    with ScriptedModelServer(lambda _: answer) as server:
        model = OpenAIResponsesModel(fast(server.url, model="m"))
        try:
            with pytest.raises(ModelError) as caught:
                await model.respond({"input": "x"})
        finally:
            await model.aclose()
    assert said in str(caught.value)
    assert f"{server.url}/responses" in str(caught.value)
    assert model.stats.failures == 1


async def test_an_empty_incomplete_answer_is_an_answer() -> None:
    # What a palaestra model server relays for a context-length error: passed on, not failed.
    details = {"reason": None, "code": "context_length_exceeded", "message": "too long"}
    relayed = _answer(output=[], status="incomplete", incomplete_details=details)
    with ScriptedModelServer(lambda _: relayed) as server:
        model = OpenAIResponsesModel(fast(server.url, model="m"))
        try:
            response = await model.respond({"input": "x"})
        finally:
            await model.aclose()
    assert response["incomplete_details"] == details
    assert model.stats.failures == 0


async def test_a_rejected_key_fails_check_and_respond_at_once() -> None:
    with ScriptedModelServer(lambda _: text_response("ok"), api_key="sk-right") as server:
        model = OpenAIResponsesModel(fast(server.url, api_key="sk-wrong"))
        try:
            with pytest.raises(ModelAuthError, match=r"rejected the API key \(401\)"):
                await model.check()
            with pytest.raises(ModelAuthError, match=r"rejected the API key \(401\)"):
                await model.respond({"input": "x"})  # the model-name lookup is refused first
            model.endpoint.model = "m"
            with pytest.raises(ModelAuthError, match="Incorrect API key provided"):
                await model.respond({"input": "x"})
        finally:
            await model.aclose()
        routes = [route for route, _ in server.requests]
    assert routes == ["/v1/models", "/v1/models", "/v1/responses"]  # no retries
    assert "sk-wrong" not in "".join(routes)


async def test_an_answer_without_output_is_a_model_error() -> None:
    with ScriptedModelServer(lambda _: {"id": "resp_1", "object": "response"}) as server:
        model = OpenAIResponsesModel(fast(server.url, model="m"))
        try:
            with pytest.raises(ModelError, match="without an 'output' list"):
                await model.respond({"input": "x"})
        finally:
            await model.aclose()
    assert model.stats.failures == 1


async def test_token_ids_on_the_last_item_are_sent_back_unchanged() -> None:
    first = tool_call_response("lookup", '{"q": "x"}', call_id="call_7", last_item=TOKENS)
    with ScriptedModelServer(Sequence([first, text_response("done")])) as server:
        model = OpenAIResponsesModel(fast(server.url, model="m"))
        try:
            params: JsonDict = {"input": [user_message("go")]}
            response = await model.respond(params)
            history = [
                *input_items(params),
                *response["output"],
                function_call_output("call_7", "42"),
            ]
            await model.respond({"input": history})
        finally:
            await model.aclose()
        second = server.bodies("/v1/responses")[1]
    sent_call = second["input"][1]
    assert sent_call["type"] == "function_call"
    assert {key: sent_call[key] for key in TOKENS} == TOKENS


async def test_check_passes_on_any_http_answer() -> None:
    with ScriptedModelServer(lambda _: text_response("ok"), api="chat") as server:
        model = OpenAIResponsesModel(server.url + "/nowhere")  # 404, but someone answered
        try:
            await model.check()
        finally:
            await model.aclose()


async def test_an_unreachable_server_fails_check_and_respond() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    model = OpenAIResponsesModel(fast(url, model="m"))
    try:
        with pytest.raises(ModelUnreachable, match=url):
            await model.check()
        with pytest.raises(ModelUnreachable, match=url):
            await model.respond({"input": "x"})
    finally:
        await model.aclose()


async def test_a_borrowed_http_client_is_left_open_and_an_own_one_closed() -> None:
    with ScriptedModelServer(lambda _: text_response("ok")) as server:
        borrowed = HttpClient()
        model = OpenAIResponsesModel(plain(server.url, model="m"), http=borrowed)
        await model.respond({"input": "x"})
        await model.aclose()
        assert not borrowed.closing
        await model.respond({"input": "x"})  # the borrowed client still works
        await borrowed.aclose()
        own = OpenAIResponsesModel(plain(server.url, model="m"))
        await own.respond({"input": "x"})
        client = own.endpoint.http()
        await own.aclose()
        assert client.closing


def test_a_subprocess_can_reach_the_scripted_server() -> None:
    with ScriptedModelServer(lambda _: text_response("ok")) as server:
        code = (
            "import json, sys, urllib.request\n"
            "print(json.load(urllib.request.urlopen(sys.argv[1] + '/models'))['data'][0]['id'])"
        )
        done = subprocess.run(
            [sys.executable, "-c", code, server.url], capture_output=True, text=True, timeout=30
        )
    assert done.stdout.strip() == "scripted-model"
