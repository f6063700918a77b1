"""``--env ors:URL``: an ORS server's environment run by palaestra's own collection loop.

Against ``palaestra serve ors`` and against a server made with the ``openreward`` SDK's own
``Server`` (its peer venv); the policy is a scripted model over real HTTP.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import palaestra
from palaestra.collection.collector import RunSummary
from palaestra.environment.finding.registry import find_environment
from palaestra.environment.kinds.ors import OrsEnvironment
from palaestra.environment.running.client import LocalEnvironmentClient
from palaestra.errors import ConfigError, ToolFailure
from palaestra.types import FailureKind, JsonDict
from tests.support.ors_servers import free_port, palaestra_ors, sdk_ors
from tests.support.scripted_model import (
    Script,
    ScriptedModelServer,
    text_response,
    tool_call_response,
)
from tests.support.unscorable_env import TASK

REPO = Path(__file__).resolve().parents[4]


def calls_then(name: str, arguments: str, answer: str) -> Script:
    """A policy that makes one call, then answers ``answer``."""

    def script(params: JsonDict) -> JsonDict:
        called = any(item.get("type") == "function_call_output" for item in params["input"])
        return text_response(answer) if called else tool_call_response(name, arguments)

    return script


async def run(
    env: str, script: Script, tmp_path: Path, **fields: Any
) -> tuple[RunSummary, list[JsonDict]]:
    """Collect with ``script`` as the policy; the summary and the rows written."""
    with ScriptedModelServer(script) as model:
        summary = await palaestra.collect_async(
            env=env, model=model.url, output=tmp_path / "out.jsonl", **fields
        )
    out = tmp_path / "out.jsonl"
    rows = [orjson.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return summary, rows


@pytest.fixture(scope="module")
def sdk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with sdk_ors(tmp_path_factory.mktemp("sdk")) as url:
        yield url


async def test_a_served_palaestra_environment_scores_through_ors_as_it_does_at_home(
    tmp_path: Path,
) -> None:
    with palaestra_ors("counter", cwd=tmp_path) as url:
        _, rows = await run(
            f"ors:{url}", calls_then("increment", '{"amount": 3}', "Done."), tmp_path, limit=1
        )
    (row,) = rows
    assert row["reward"] == 1.0 and row["finished"] is True and row["step_rewards"] == [1.0]
    calls = [i for i in row["response"]["output"] if i["type"] == "function_call_output"]
    assert [c["output"] for c in calls] == ["3"]  # the server's tool, run in its own session
    assert row["responses_create_params"]["input"][-1]["content"] == "Increment the counter by 3."


async def test_an_sdk_servers_tools_and_rewards_reach_the_verdict(
    sdk_server: str, tmp_path: Path
) -> None:
    found = find_environment(f"ors:{sdk_server}/adder?split=test")
    assert found.args == {"url": sdk_server, "environment": "adder", "split": "test"}
    assert found.example_tasks is not None
    tasks = [orjson.loads(line) for line in found.example_tasks.read_text().splitlines()]
    assert [t["ors"]["task_spec"] for t in tasks] == [{"a": 2, "b": 3}, {"a": 10, "b": -4}]
    assert tasks[0]["responses_create_params"]["input"] == [
        {"role": "user", "content": "What is 2 + 3? Use add, then answer."}
    ]
    _, rows = await run(
        f"ors:{sdk_server}/adder?split=test",
        calls_then("add", '{"a": 2, "b": 3}', "5"),
        tmp_path,
        limit=1,
    )
    (row,) = rows
    # add's reward, then the terminal tool's for the final message "5": both kept, summed
    assert row["step_rewards"] == [0.25, 1.0] and row["reward"] == 1.25
    assert row["finished"] is True
    names = [t["name"] for t in row["responses_create_params"].get("tools") or []]
    assert "answer" not in names  # the terminal tool is never offered to the model


async def test_a_wrong_call_goes_back_to_the_model_and_a_wrong_answer_scores_its_rewards(
    sdk_server: str, tmp_path: Path
) -> None:
    _, rows = await run(
        f"ors:{sdk_server}/adder?split=test",
        calls_then("add", '{"a": "two"}', "6"),
        tmp_path,
        limit=1,
    )
    (row,) = rows
    (output,) = [i for i in row["response"]["output"] if i["type"] == "function_call_output"]
    assert "invalid arguments for tool 'add'" in output["output"]  # checked before the call
    assert row["step_rewards"] == [0.0] and row["reward"] == 0.0


async def test_a_tool_the_server_breaks_fails_the_rollout_never_a_zero(
    sdk_server: str, tmp_path: Path
) -> None:
    summary, rows = await run(
        f"ors:{sdk_server}/adder?split=train", calls_then("broken", "{}", "3"), tmp_path
    )
    assert rows == [] and summary.failures == Counter({"tool_error": 1})
    (failure,) = [
        orjson.loads(line) for line in (tmp_path / "out_failures.jsonl").read_text().splitlines()
    ]
    assert "tool 'broken'" in failure["failure"]["reason"]
    assert "the tool broke" in failure["failure"]["reason"]


async def test_a_failed_verdict_of_the_server_is_a_failure_of_its_kind(tmp_path: Path) -> None:
    (tmp_path / "tasks.jsonl").write_text(orjson.dumps(TASK).decode() + "\n")
    env = str(REPO / "tests" / "support" / "unscorable_env.py")
    with palaestra_ors(env, "--tasks", "tasks.jsonl", cwd=tmp_path) as url:
        summary, rows = await run(
            f"ors:{url}", calls_then("note", '{"text": "x"}', "done"), tmp_path
        )
    assert rows == [] and summary.failures == Counter({"verifier_error": 1})


async def test_a_server_gone_in_the_middle_of_a_rollout_fails_it_never_scores_it_0(
    tmp_path: Path,
) -> None:
    with palaestra_ors("counter", cwd=tmp_path) as url:
        found = find_environment(f"ors:{url}")
        assert found.example_tasks is not None
        task = orjson.loads(found.example_tasks.read_text().splitlines()[0])
        environment = OrsEnvironment(str(found.args["url"]), str(found.args["environment"]))
        client = LocalEnvironmentClient(environment)
        sid = await client.seed(task)
        assert await client.call_tool(sid, "increment", {"amount": 3}) == "3"
    try:  # the server stopped
        with pytest.raises(ToolFailure, match=r"tool 'increment': the ORS server at .* did not"):
            await client.call_tool(sid, "increment", {"amount": 3})
        verdict = await client.verify(sid, task, {"output": []})
        assert verdict.failure is not None
        assert verdict.failure.kind == FailureKind.VERIFIER_ERROR
        assert "the terminal tool 'submit_answer'" in verdict.failure.reason
        await client.close(sid)  # closing a session on a server that is gone is quiet
    finally:
        await client.aclose()


def test_a_server_that_cannot_be_reached_is_one_line_naming_it() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ConfigError, match=r"^ors: the server at http://127\.0\.0\.1:\d+ cannot"):
        find_environment(f"ors:{url}")


def test_an_unknown_split_is_refused_naming_those_there_are(sdk_server: str) -> None:
    with pytest.raises(ConfigError, match=r"has no split 'dev' \(it has: train, test\)"):
        find_environment(f"ors:{sdk_server}/adder?split=dev")
