"""The Open Reward Standard's shapes: event streams, call results and named failures."""

from __future__ import annotations

import math

import pytest

from palaestra.wire import ors


def test_a_stream_reads_back_event_by_event_with_its_chunks_joined() -> None:
    body = (
        ors.sse_event("task_id", "t1")
        + ors.SSE_PING
        + ors.sse_event("chunk", '{"ok": tr')
        + ors.sse_event("end", "ue}")
    )
    events = ors.sse_events(body)
    assert events == [("task_id", "t1"), ("chunk", '{"ok": tr'), ("end", "ue}")]
    assert ors.stream_result(events) == ("end", '{"ok": true}')
    assert ors.sse_events(ors.sse_event("error", "two\nlines")) == [("error", "two\nlines")]


def test_a_stream_that_stops_before_its_end_is_no_answer() -> None:
    with pytest.raises(ors.OrsProtocolError, match="without an 'end' or 'error'"):
        ors.stream_result(ors.sse_events(ors.sse_event("task_id", "t1")))


def test_a_call_result_reads_back_as_it_was_written() -> None:
    written = ors.call_success("4", reward=0.5, finished=True, metadata={"verdict": {}})
    assert ors.call_result(written) == ors.CallResult(
        True, text="4", reward=0.5, finished=True, metadata={"verdict": {}}
    )
    refused = ors.call_result(ors.call_refused("no such tool", "not_found"))
    assert (refused.ok, refused.error, refused.reason) == (False, "no such tool", "not_found")


@pytest.mark.parametrize("reward", [math.nan, math.inf, True, "1"])
def test_a_reward_that_is_no_finite_number_is_refused_never_read_as_one(reward: object) -> None:
    answer = {"ok": True, "output": {"blocks": [], "reward": reward, "finished": True}}
    with pytest.raises(ors.OrsProtocolError, match=r"output\.reward"):
        ors.call_result(answer)


def test_a_named_failure_keeps_its_kind_through_the_error_event() -> None:
    message = ors.failure_message("verifier_error", "the key is missing")
    assert ors.parse_failure(message) == ("verifier_error", "the key is missing")
    assert ors.parse_failure("the tool broke") == (None, "the tool broke")


def test_a_prompt_of_several_messages_is_headed_by_roles_and_one_user_message_is_its_text() -> None:
    one = [{"role": "user", "content": "Hi"}]
    assert ors.prompt_blocks(one) == [ors.text_block("Hi")]
    two = [{"role": "developer", "content": "Be brief."}, *one]
    assert [b["text"] for b in ors.prompt_blocks(two)] == ["[system]", "Be brief.", "[user]", "Hi"]
    wire = ors.prompt_messages(two)
    assert ors.chat_messages(wire) == [{"role": "system", "content": "Be brief."}, *one]
