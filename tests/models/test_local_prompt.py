"""The embedded model's ChatML tool prompt: pure string work, no llama.cpp needed."""

from __future__ import annotations

import pytest

from palaestra.errors import InputError
from palaestra.models.local.prompt import (
    ToolPlan,
    choice_grammar,
    chosen_function,
    plan_tools,
    render_prompt,
)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
CLOCK = {"type": "function", "function": {"name": "get_time"}}


def test_plan_reads_tool_choice() -> None:
    assert plan_tools([WEATHER], "none") == ToolPlan()
    assert plan_tools(None, "auto") == ToolPlan()
    auto = plan_tools([WEATHER, CLOCK], None)
    assert auto.names == ("get_weather", "get_time") and auto.allow_text
    assert not plan_tools([WEATHER, CLOCK], "required").allow_text
    forced = plan_tools([WEATHER, CLOCK], {"type": "function", "function": {"name": "get_time"}})
    assert forced.names == ("get_time",) and not forced.allow_text
    assert forced.schema_of("get_time") == {"type": "object", "properties": {}}


@pytest.mark.parametrize(
    ("tools", "choice", "field"),
    [
        ([WEATHER], {"type": "function", "function": {"name": "nope"}}, "tool_choice"),
        ([WEATHER], "sometimes", "tool_choice"),
        ([{"type": "function"}], "auto", "tools"),
    ],
)
def test_plan_names_the_bad_field(
    tools: list[dict[str, object]], choice: object, field: str
) -> None:
    with pytest.raises(InputError) as caught:
        plan_tools(tools, choice)
    assert caught.value.field == field


def test_plain_conversation_is_chatml_without_default_system_prompt() -> None:
    prompt = render_prompt([{"role": "user", "content": "Hi"}], None, ToolPlan())
    assert prompt == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


def test_tool_loop_history_is_rendered_with_tools_listed_once() -> None:
    messages = [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather "}, "in Paris?"]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "It is sunny."},
        {"role": "user", "content": "Thanks"},
    ]
    prompt = render_prompt(messages, [WEATHER], plan_tools([WEATHER], "auto"))
    assert prompt.startswith("<|im_start|>system\nBe brief.\n\nYou can call these functions:")
    assert prompt.count("functions.get_weather: Get the weather.") == 1
    assert "<|im_start|>user\nWeather in Paris?<|im_end|>" in prompt
    assert '<|im_start|>assistant\nfunctions.get_weather:\n{"city":"Paris"}<|im_end|>' in prompt
    assert "<|im_start|>tool\nsunny<|im_end|>" in prompt
    assert "<|im_start|>assistant\nmessage:\nIt is sunny.<|im_end|>" in prompt
    assert prompt.endswith("<|im_start|>user\nThanks<|im_end|>\n<|im_start|>assistant\n")


def test_tools_are_not_offered_when_tool_choice_is_none() -> None:
    prompt = render_prompt([{"role": "user", "content": "Hi"}], [WEATHER], ToolPlan())
    assert "functions." not in prompt


@pytest.mark.parametrize(
    "messages",
    [[], "hi", [{"role": "robot", "content": "x"}], [{"role": "user", "content": [{"x": 1}]}]],
)
def test_bad_messages_name_the_field(messages: object) -> None:
    with pytest.raises(InputError) as caught:
        render_prompt(messages, None, ToolPlan())
    assert caught.value.field == "messages"


def test_choice_grammar_and_its_parse() -> None:
    auto = plan_tools([WEATHER, {"type": "function", "function": {"name": 'we"ird'}}], "auto")
    grammar = choice_grammar(auto)
    assert grammar == 'root ::= "message:" | "functions.get_weather:" | "functions.we\\"ird:"\n'
    assert chosen_function("functions.get_weather:", auto) == "get_weather"
    assert chosen_function("message:", auto) is None
    assert chosen_function("functions.unknown:", auto) is None
    required = plan_tools([WEATHER], "required")
    assert "message:" not in choice_grammar(required)


def test_an_image_in_a_tool_answer_reads_as_a_placeholder_for_the_text_only_model() -> None:
    screenshot = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}}
    shown = [{"type": "text", "text": "page:"}, screenshot]
    messages = [
        {"role": "user", "content": "Click the button."},
        {"role": "tool", "tool_call_id": "c1", "content": shown},
    ]
    prompt = render_prompt(messages, None, ToolPlan())
    assert "page:[image]" in prompt
    assert "base64" not in prompt
