"""Responses <-> Chat Completions conversion, as pure functions on dicts."""

from __future__ import annotations

import pytest

from palaestra.errors import ModelError
from palaestra.models.chat_format import (
    chat_request_to_responses_params,
    chat_to_response,
    context_length_response,
    incomplete_response,
    response_to_chat_completion,
    responses_to_chat,
)
from palaestra.types import JsonDict

TOKENS: JsonDict = {
    "prompt_token_ids": [1, 2, 3],
    "generation_token_ids": [7, 8],
    "generation_log_probs": [-0.5, -0.25],
}
WEATHER_TOOL: JsonDict = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    "strict": True,
}


def completion(message: JsonDict, finish_reason: str = "stop", **extra: object) -> JsonDict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        **extra,
    }


def function_call(call_id: str, name: str, arguments: str) -> JsonDict:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


# --- Responses params -> chat request -------------------------------------------------------


def test_string_input_and_instructions_become_system_then_user() -> None:
    body = responses_to_chat({"input": "hi", "instructions": "be brief", "model": "m"})
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]
    assert body["model"] == "m"


def test_an_assistant_turn_folds_into_one_message_with_reasoning_and_tool_calls() -> None:
    params: JsonDict = {
        "input": [
            {"type": "message", "role": "developer", "content": "rules"},
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "weather "},
                    {"type": "input_text", "text": "in Paris?"},
                ],
            },
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "need the tool"}],
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
            },
            function_call("c1", "get_weather", '{"city": "Paris"}'),
            function_call("c2", "get_weather", '{"city": "Lyon"}'),
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
            {"type": "function_call_output", "call_id": "c2", "output": "rain"},
        ]
    }
    messages = responses_to_chat(params)["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool"]
    assert messages[1]["content"] == "weather in Paris?"
    assistant = messages[2]
    assert assistant["content"] == "Checking."
    assert assistant["reasoning_content"] == "need the tool"
    assert assistant["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        },
        {
            "id": "c2",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Lyon"}'},
        },
    ]
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
    assert messages[4] == {"role": "tool", "tool_call_id": "c2", "content": "rain"}


def test_function_calls_after_tool_output_open_a_new_assistant_message() -> None:
    params: JsonDict = {
        "input": [
            function_call("c1", "f", "{}"),
            {"type": "function_call_output", "call_id": "c1", "output": "1"},
            function_call("c2", "f", "{}"),
        ]
    }
    messages = responses_to_chat(params)["messages"]
    assert [m["role"] for m in messages] == ["assistant", "tool", "assistant"]
    assert messages[0]["content"] is None
    assert [call["id"] for call in messages[2]["tool_calls"]] == ["c2"]


def test_reasoning_without_a_following_assistant_turn_is_dropped() -> None:
    params: JsonDict = {
        "input": [
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "lost"}]},
            {"role": "user", "content": "next"},
            {"role": "assistant", "content": "answer"},
        ]
    }
    messages = responses_to_chat(params)["messages"]
    assert messages == [
        {"role": "user", "content": "next"},
        {"role": "assistant", "content": "answer"},
    ]


def test_tools_choice_and_sampling_are_converted_and_metadata_dropped() -> None:
    params: JsonDict = {
        "input": "x",
        "tools": [WEATHER_TOOL],
        "tool_choice": {"type": "function", "name": "get_weather"},
        "temperature": 0.0,
        "top_p": 0.9,
        "max_output_tokens": 64,
        "parallel_tool_calls": False,
        "seed": 7,
        "metadata": {"k": "v"},
    }
    body = responses_to_chat(params)
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather in a city.",
                "parameters": WEATHER_TOOL["parameters"],
                "strict": True,
            },
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.0, 0.9, 64)
    assert body["parallel_tool_calls"] is False
    assert body["seed"] == 7
    assert "metadata" not in body
    assert "max_output_tokens" not in body


def test_without_tools_no_tool_choice_is_sent() -> None:
    body = responses_to_chat(
        {"input": "x", "tools": [], "tool_choice": "auto", "parallel_tool_calls": True}
    )
    assert "tools" not in body
    assert "tool_choice" not in body
    assert "parallel_tool_calls" not in body


def test_string_tool_choice_passes_through() -> None:
    body = responses_to_chat({"input": "x", "tools": [WEATHER_TOOL], "tool_choice": "required"})
    assert body["tool_choice"] == "required"


