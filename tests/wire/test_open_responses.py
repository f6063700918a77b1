"""Responses and streams as Open Responses has them, checked against the spec's own schemas.

The schemas come from packages (tests/support/open_responses.py): the spec's OpenAPI document
as llm-comply ships it and the models openresponses-types generates from it.
"""

from __future__ import annotations

from typing import Any

import pytest

from palaestra.agents.episode import whole_response
from palaestra.errors import InputError
from palaestra.models.chat_format import chat_to_response, context_length_response
from palaestra.types import JsonDict, function_call_output, user_message
from palaestra.wire.open_responses import SPEC_VERSION, conform, event_stream, take_stream
from palaestra.wire.rows import PARAMS
from tests.support.open_responses import (
    check_versions,
    parse_stream,
    response_problems,
    spec_versions,
    stream_problems,
)

PARAMS_WITH_TOOL: JsonDict = {
    "model": "m",
    "input": "Weather in Rome?",
    "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
}


def _completion(message: JsonDict, finish: str = "stop") -> JsonDict:
    return {
        "id": "chatcmpl-1",
        "model": "m",
        "created": 1_700_000_000,
        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
    }


def _answer() -> JsonDict:
    """A model's answer with reasoning, text, a refusal part and a tool call."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": "{}"},
    }
    message = {
        "role": "assistant",
        "content": "<think>The user wants weather.</think>Let me look.",
        "refusal": "Not the forecast.",
        "tool_calls": [call],
    }
    return chat_to_response(_completion(message), PARAMS_WITH_TOOL)


def _trajectory() -> JsonDict:
    """An agent's trajectory as a row holds it: a tool's output and a simulated user's turn."""
    response = whole_response(_answer(), {PARAMS: PARAMS_WITH_TOOL})
    response["output"] += [
        function_call_output("call_1", "12 C"),
        user_message("And tomorrow?"),
    ]
    return response


def test_both_schema_packages_carry_the_spec_version_palaestra_names() -> None:
    assert spec_versions() == (SPEC_VERSION, SPEC_VERSION)
    check_versions()


def test_a_model_answer_is_a_spec_response_once_conformed() -> None:
    raw = _answer()
    before = response_problems(raw)  # what palaestra answered before it conformed
    assert any("completed_at" in problem for problem in before)
    assert any("temperature" in problem for problem in before)
    conformed = conform(raw, PARAMS_WITH_TOOL)
    assert response_problems(conformed) == []
    assert [item["type"] for item in conformed["output"]] == [
        "reasoning",
        "message",
        "function_call",
    ]
    assert conformed["tools"][0] == {
        "description": None,
        "parameters": {"type": "object"},
        "strict": None,
        "type": "function",
        "name": "get_weather",
    }
    assert isinstance(conformed["completed_at"], int)
    assert conformed["store"] is False and conformed["truncation"] == "disabled"


def test_a_trajectory_with_tool_outputs_and_user_turns_is_a_spec_response() -> None:
    trajectory = _trajectory()
    assert any("output.4" in problem for problem in response_problems(trajectory))
    conformed = conform(trajectory, PARAMS_WITH_TOOL)
    assert response_problems(conformed) == []
    tool_output, user = conformed["output"][3:]
    assert tool_output["id"].startswith("fco_") and tool_output["call_id"] == "call_1"
    assert list(tool_output) == ["call_id", "output", "type", "id", "status"]  # NeMo Gym's order
    assert user["id"].startswith("msg_") and user["status"] == "completed"
    assert user["content"] == [{"type": "input_text", "text": "And tomorrow?"}]


def test_conforming_keeps_nemo_gym_s_field_order_and_is_idempotent() -> None:
    trajectory = _trajectory()
    conformed = conform(trajectory, PARAMS_WITH_TOOL)
    assert list(conformed)[: len(trajectory)] == list(trajectory)
    assert conform(conformed, PARAMS_WITH_TOOL) == conformed
    assert "id" not in trajectory["output"][4]  # the argument is left as it was


def test_settings_come_from_the_request_else_the_spec_defaults() -> None:
    asked = {**PARAMS_WITH_TOOL, "temperature": 0.2, "text": {"format": {"type": "json_object"}}}
    conformed = conform({"output": [], "status": "completed"}, asked)
    assert conformed["temperature"] == 0.2 and conformed["top_p"] == 1.0
    assert conformed["text"] == {"format": {"type": "json_object"}, "verbosity": "medium"}
    assert conformed["model"] == "m" and conformed["object"] == "response"
    assert response_problems(conformed) == []


def test_a_prompt_past_the_context_names_a_reason_and_keeps_its_code() -> None:
    overflow = context_length_response(PARAMS_WITH_TOOL, model="m", message="4096 tokens at most")
    assert response_problems(overflow)  # reason null: the spec wants a string
    conformed = conform(overflow, PARAMS_WITH_TOOL)
    assert response_problems(conformed) == []
    assert conformed["incomplete_details"] == {
        "reason": "max_output_tokens",
        "code": "context_length_exceeded",
        "message": "4096 tokens at most",
    }
    assert conformed["completed_at"] is None


def test_a_streamed_trajectory_follows_the_spec_event_by_event() -> None:
    conformed = conform(_trajectory(), PARAMS_WITH_TOOL)
    events, problems = stream_problems(event_stream(conformed))
    assert problems == []
    kinds = [event["type"] for event in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    for kind in (
        "response.reasoning_summary_text.delta",
        "response.output_text.delta",
        "response.refusal.done",
        "response.function_call_arguments.done",
    ):
        assert kind in kinds
    assert events[-1]["response"] == conformed
    text = next(e for e in events if e["type"] == "response.output_text.done")["text"]
    assert text == "Let me look."


def test_an_incomplete_answer_ends_its_stream_with_response_incomplete() -> None:
    cut = chat_to_response(_completion({"role": "assistant", "content": "Once"}, "length"), {})
    events, problems = stream_problems(event_stream(conform(cut)))
    assert problems == []
    assert [e["type"] for e in events][-1] == "response.incomplete"


def test_a_stream_ends_with_done_and_names_each_event_as_its_type() -> None:
    blocks, problems = parse_stream(event_stream(conform(_answer())))
    assert problems == []
    assert blocks[-1] == (None, "[DONE]")
    assert all(name is not None and f'"type":"{name}"' in data for name, data in blocks[:-1])


@pytest.mark.parametrize(("stream", "wanted"), [(True, True), (False, False), (None, False)])
def test_the_stream_flag_is_taken_out_of_the_model_s_request(stream: Any, wanted: bool) -> None:
    params: JsonDict = {"input": "hi", "stream": stream, "stream_options": {"x": 1}}
    assert take_stream(params) is wanted
    assert params == {"input": "hi"}


def test_a_stream_flag_that_is_not_a_boolean_is_refused_naming_the_field() -> None:
    with pytest.raises(InputError) as caught:
        take_stream({"input": "hi", "stream": "yes"})
    assert caught.value.field == "stream"


def test_a_conformed_response_owns_its_text_setting_so_editing_it_changes_no_other() -> None:
    first = conform({"output": []})
    first["text"]["format"]["type"] = "json_object"
    second = conform({"output": []})
    assert second["text"] == {"format": {"type": "text"}, "verbosity": "medium"}
