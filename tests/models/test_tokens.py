"""Token capture from vLLM and SGLang answer shapes, the token-mode pieces, and their options."""

from __future__ import annotations

import pytest

from palaestra.errors import ConfigError, ModelError
from palaestra.models import ModelConfig, OpenAIChatModel, build_model
from palaestra.models.openai.auto_api import AutoApiModel
from palaestra.models.openai.token_client import OpenAITokenModel, glue
from palaestra.models.tokens import CHAT_CAPTURE_PARAMS, captured_tokens, token_history
from palaestra.models.tool_formats import parse_hermes, tool_format
from palaestra.types import JsonDict
from tests.support.scripted_model import ScriptedModelServer, text_response
from tests.support.toy_tokenizer import IM_END, ToyTokenizer


def _choice_logprobs(ids: list[int], values: list[float], *, as_ids: bool) -> JsonDict:
    return {
        "content": [
            {"token": f"token_id:{t}" if as_ids else "x", "logprob": v, "top_logprobs": []}
            for t, v in zip(ids, values, strict=True)
        ]
    }


def test_vllm_chat_puts_prompt_ids_at_the_top_and_generated_ids_on_the_choice() -> None:
    answer = {
        "prompt_token_ids": [1, 2],
        "choices": [
            {
                "token_ids": [7, 8],
                "logprobs": _choice_logprobs([7, 8], [-0.5, -1.0], as_ids=False),
            }
        ],
    }
    assert captured_tokens(answer, "here") == {
        "prompt_token_ids": [1, 2],
        "generation_token_ids": [7, 8],
        "generation_log_probs": [-0.5, -1.0],
    }


def test_vllm_token_id_strings_stand_in_for_missing_token_ids() -> None:
    choice = {"logprobs": _choice_logprobs([7, 9], [-0.5, -2], as_ids=True)}
    answer = {"prompt_token_ids": [1], "choices": [choice]}
    assert captured_tokens(answer, "here")["generation_token_ids"] == [7, 9]


def test_sglang_and_completions_put_prompt_ids_on_the_choice() -> None:
    completion = {
        "choices": [
            {
                "text": "hi",
                "prompt_token_ids": [3],
                "token_ids": [4, 5],
                "logprobs": {"token_logprobs": [-0.1, -0.2], "tokens": ["h", "i"]},
            }
        ]
    }
    assert captured_tokens(completion, "here") == {
        "prompt_token_ids": [3],
        "generation_token_ids": [4, 5],
        "generation_log_probs": [-0.1, -0.2],
    }


def test_an_answer_without_the_fields_or_with_misaligned_ones_is_a_model_error() -> None:
    with pytest.raises(ModelError, match="here answered no prompt token ids and no generated"):
        captured_tokens({"choices": [{"message": {}}]}, "here")
    misaligned = {
        "prompt_token_ids": [1],
        "choices": [{"token_ids": [7, 8], "logprobs": {"token_logprobs": [-0.5]}}],
    }
    with pytest.raises(ModelError, match="2 generated token ids but 1 log-probs"):
        captured_tokens(misaligned, "here")


async def test_return_tokens_asks_the_chat_server_and_fills_the_last_item_sglang_shape() -> None:
    tokenizer = ToyTokenizer()
    with ScriptedModelServer(
        lambda _: text_response("hi"), api="chat", tokenizer=tokenizer, flavour="sglang"
    ) as server:
        model = OpenAIChatModel(ModelConfig(url=server.url, options={"return_tokens": True}))
        try:
            response = await model.respond({"input": "hello"})
        finally:
            await model.aclose()
        body = server.bodies("/v1/chat/completions")[0]
    assert {key: body[key] for key in CHAT_CAPTURE_PARAMS} == CHAT_CAPTURE_PARAMS
    last = response["output"][-1]
    rendered = tokenizer.render([{"role": "user", "content": "hello"}])
    assert last["prompt_token_ids"] == tokenizer.encode(rendered)
    assert last["generation_token_ids"] == [*tokenizer.generate("hi"), IM_END]
    assert len(last["generation_log_probs"]) == len(last["generation_token_ids"])


async def test_a_server_that_returns_no_token_ids_fails_the_call_instead_of_dropping_them() -> None:
    with ScriptedModelServer(lambda _: text_response("hi"), api="chat") as server:
        model = OpenAIChatModel(
            ModelConfig(url=server.url, max_retries=0, options={"return_tokens": True})
        )
        try:
            with pytest.raises(ModelError, match="answered no prompt token ids"):
                await model.respond({"input": "hello"})
        finally:
            await model.aclose()
    assert model.stats.failures == 1


def test_capture_chooses_chat_and_refuses_the_responses_api() -> None:
    url = "http://127.0.0.1:1/v1"
    auto = build_model(ModelConfig(url=url, options={"return_tokens": True}))
    assert isinstance(auto, AutoApiModel) and auto.api == "chat"
    tokens = build_model(ModelConfig(url=url, options={"token_mode": True}))
    assert isinstance(tokens, OpenAITokenModel)
    assert tokens.template.url == "http://127.0.0.1:1/tokenize"
    for options in ({"return_tokens": True}, {"token_mode": True}):
        with pytest.raises(ConfigError, match="not api: responses"):
            build_model(ModelConfig(url=url, api="responses", options=options))
    with pytest.raises(ConfigError, match="unknown tool_format 'xml' \\(known: hermes, none\\)"):
        build_model(ModelConfig(url=url, options={"token_mode": True, "tool_format": "xml"}))


def test_the_history_splits_after_the_last_item_with_token_ids() -> None:
    items: list[JsonDict] = [
        {"type": "message", "role": "user", "content": "go"},
        {"type": "function_call", "prompt_token_ids": [1, 2], "generation_token_ids": [3]},
        {"type": "function_call_output", "call_id": "c", "output": "5"},
    ]
    history = token_history(items)
    assert (history.prefix, history.generated, history.new_items) == ([1, 2, 3], [3], items[2:])
    assert token_history(items[:1]).prefix is None


def test_the_turn_closing_is_template_only_where_the_generation_did_not_write_it() -> None:
    closing = [2, 26]  # <|im_end|> and a newline
    assert glue([9, 2], closing) == [26]
    assert glue([9, 8], closing) == [2, 26]  # cut off by max_tokens
    assert glue([9, 2, 26], closing) == []


def test_hermes_tool_calls_are_read_and_a_broken_block_stays_text() -> None:
    turn = parse_hermes(
        'Let me add.<tool_call>\n{"name": "add", "arguments": {"a": 2}}\n</tool_call>'
    )
    assert turn.text == "Let me add."
    assert [call["function"] for call in turn.tool_calls] == [
        {"name": "add", "arguments": '{"a":2}'}
    ]
    broken = "<tool_call>\n{not json}\n</tool_call>"
    assert parse_hermes(broken).tool_calls == [] and parse_hermes(broken).text == broken
    assert tool_format("none")("<tool_call>x</tool_call>").tool_calls == []