def test_token_ids_are_dropped_by_default_and_kept_on_request() -> None:
    params: JsonDict = {
        "input": [
            {"role": "user", "content": "q"},
            {**function_call("c1", "f", "{}"), **TOKENS},
            {"type": "function_call_output", "call_id": "c1", "output": "1"},
        ]
    }
    dropped = responses_to_chat(params)["messages"][1]
    assert not set(TOKENS) & set(dropped)
    kept = responses_to_chat(params, keep_token_ids=True)["messages"][1]
    assert {key: kept[key] for key in TOKENS} == TOKENS
    assert kept["tool_calls"][0]["id"] == "c1"


def test_non_function_tools_cannot_go_to_chat() -> None:
    with pytest.raises(ModelError, match="web_search"):
        responses_to_chat({"input": "x", "tools": [{"type": "web_search"}]})


# --- chat completion -> Response ------------------------------------------------------------


def test_text_completion_becomes_a_completed_response_echoing_params() -> None:
    params: JsonDict = {
        "input": "x",
        "tools": [WEATHER_TOOL],
        "temperature": 0.2,
        "max_output_tokens": 50,
        "metadata": {"task": "1"},
    }
    usage = {
        "prompt_tokens": 11,
        "completion_tokens": 4,
        "total_tokens": 15,
        "prompt_tokens_details": {"cached_tokens": 3},
    }
    response = chat_to_response(
        completion({"role": "assistant", "content": "Paris"}, usage=usage), params
    )
    assert response["object"] == "response"
    assert response["id"].startswith("resp_")
    assert response["status"] == "completed"
    assert response["incomplete_details"] is None
    assert response["model"] == "m"
    [message] = response["output"]
    assert message["type"] == "message"
    assert message["role"] == "assistant"
    assert message["content"] == [{"type": "output_text", "text": "Paris", "annotations": []}]
    assert response["usage"] == {
        "input_tokens": 11,
        "output_tokens": 4,
        "total_tokens": 15,
        "input_tokens_details": {"cached_tokens": 3},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    assert response["tools"] == [WEATHER_TOOL]
    assert response["temperature"] == 0.2
    assert response["max_output_tokens"] == 50
    assert response["metadata"] == {"task": "1"}
    assert response["tool_choice"] == "auto"


@pytest.mark.parametrize(
    ("finish", "reason"), [("length", "max_output_tokens"), ("content_filter", "content_filter")]
)
def test_cut_off_completions_are_incomplete(finish: str, reason: str) -> None:
    response = chat_to_response(completion({"content": "half"}, finish), {})
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": reason}


def test_tool_calls_become_function_call_items_and_token_ids_land_on_the_last() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            },
            {
                "id": "call_b",
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Lyon"}},
            },
        ],
        **TOKENS,
    }
    output = chat_to_response(completion(message, "tool_calls"), {})["output"]
    assert [item["type"] for item in output] == ["function_call", "function_call"]
    assert [item["call_id"] for item in output] == ["call_a", "call_b"]
    assert output[0]["arguments"] == '{"city": "Paris"}'
    assert output[1]["arguments"] == '{"city":"Lyon"}'  # a parsed object is re-serialised
    assert all(item["id"].startswith("fc_") and item["status"] == "completed" for item in output)
    assert {key: output[1][key] for key in TOKENS} == TOKENS
    assert not set(TOKENS) & set(output[0])


def test_reasoning_content_becomes_a_reasoning_item_before_the_message() -> None:
    message = {"content": "42", "reasoning_content": "6 times 7"}
    output = chat_to_response(completion(message), {})["output"]
    assert [item["type"] for item in output] == ["reasoning", "message"]
    assert output[0]["summary"] == [{"type": "summary_text", "text": "6 times 7"}]


def test_think_tags_are_split_off_the_text() -> None:
    output = chat_to_response(completion({"content": "<think>hmm</think>\n42"}), {})["output"]
    assert output[0]["summary"][0]["text"] == "hmm"
    assert output[1]["content"][0]["text"] == "42"


def test_an_unclosed_think_block_is_all_reasoning() -> None:
    output = chat_to_response(completion({"content": "<think>still going"}, "length"), {})["output"]
    assert [item["type"] for item in output] == ["reasoning"]


def test_an_empty_answer_still_has_one_message_to_carry_token_ids() -> None:
    output = chat_to_response(completion({"content": "", **TOKENS}), {})["output"]
    assert output[0]["content"][0]["text"] == ""
    assert output[0]["generation_token_ids"] == [7, 8]


