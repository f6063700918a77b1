"""Token-exact rollouts end to end: a tool-calling agent, a real environment, and a scripted
vLLM-compatible server over real HTTP that tokenises as vLLM does (and, like a real BPE server,
re-tokenises generated text into other ids than were sampled)."""

from __future__ import annotations

from typing import Any

import pytest

from palaestra import Environment, LocalEnvironmentClient, Session, tool
from palaestra.agents import ToolCallingAgent
from palaestra.models import ModelConfig, build_model
from palaestra.training.tokens import ContiguityError, check_contiguity, training_sequence
from palaestra.types import AgentResult, JsonDict, output_text
from tests.support.scripted_model import (
    ScriptedModelServer,
    Sequence,
    text_response,
    tool_call_response,
)
from tests.support.toy_tokenizer import IM_END, MERGED, ToyTokenizer


class Adder(Environment):
    """Add numbers with a tool."""

    def seed(self, task: JsonDict) -> int:
        return int(task["answer"])

    @tool
    def add(self, a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def verify(self, session: Session, response: JsonDict) -> float:
        return 1.0 if output_text(response).strip() == str(session.state) else 0.0


TASK: JsonDict = {"responses_create_params": {"input": "What is 2+3?"}, "answer": 5}


def _script() -> Sequence:
    return Sequence(
        [tool_call_response("add", '{"a": 2, "b": 3}', call_id="call_1"), text_response("5")]
    )


async def _rollout(server: ScriptedModelServer, **options: Any) -> AgentResult:
    config = ModelConfig(url=server.url, model="scripted-model", max_retries=0, options=options)
    model = build_model(config)
    try:
        return await ToolCallingAgent().run(TASK, LocalEnvironmentClient(Adder()), model)
    finally:
        await model.aclose()


async def test_message_mode_on_a_re_tokenising_server_is_reported_broken_at_the_merged_id() -> None:
    with ScriptedModelServer(_script(), api="chat", tokenizer=ToyTokenizer()) as server:
        result = await _rollout(server, return_tokens=True)
    assert result.failure is None and result.verdict is not None and result.verdict.reward == 1.0
    assert result.response is not None
    first = result.response["output"][0]
    # The call was sampled with the merged id; the next prompt re-tokenised it byte by byte.
    expected = len(first["prompt_token_ids"]) + first["generation_token_ids"].index(MERGED)
    contiguity = check_contiguity(result.response)
    assert (contiguity.contiguous, contiguity.calls) == (False, 2)
    assert (contiguity.break_call, contiguity.break_position) == (1, expected)
    assert contiguity.reason is not None and f"at token {expected}" in contiguity.reason
    with pytest.raises(ContiguityError) as caught:
        training_sequence(result.response, result.verdict)
    assert caught.value.contiguity.break_position == expected


async def test_message_mode_against_a_server_that_re_tokenises_identically_is_contiguous() -> None:
    with ScriptedModelServer(_script(), api="chat", tokenizer=ToyTokenizer(merges=False)) as server:
        result = await _rollout(server, return_tokens=True)
    assert result.response is not None
    assert check_contiguity(result.response).contiguous


async def test_token_mode_on_the_same_server_is_contiguous_and_masks_only_generated_tokens() -> (
    None
):
    with ScriptedModelServer(_script(), api="chat", tokenizer=ToyTokenizer()) as server:
        result = await _rollout(server, token_mode=True)
        sent = server.bodies("/v1/completions")
    assert result.failure is None and result.verdict is not None and result.verdict.reward == 1.0
    assert result.tool_calls == 1  # the hermes <tool_call> block was parsed and run
    assert result.response is not None
    calls = [item for item in result.response["output"] if "generation_token_ids" in item]
    assert len(calls) == 2 and MERGED in calls[0]["generation_token_ids"]
    # The ids were sent, not messages, and the second prompt extends the first call exactly.
    assert [body["prompt"] for body in sent] == [c["prompt_token_ids"] for c in calls]
    first = calls[0]["prompt_token_ids"] + calls[0]["generation_token_ids"]
    assert sent[1]["prompt"][: len(first)] == first
    assert all(body["return_token_ids"] and body["logprobs"] == 0 for body in sent)
    assert check_contiguity(result.response).contiguous

    sequence = training_sequence(result.response, result.verdict)
    assert sequence.token_ids == calls[1]["prompt_token_ids"] + calls[1]["generation_token_ids"]
    generated_at = {
        len(call["prompt_token_ids"]) + offset
        for call in calls
        for offset in range(len(call["generation_token_ids"]))
    }
    assert {i for i, bit in enumerate(sequence.loss_mask) if bit} == generated_at
    for call in calls:
        start = len(call["prompt_token_ids"])
        stop = start + len(call["generation_token_ids"])
        assert sequence.log_probs[start:stop] == call["generation_log_probs"]
        assert sequence.token_ids[start:stop] == call["generation_token_ids"]
    assert sequence.turn_ends == [
        len(c["prompt_token_ids"]) + len(c["generation_token_ids"]) - 1 for c in calls
    ]
    assert sequence.reward == 1.0
    # The tool's output and the template between turns are masked.
    tool_span = range(len(first), len(calls[1]["prompt_token_ids"]))
    assert tool_span and not any(sequence.loss_mask[i] for i in tool_span)
    assert sequence.token_ids[len(first) - 1] == IM_END
