"""Rollout rows as ATIF trajectories and back (``palaestra.wire.atif``).

The rows are the ones a run writes (``tests.viewer.rows`` builds them with the collector's own
row functions): tool calls with token ids, reasoning, a simulated user, a failure with a
partial trajectory, an input line that could not be read. Each goes to JSON bytes and back, as
a file would, so nothing survives only in Python objects.
"""

from __future__ import annotations

import copy

import orjson
import pytest

from palaestra.collection.records import input_error_row
from palaestra.errors import InputError
from palaestra.types import FailureKind, JsonDict
from palaestra.wire.atif import (
    ATIF_VERSION,
    UNSCORED,
    from_trajectory,
    is_trajectory,
    to_trajectory,
)
from tests.viewer.rows import (
    ANSWER_IDS,
    CALL_IDS,
    PROMPT_IDS,
    TOOL_IDS,
    failed,
    scored,
    simulated_user,
)


def through_a_file(row: JsonDict) -> tuple[JsonDict, JsonDict]:
    """The trajectory of ``row`` as read from its file, and the row read back from it."""
    trajectory = orjson.loads(orjson.dumps(to_trajectory(row)))
    return trajectory, from_trajectory(trajectory)


def with_policy_versions(row: JsonDict, versions: list[int]) -> JsonDict:
    row["_palaestra"]["policy_versions"] = versions
    row["_palaestra"]["policy_version_span"] = max(versions) - min(versions)
    return row


ROWS: dict[str, JsonDict] = {
    "tool calls with token ids": with_policy_versions(
        scored(0, "Paris", 1.0, with_tokens=True), [3, 4]
    ),
    "tool calls, no token ids": scored(1, "Lima", 0.0),
    "a simulated user": simulated_user(2, 1.0),
    "a failure with its partial trajectory": failed(3, FailureKind.TOOL_ERROR, "tool crashed"),
    "an input line that could not be read": dict(
        input_error_row(InputError("not valid JSON", path="tasks.jsonl", line=4), task_index=4)
    ),
}


@pytest.mark.parametrize("name", list(ROWS))
def test_a_row_comes_back_from_its_trajectory_with_nothing_lost(name: str) -> None:
    row = ROWS[name]
    trajectory, back = through_a_file(copy.deepcopy(row))
    assert is_trajectory(trajectory) and trajectory["schema_version"] == ATIF_VERSION
    assert [step["step_id"] for step in trajectory["steps"]] == list(
        range(1, len(trajectory["steps"]) + 1)
    )
    assert back == row


def test_a_tool_calling_rollout_is_steps_tool_calls_observations_and_token_ids() -> None:
    trajectory, _ = through_a_file(ROWS["tool calls with token ids"])
    steps = trajectory["steps"]
    assert [step["source"] for step in steps] == ["system", "user", "agent", "agent"]
    assert steps[1]["message"] == "What's the weather like in Paris?"
    calling, answering = steps[2], steps[3]
    assert calling["reasoning_content"] == "I should look up Paris."
    assert calling["tool_calls"] == [
        {"tool_call_id": "call_1", "function_name": "get_weather", "arguments": {"city": "Paris"}}
    ]
    (result,) = calling["observation"]["results"]
    assert result["source_call_id"] == "call_1" and "cold" in result["content"]
    assert calling["metrics"]["prompt_token_ids"] == PROMPT_IDS
    assert calling["metrics"]["completion_token_ids"] == CALL_IDS
    assert calling["metrics"]["logprobs"] == [-0.5] * len(CALL_IDS)
    assert answering["message"] == "The weather in Paris is cold."
    assert answering["metrics"]["prompt_token_ids"] == PROMPT_IDS + CALL_IDS + TOOL_IDS
    assert answering["metrics"]["completion_token_ids"] == ANSWER_IDS
    assert calling["llm_call_count"] == answering["llm_call_count"] == 1
    extra = trajectory["extra"]
    assert extra["reward"] == 1.0
    assert extra["reward_components"] == {"called_tool": 1.0, "named_city": 1.0}
    assert extra["policy_versions"] == [3, 4]
    assert extra["producers"] == ["policy", "policy", "tool", "policy"]
    assert "failure" not in extra
    assert trajectory["agent"]["name"] == "weather_tool_calling"
    assert trajectory["final_metrics"]["total_prompt_tokens"] == 120