@pytest.mark.parametrize(
    ("bad", "what"),
    [
        ({"choices": []}, "no 'choices'"),
        ({"choices": [{"text": "legacy"}]}, "no 'message'"),
        ({"choices": [{"message": {"content": 5}}]}, "not a string"),
        ({"choices": [{"message": {"tool_calls": [{"id": "x"}]}}]}, "no 'function'"),
        ({"choices": [{"message": {"tool_calls": "f()"}}]}, "not a list"),
    ],
)
def test_malformed_completions_raise_model_error_saying_what(bad: JsonDict, what: str) -> None:
    with pytest.raises(ModelError, match=what):
        chat_to_response(bad, {})


def test_incomplete_response_is_empty_with_zero_usage() -> None:
    response = incomplete_response({"input": "x"}, model="m")
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "max_output_tokens"}
    assert response["output"] == []
    assert response["usage"]["total_tokens"] == 0


# --- the reverse directions -----------------------------------------------------------------


def test_chat_request_converts_to_responses_params_and_back() -> None:
    params: JsonDict = {
        "input": [
            {"type": "message", "role": "user", "content": "weather?"},
            function_call("c1", "get_weather", '{"city": "Paris"}'),
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        ],
        "tools": [WEATHER_TOOL],
        "tool_choice": {"type": "function", "name": "get_weather"},
        "max_output_tokens": 32,
        "temperature": 0.5,
    }
    back = chat_request_to_responses_params(responses_to_chat(params))
    kinds = [item.get("type") for item in back["input"]]
    assert kinds == ["message", "function_call", "function_call_output"]
    call = back["input"][1]
    assert (call["call_id"], call["name"], call["arguments"]) == (
        "c1",
        "get_weather",
        '{"city": "Paris"}',
    )
    assert back["input"][2] == {"type": "function_call_output", "call_id": "c1", "output": "sunny"}
    assert back["tools"] == [WEATHER_TOOL]
    assert back["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert (back["max_output_tokens"], back["temperature"]) == (32, 0.5)


def test_chat_tools_without_strict_get_strict_false() -> None:
    body: JsonDict = {
        "messages": [{"role": "user", "content": "x"}],
        "tools": [{"type": "function", "function": {"name": "f"}}],
    }
    assert chat_request_to_responses_params(body)["tools"][0]["strict"] is False


def test_unknown_chat_roles_are_rejected() -> None:
    with pytest.raises(ModelError, match="unknown role"):
        chat_request_to_responses_params({"messages": [{"role": "narrator", "content": "x"}]})


def test_response_to_chat_completion_and_back_keeps_calls_and_token_ids() -> None:
    response: JsonDict = {
        "id": "resp_abc",
        "created_at": 1700000000,
        "model": "m",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Let me look."}],
            },
            {**function_call("c9", "get_weather", '{"city": "Rome"}'), **TOKENS},
        ],
        "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7},
    }
    chat = response_to_chat_completion(response)
    choice = chat["choices"][0]
    assert chat["id"] == "chatcmpl-abc"
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Let me look."
    assert choice["message"]["generation_log_probs"] == [-0.5, -0.25]
    assert chat["usage"]["prompt_tokens"] == 5
    again = chat_to_response(chat, {})
    assert [item["type"] for item in again["output"]] == ["message", "function_call"]
    assert again["output"][1]["call_id"] == "c9"
    assert {key: again["output"][1][key] for key in TOKENS} == TOKENS


def test_an_incomplete_response_finishes_with_length() -> None:
    response: JsonDict = {"output": [], "incomplete_details": {"reason": "max_output_tokens"}}
    assert response_to_chat_completion(response)["choices"][0]["finish_reason"] == "length"


def test_a_context_length_response_keeps_the_servers_words_and_finishes_with_length() -> None:
    response = context_length_response(
        {"input": "x", "max_output_tokens": 5}, model="m", message="context is 4096 tokens"
    )
    assert (response["status"], response["output"], response["error"]) == ("incomplete", [], None)
    # reason is null: OpenAI's Response type (NeMo Gym validates against it) allows only its own.
    assert response["incomplete_details"] == {
        "reason": None,
        "code": "context_length_exceeded",
        "message": "context is 4096 tokens",
    }
    assert response["max_output_tokens"] == 5
    assert response_to_chat_completion(response)["choices"][0]["finish_reason"] == "length"


def test_a_response_without_output_is_malformed() -> None:
    with pytest.raises(ModelError, match="no 'output' list"):
        response_to_chat_completion({"id": "resp_1"})
