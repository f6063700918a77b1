"""OpenAIChatModel against a scripted Chat Completions server over real HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from palaestra.errors import ModelAuthError, ModelError
from palaestra.models import Model, ModelConfig, OpenAIChatModel
from palaestra.types import JsonDict, function_call_output, function_calls, output_text
from tests.support.scripted_model import (
    Script,
    ScriptedFault,
    ScriptedModelServer,
    Sequence,
    fail_first,
    text_response,
    tool_call_response,
)

RETRIES = 2


def plain(url: str, **fields: Any) -> ModelConfig:
    """An endpoint at ``url`` with the default retry policy."""
    return ModelConfig(url=url, **fields)


def fast(url: str, **fields: Any) -> ModelConfig:
    """An endpoint at ``url`` that retries RETRIES times without waiting long."""
    return plain(url, max_retries=RETRIES, retry_delay=0.01, max_retry_delay=0.05, **fields)


TOKENS: JsonDict = {
    "prompt_token_ids": [11, 12, 13],
    "generation_token_ids": [21, 22],
    "generation_log_probs": [-0.5, -1.5],
}
ADD_TOOL: JsonDict = {
    "type": "function",
    "name": "add",
    "description": "Add two numbers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "number"}}},
    "strict": True,
}


def test_it_is_a_model() -> None:
    assert isinstance(OpenAIChatModel("http://127.0.0.1:1/v1"), Model)


async def test_a_text_answer_comes_back_as_a_response() -> None:
    usage = {"input_tokens": 30, "output_tokens": 2, "total_tokens": 32}
    with ScriptedModelServer(lambda _: text_response("4", usage=usage), api="chat") as server:
        model = OpenAIChatModel(fast(server.url, model="m"))
        try:
            response = await model.respond(
                {"input": "2+2?", "instructions": "Answer tersely.", "max_output_tokens": 8}
            )
        finally:
            await model.aclose()
        [body] = server.bodies("/v1/chat/completions")
    assert body["messages"] == [
        {"role": "system", "content": "Answer tersely."},
        {"role": "user", "content": "2+2?"},
    ]
    assert (body["model"], body["max_tokens"]) == ("m", 8)
    assert response["object"] == "response"
    assert output_text(response) == "4"
    assert response["usage"]["input_tokens"] == 30
    assert response["max_output_tokens"] == 8


async def test_tool_calls_round_trip_both_ways() -> None:
    seen: list[JsonDict] = []

    def remember(reply: JsonDict) -> Script:
        def script(params: JsonDict) -> JsonDict:
            seen.append(params)
            return reply

        return script

    script = Sequence(
        [
            remember(tool_call_response("add", '{"a": 2, "b": 2}', call_id="call_add")),
            remember(text_response("4")),
        ]
    )
    with ScriptedModelServer(script, api="chat") as server:
        model = OpenAIChatModel(fast(server.url, model="m"))
        try:
            params: JsonDict = {"input": "2+2?", "tools": [ADD_TOOL], "tool_choice": "auto"}
            first = await model.respond(params)
            [call] = function_calls(first)
            history = [
                {"role": "user", "content": "2+2?"},
                *first["output"],
                function_call_output(call["call_id"], "4"),
            ]
            second = await model.respond({**params, "input": history})
        finally:
            await model.aclose()
        bodies = server.bodies("/v1/chat/completions")
    assert (call["name"], call["arguments"], call["call_id"]) == (
        "add",
        '{"a": 2, "b": 2}',
        "call_add",
    )
    assert bodies[0]["tools"][0]["function"]["name"] == "add"
    assistant, tool = bodies[1]["messages"][1:]
    assert assistant["tool_calls"][0]["id"] == "call_add"
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"a": 2, "b": 2}'
    assert tool == {"role": "tool", "tool_call_id": "call_add", "content": "4"}
    # The script saw Responses params again: a function call and its output.
    kinds = [item.get("type") for item in seen[1]["input"]]
    assert kinds == ["message", "function_call", "function_call_output"]
    assert output_text(second) == "4"


async def test_token_ids_reach_the_last_item_and_go_back_when_asked() -> None:
    first = tool_call_response("add", "{}", call_id="call_1", last_item=TOKENS)
    with ScriptedModelServer(Sequence([first, text_response("done")]), api="chat") as server:
        model = OpenAIChatModel(fast(server.url, model="m", options={"keep_token_ids": True}))
        try:
            params: JsonDict = {"input": "go", "tools": [ADD_TOOL]}
            response = await model.respond(params)
            last = response["output"][-1]
            history = [
                {"role": "user", "content": "go"},
                *response["output"],
                function_call_output("call_1", "0"),
            ]
            await model.respond({**params, "input": history})
        finally:
            await model.aclose()
        assistant = server.bodies("/v1/chat/completions")[1]["messages"][1]
    assert {key: last[key] for key in TOKENS} == TOKENS
    assert {key: assistant[key] for key in TOKENS} == TOKENS


async def test_token_ids_are_not_sent_by_default() -> None:
    replies = Sequence([text_response("a", last_item=TOKENS), text_response("b")])
    with ScriptedModelServer(replies, api="chat") as server:
        model = OpenAIChatModel(fast(server.url, model="m"))
        try:
            response = await model.respond({"input": "q"})
            await model.respond({"input": [{"role": "user", "content": "q"}, *response["output"]]})
        finally:
            await model.aclose()
        assistant = server.bodies("/v1/chat/completions")[1]["messages"][1]
    assert assistant["content"] == "a"
    assert not set(TOKENS) & set(assistant)


async def test_retries_then_success() -> None:
    script = fail_first(1, ScriptedFault(status=429), then=lambda _: text_response("ok"))
    with ScriptedModelServer(script, api="chat") as server:
        model = OpenAIChatModel(fast(server.url, model="m"))
        try:
            response = await model.respond({"input": "x"})
        finally:
            await model.aclose()
    assert output_text(response) == "ok"
    assert model.stats.retries == 1


async def test_a_context_length_error_answers_an_incomplete_response() -> None:
    too_long = ScriptedFault(status=400, body={"error": {"message": "Prompt is too long"}})
    with ScriptedModelServer(lambda _: too_long, api="chat") as server:
        model = OpenAIChatModel(fast(server.url, model="m"))
        try:
            response = await model.respond({"input": "x"})
        finally:
            await model.aclose()
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {
        "reason": None,
        "code": "context_length_exceeded",
        "message": "Prompt is too long",
    }
    assert response["output"] == []


async def test_a_rejected_key_is_an_auth_error_without_retry() -> None:
    with ScriptedModelServer(lambda _: text_response("ok"), api="chat", api_key="k") as server:
        model = OpenAIChatModel(fast(server.url, model="m", api_key="wrong"))
        try:
            with pytest.raises(ModelAuthError, match=r"rejected the API key \(401\)"):
                await model.respond({"input": "x"})
        finally:
            await model.aclose()
        routes = [route for route, _ in server.requests]
    assert routes == ["/v1/chat/completions"]


async def test_a_malformed_completion_is_a_model_error_naming_the_url() -> None:
    empty = ScriptedFault(status=200, raw_body=b'{"id": "x", "choices": []}')
    with ScriptedModelServer(lambda _: empty, api="chat") as server:
        model = OpenAIChatModel(fast(server.url, model="m"))
        try:
            with pytest.raises(ModelError) as caught:
                await model.respond({"input": "x"})
        finally:
            await model.aclose()
    assert "no 'choices'" in str(caught.value)
    assert f"{server.url}/chat/completions" in str(caught.value)
    assert model.stats.failures == 1