def test_a_failed_rollout_has_its_failure_and_no_reward() -> None:
    trajectory, back = through_a_file(ROWS["a failure with its partial trajectory"])
    assert "reward" not in trajectory["extra"]
    assert trajectory["extra"]["failure"] == {
        "kind": "tool_error",
        "reason": "tool crashed",
        "masked": True,
    }
    assert trajectory["steps"][-1]["tool_calls"][0]["function_name"] == "get_weather"
    assert "reward" not in back and back["failure"]["kind"] == "tool_error"


def test_a_failure_with_no_trajectory_is_one_placeholder_step_that_reads_back_as_none() -> None:
    trajectory, back = through_a_file(ROWS["an input line that could not be read"])
    (step,) = trajectory["steps"]
    assert step["source"] == "system" and "not valid JSON" in step["message"]
    assert step["extra"]["palaestra"] == {"placeholder": True}
    assert "response" not in back and "responses_create_params" not in back


def test_a_simulated_user_is_a_user_step_and_an_environment_message_an_observation() -> None:
    trajectory, _ = through_a_file(ROWS["a simulated user"])
    assert [step["source"] for step in trajectory["steps"]] == [
        *("system", "user", "user", "agent", "user", "agent")
    ]
    row = scored(5, "Oslo", 1.0)
    output = row["response"]["output"]
    output.insert(3, {"type": "message", "role": "user", "content": "The tool is slow today."})
    row["_palaestra"]["producers"] = ["policy", "policy", "tool", "environment", "policy"]
    trajectory, back = through_a_file(copy.deepcopy(row))
    results = trajectory["steps"][2]["observation"]["results"]
    assert results[1] == {"content": "The tool is slow today."}  # no source_call_id
    assert back == row


def test_items_in_an_order_the_steps_do_not_keep_come_back_in_their_order() -> None:
    row = scored(6, "Cairo", 1.0)
    output = row["response"]["output"]
    reasoning, call, result, answer = output
    row["response"]["output"] = [answer, reasoning, call, result, {"type": "web_search_call"}]
    row["_palaestra"].pop("producers", None)
    _, back = through_a_file(copy.deepcopy(row))
    assert back == row
    call["arguments"] = "not json"  # arguments a tool call cannot hold as an object
    row["response"]["output"] = [reasoning, call, result]
    trajectory, back = through_a_file(copy.deepcopy(row))
    assert trajectory["steps"][2]["tool_calls"][0]["arguments"] == {}
    assert back == row


def test_a_trajectory_another_program_wrote_reads_as_a_row() -> None:
    foreign: JsonDict = {
        "schema_version": "ATIF-v1.6",
        "session_id": "run-7",
        "agent": {"name": "terminus", "version": "2", "model_name": "m"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "List the files."},
            {
                "step_id": 2,
                "source": "agent",
                "message": "",
                "tool_calls": [
                    {"tool_call_id": "t1", "function_name": "bash", "arguments": {"cmd": "ls"}}
                ],
                "observation": {"results": [{"source_call_id": "t1", "content": "a b"}]},
                "metrics": {
                    "prompt_token_ids": [1, 2],
                    "completion_token_ids": [3],
                    "logprobs": [-1.0],
                },
            },
            {"step_id": 3, "source": "agent", "message": "a and b."},
        ],
        "final_metrics": {"total_prompt_tokens": 10, "total_completion_tokens": 4},
    }
    row = from_trajectory(foreign, task_index=7)
    assert row["responses_create_params"]["input"] == [
        {"role": "user", "content": "List the files."}
    ]
    call, result, answer = row["response"]["output"]
    assert (call["name"], call["arguments"], call["generation_token_ids"]) == (
        "bash",
        '{"cmd":"ls"}',
        [3],
    )
    assert (result["call_id"], result["output"]) == ("t1", "a b")
    assert answer["content"][0]["text"] == "a and b."
    assert row["_palaestra"]["producers"] == ["policy", "tool", "policy"]
    assert row["_ng_task_index"] == 7 and row["response"]["usage"]["total_tokens"] == 14
    assert "reward" not in row  # no reward recorded: a failure, never a silent 0
    assert row["failure"] == {"kind": "invalid_input", "reason": UNSCORED, "masked": True}
    foreign["extra"] = {"reward": 0.5}
    assert from_trajectory(foreign)["reward"] == 0.5
