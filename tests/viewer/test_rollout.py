"""One rollout as the viewer draws it, and its token-level view."""

from __future__ import annotations

import copy

from palaestra.types import FailureKind
from palaestra.viewer.rollout import preview, rollout_view
from palaestra.viewer.tokens import LocalVocabulary, token_view
from tests.viewer.rows import (
    ANSWER_IDS,
    CALL_IDS,
    LOCAL_MODEL,
    PROMPT_IDS,
    TOOL_IDS,
    failed,
    scored,
    simulated_user,
)


def test_a_tool_calling_rollout_reads_as_task_messages_then_reasoning_call_output_answer() -> None:
    view = rollout_view(scored(3, "Lima", 1.0))
    kinds = [(item["kind"], item.get("role"), item["origin"]) for item in view["items"]]
    assert kinds == [
        ("message", "system", "task"),
        ("message", "user", "task"),
        ("reasoning", None, "output"),
        ("function_call", None, "output"),
        ("function_call_output", None, "output"),
        ("message", "assistant", "output"),
    ]
    call, output = view["items"][3], view["items"][4]
    assert (call["name"], call["arguments"]) == ("get_weather", '{"city":"Lima"}')
    assert output["name"] == "get_weather"  # paired with its call by call_id
    assert "Lima is cold" in output["output"]
    assert view["items"][2]["text"] == "I should look up Lima."
    assert not any(item.get("simulated") for item in view["items"])


def test_the_verdict_shows_reward_components_and_only_the_verifiers_metrics() -> None:
    view = rollout_view(scored(3, "Lima", 1.0))
    assert view["verdict"]["reward"] == 1.0
    assert view["verdict"]["components"] == {"called_tool": 1.0, "named_city": 1.0}
    assert view["verdict"]["metrics"] == {"said_city": True}
    assert view["task_fields"] == {"expected_city": "Lima"}  # the task's own, not a metric
    assert view["timings"]["total"] == 1.0
    assert view["facts"] == {"attempt": 1, "model_calls": 2, "tool_calls": 1}
    assert view["usage"]["total_tokens"] == 150
    assert view["failure"] is None


def test_user_turns_in_the_output_are_marked_as_simulated_and_the_tasks_are_not() -> None:
    view = rollout_view(simulated_user(0, 0.5))
    marked = [item["text"] for item in view["items"] if item.get("simulated")]
    assert marked == ["Hi! When are you free next week?", "Tuesday is bad for me; Wednesday works."]
    first_user = next(item for item in view["items"] if item.get("role") == "user")
    assert first_user["origin"] == "task" and "simulated" not in first_user
    assert view["verdict"]["step_rewards"] == [0.0, 0.5]


def test_every_output_item_says_who_produced_it_and_only_the_policy_s_are_trainable() -> None:
    view = rollout_view(simulated_user(0, 0.5))
    output = [item for item in view["items"] if item["origin"] == "output"]
    assert [(item["producer"], item["trainable"]) for item in output] == [
        ("user", False),
        ("policy", True),
        ("user", False),
        ("policy", True),
    ]
    assert all("producer" not in item for item in view["items"] if item["origin"] == "task")
    # A row without producers (an older run, another writer) gets them derived: a tool
    # output is the tool's, a user message the environment's, the rest the policy's.
    row = simulated_user(0, 0.5)
    del row["_palaestra"]["producers"]
    row["response"]["output"].append(
        {"type": "function_call_output", "call_id": "c1", "output": "ok"}
    )
    derived = [
        item["producer"] for item in rollout_view(row)["items"] if item["origin"] == "output"
    ]
    assert derived == ["environment", "policy", "environment", "policy", "tool"]


def test_a_failure_shows_its_kind_reason_and_the_trajectory_so_far() -> None:
    view = rollout_view(failed(4, FailureKind.TOOL_ERROR, "KeyError: 'Atlantis' (at w.py:41)"))
    assert view["verdict"] is None
    assert view["failure"]["kind"] == "tool_error"
    assert view["failure"]["reason"].startswith("KeyError")
    assert view["items"][-1]["kind"] == "function_call"


def test_token_arrays_become_counts_in_the_conversation() -> None:
    view = rollout_view(scored(0, "Oslo", 1.0, with_tokens=True))
    carrying = [item["tokens"] for item in view["items"] if "tokens" in item]
    assert carrying == [
        {"prompt": len(PROMPT_IDS), "generated": len(CALL_IDS)},
        {"prompt": len(PROMPT_IDS + CALL_IDS + TOOL_IDS), "generated": len(ANSWER_IDS)},
    ]
    assert view["token_calls"] == 2
    assert "generation_token_ids" not in str(view["items"])


def test_the_token_view_marks_exactly_the_generated_tokens_as_trained_on() -> None:
    tokens = token_view(scored(0, "Oslo", 1.0, with_tokens=True))
    (sequence,) = tokens["sequences"]
    assert sequence["ids"] == PROMPT_IDS + CALL_IDS + TOOL_IDS + ANSWER_IDS
    expected = [0] * len(PROMPT_IDS) + [1] * len(CALL_IDS) + [0] * len(TOOL_IDS)
    assert sequence["mask"] == expected + [1] * len(ANSWER_IDS)
    assert (tokens["trained"], tokens["contiguous"], tokens["pieces"]) == (23, True, None)


def test_a_rollout_whose_calls_do_not_fit_together_is_shown_call_by_call_with_the_reason() -> None:
    row = scored(0, "Oslo", 1.0, with_tokens=True)
    broken = copy.deepcopy(row)
    answer = broken["response"]["output"][-1]
    answer["prompt_token_ids"] = [*PROMPT_IDS[:-1], 7, *CALL_IDS, *TOOL_IDS]
    tokens = token_view(broken)
    assert tokens["contiguous"] is False
    assert "model call 1" in tokens["reason"]
    assert [s["label"] for s in tokens["sequences"]] == ["model call 0", "model call 1"]
    assert [s["break_at"] for s in tokens["sequences"]] == [None, len(PROMPT_IDS) - 1]
    assert tokens["trained"] == len(CALL_IDS) + len(ANSWER_IDS)


def test_a_rollout_without_token_ids_says_how_to_get_them() -> None:
    tokens = token_view(scored(0, "Oslo", 1.0))
    assert tokens["sequences"] == []
    assert "return_tokens" in tokens["reason"]


def test_the_embedded_models_ids_are_decoded_with_its_own_vocabulary() -> None:
    row = scored(0, "San Francisco", 1.0, with_tokens=True, model=LOCAL_MODEL)
    tokens = token_view(row, LocalVocabulary())
    pieces = tokens["pieces"]
    assert pieces is not None
    text = "".join(pieces[str(i)] for i in tokens["sequences"][0]["ids"])
    assert text.startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>")
    assert "San Francisco" in text
    # another model's ids stay numbers: the viewer loads no tokenizer it does not know
    assert token_view(scored(0, "Oslo", 1.0, with_tokens=True), LocalVocabulary())["pieces"] is None


def test_the_table_preview_is_why_a_rollout_failed_else_its_first_user_message() -> None:
    assert preview(scored(0, "Oslo", 1.0)) == "What's the weather like in Oslo?"
    assert preview(failed(0, FailureKind.TIMEOUT, "too slow")) == "too slow"
    assert preview(scored(0, "Oslo " * 100, 1.0), limit=20) == "What's the weather …"
