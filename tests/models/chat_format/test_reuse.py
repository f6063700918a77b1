"""Converting only what a call adds (``ChatReuse``): the same messages as a fresh conversion,
for continued, repeated, truncated and edited inputs, and a conversion count that grows with
what is new, not with the history."""

from __future__ import annotations

import copy

from palaestra.models.chat_format import CHAT_REUSE, ChatReuse, responses_to_chat
from palaestra.types import JsonDict

TOKENS: JsonDict = {
    "prompt_token_ids": [1, 2, 3],
    "generation_token_ids": [7, 8],
    "generation_log_probs": [-0.5, -0.25],
}


def _user(text: str) -> JsonDict:
    return {"type": "message", "role": "user", "content": text}


def _reasoning(text: str) -> JsonDict:
    return {"type": "reasoning", "summary": [{"type": "summary_text", "text": text}]}


def _call(call_id: str, **extra: object) -> JsonDict:
    item = {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"}
    return {**item, **extra}


def _output(call_id: str) -> JsonDict:
    return {"type": "function_call_output", "call_id": call_id, "output": f"out {call_id}"}


def _said(text: str, **extra: object) -> JsonDict:
    content = [{"type": "output_text", "text": text}]
    return {"type": "message", "role": "assistant", "content": content, **extra}


def _history() -> list[JsonDict]:
    """Every fold the conversion makes: reasoning into the next assistant message, several
    tool calls into one message, token fields onto it, reasoning that nothing follows."""
    return [
        {"type": "message", "role": "developer", "content": "Be brief."},
        _user("q1"),
        _reasoning("think"),
        _said("let me look"),
        _call("c1"),
        _call("c2", **TOKENS),
        _output("c1"),
        _output("c2"),
        _reasoning("dropped: no assistant turn follows"),
        _user("q2"),
        _said("done", **TOKENS),
        _user("q3"),
        _call("c3"),
        _output("c3"),
    ]


def _fresh(items: list[JsonDict], keep_token_ids: bool) -> list[JsonDict]:
    params: JsonDict = {"instructions": "sys", "input": items}
    messages: list[JsonDict] = responses_to_chat(params, keep_token_ids=keep_token_ids)["messages"]
    return messages


def _reused(reuse: ChatReuse, items: list[JsonDict], keep_token_ids: bool) -> list[JsonDict]:
    token = CHAT_REUSE.set(reuse)
    try:
        params: JsonDict = {"instructions": "sys", "input": items}
        body = responses_to_chat(params, keep_token_ids=keep_token_ids)
        messages: list[JsonDict] = body["messages"]
        return messages
    finally:
        CHAT_REUSE.reset(token)


def test_reused_conversions_are_the_conversions_of_the_whole_input() -> None:
    history = _history()
    edited = copy.deepcopy(history)
    edited[9] = _user("q2, edited")
    inputs = [history[:length] for length in range(1, len(history) + 1)]  # every cut point
    inputs += [
        history,  # the same again
        history[:5],  # truncated inside an assistant turn
        [*history[:5], _call("c9")],  # a branch that adds a tool call to that open turn
        history[:12],
        copy.deepcopy(history),  # equal, not the same objects
        edited,  # a message in the middle changed
        [*history[:4], _said("another answer"), *history[5:]],
        history[3:],  # the start dropped (a harness compacting its history)
    ]
    for keep_token_ids in (False, True):
        reuse = ChatReuse()
        for items in inputs:
            assert _reused(reuse, items, keep_token_ids) == _fresh(items, keep_token_ids)


def test_a_continued_conversation_converts_only_what_each_call_adds() -> None:
    reuse = ChatReuse()
    items: list[JsonDict] = [_user("start")]
    for turn in range(40):
        assert _reused(reuse, items, False) == _fresh(items, False)
        items = [*items, _said(f"answer {turn}"), _call(f"c{turn}"), _output(f"c{turn}")]
    # 1 + 3 per turn converted once each: a fresh conversion of every call would be 2,380.
    assert reuse.converted == 1 + 3 * 39


def test_an_input_that_shares_nothing_is_converted_whole_and_the_same_again_not_at_all() -> None:
    reuse = ChatReuse()
    history = _history()
    _reused(reuse, history, True)
    assert reuse.converted == len(history)
    _reused(reuse, history, True)
    assert reuse.converted == len(history)
    _reused(reuse, history, False)  # token fields kept or not: another conversion
    assert reuse.converted == 2 * len(history)
    _reused(reuse, [_user("other")], False)
    assert reuse.converted == 2 * len(history) + 1
