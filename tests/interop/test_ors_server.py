"""``palaestra serve ors`` driven by the Open Reward Standard's own client (``openreward``).

The server is the real command in a subprocess (palaestra's venv); the client is the SDK's
``EnvironmentsAPI`` in its peer venv (``peer_scripts/ors_client.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.interop.peer_run import run_peer
from tests.support.ors_servers import palaestra_ors
from tests.support.unscorable_env import TASK

REPO = Path(__file__).resolve().parents[2]
COUNTER_TASKS = REPO / "palaestra" / "envs" / "counter" / "tasks.jsonl"


def sdk(url: str, env: str, tmp_path: Path, **spec: Any) -> Any:
    """What the SDK's client saw of one session (``peer_scripts/ors_client.py``)."""
    asked = {"url": url, "env": env, "split": "test", "index": 0, "calls": [], "final": None}
    return run_peer("openreward", "ors_client.py", {**asked, **spec}, cwd=tmp_path)


@pytest.fixture(scope="module")
def counter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with palaestra_ors("counter", cwd=tmp_path_factory.mktemp("counter")) as url:
        yield url


def test_the_sdk_lists_a_served_environments_split_tasks_and_tools(
    counter: str, tmp_path: Path
) -> None:
    seen = sdk(counter, "counter", tmp_path)
    rows = [orjson.loads(line) for line in COUNTER_TASKS.read_text().splitlines()]
    assert seen["splits"] == ["test"] and seen["num_tasks"] == len(rows)
    assert seen["tasks"] == rows and seen["task"] == rows[0] and seen["range"] == rows[:2]
    assert seen["tools"] == seen["session_tools"] == ["increment", "read_counter"]
    (increment, _) = seen["openai_tools"]
    assert increment["parameters"]["properties"]["amount"]["type"] == "integer"
    # the final answer goes through the terminal tool, which the model never sees as a tool
    assert seen["terminal"] == {"name": "submit_answer", "arg": "answer"}
    system, user = rows[0]["responses_create_params"]["input"]
    assert seen["messages"] == [
        {"role": "system", "text": [system["content"]]},
        {"role": "user", "text": [user["content"]]},
    ]
    assert seen["prompt"] == ["[system]", system["content"], "[user]", user["content"]]


def test_the_sdk_runs_an_episode_to_the_environments_own_reward(
    counter: str, tmp_path: Path
) -> None:
    calls = [["increment", {"amount": 2}], ["read_counter", {}]]
    right = sdk(counter, "counter", tmp_path, calls=[*calls, ["increment", {}]], final="Done.")
    assert [c["text"] for c in right["calls"]] == ["2", "2", "3"]
    assert all(c["reward"] is None and not c["finished"] for c in right["calls"])
    assert right["final"]["reward"] == 1.0 and right["final"]["finished"] is True
    assert right["final"]["metadata"]["verdict"] == {"reward": 1.0, "final_value": 3, "distance": 0}
    wrong = sdk(counter, "counter", tmp_path, calls=calls, final="Done.")
    assert wrong["final"]["reward"] == 0.0
    assert wrong["final"]["metadata"]["verdict"]["final_value"] == 2


def test_a_wrong_tool_call_is_refused_with_its_reason_and_the_episode_goes_on(
    counter: str, tmp_path: Path
) -> None:
    calls = [["increment", {"amount": "three"}], ["decrement", {}], ["increment", {"amount": 3}]]
    seen = sdk(counter, "counter", tmp_path, calls=calls, final="Done.")
    refused, unknown, fine = seen["calls"]
    assert refused["error"] == "ToolCallError" and refused["reason"] == "input_validation"
    assert "amount" in refused["text"]
    assert unknown["reason"] == "not_found" and "decrement" in unknown["text"]
    assert fine["text"] == "3" and seen["final"]["reward"] == 1.0


def test_a_turn_based_environment_answers_each_step_with_its_reward(tmp_path: Path) -> None:
    calls = [["act", {"action": "20"}], ["act", {"action": "10"}], ["act", {"action": "10"}]]
    with palaestra_ors("number_guess", cwd=tmp_path) as url:
        seen = sdk(url, "number_guess", tmp_path, calls=calls)  # task 0: a number from 1 to 50
    assert seen["tools"] == ["act"] and seen["terminal"] is None
    assert seen["messages"][-1] == {
        "role": "user",
        "text": ["I am thinking of a number from 1 to 50. Your guess?"],
    }
    wrong, right, after = seen["calls"]
    assert (wrong["reward"], wrong["finished"]) == (0.0, False)
    assert "lower" in wrong["text"]
    assert (right["reward"], right["finished"]) == (1.0, True)
    assert right["metadata"]["verdict"]["step_rewards"] == [0.0, 1.0]
    assert after["reason"] == "episode_finished"


def test_bad_requests_are_refused_in_the_protocols_error_shape(
    counter: str, tmp_path: Path
) -> None:
    seen = sdk(counter, "counter", tmp_path, refusals=True)["refusals"]
    assert seen["unknown_split"] == {
        "status": 400,
        "message": "Invalid split 'no-such-split': this server has splits test",
    }
    assert seen["index_out_of_range"]["status"] == 400
    assert "split 'test' has 5 tasks (0 to 4)" in seen["index_out_of_range"]["message"]
    assert seen["unknown_environment"]["status"] == 404


def test_a_verdict_that_is_a_failure_ends_the_episode_with_an_error_naming_its_kind(
    tmp_path: Path,
) -> None:
    (tmp_path / "tasks.jsonl").write_text(orjson.dumps(TASK).decode() + "\n")
    env = str(REPO / "tests" / "support" / "unscorable_env.py")
    with palaestra_ors(env, "--tasks", "tasks.jsonl", cwd=tmp_path) as url:
        seen = sdk(url, "unscorable", tmp_path, calls=[["note", {"text": "x"}]], final="done")
    assert seen["calls"][0]["text"] == "noted"
    assert seen["final"]["error"] == "ToolFailed"  # never a reward
    assert "rollout failed (verifier_error): the answer key is missing" in seen["final"]["text"]


def test_a_server_with_a_token_serves_the_sdk_that_sends_it_as_its_api_key(
    tmp_path: Path,
) -> None:
    with palaestra_ors("counter", cwd=tmp_path, token="s3cret") as url:
        seen = sdk(url, "counter", tmp_path, api_key="s3cret", final="Done.")
        assert seen["num_tasks"] == 5 and seen["final"]["finished"] is True
        with pytest.raises(AssertionError, match="401"):  # the SDK without the key is refused
            sdk(url, "counter", tmp_path)
