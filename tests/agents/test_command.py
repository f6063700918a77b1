"""``--agent command``: a harness someone else wrote, run as a command line, its model calls
through the gateway, scored by the environment's own ``verify``."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from palaestra import Environment, LocalEnvironmentClient, Session, Verdict
from palaestra.agents import make_agent
from palaestra.agents.command import CommandAgent, call_shape, fill
from palaestra.errors import ConfigError
from palaestra.gateway import Call
from palaestra.types import FailureKind, JsonDict, message_text, output_text
from tests.support.fake_model import FakeModel, say

CALL = r"""
import json, sys, urllib.request

base, key, instruction = sys.argv[1:4]

def ask(messages):
    request = urllib.request.Request(
        base + "/chat/completions",
        data=json.dumps({"model": "any", "messages": messages}).encode(),
        headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.load(answer)["choices"][0]["message"]["content"]
"""

COMPACTS = (
    CALL
    + r"""
history = [{"role": "user", "content": instruction}]
history.append({"role": "assistant", "content": ask(history)})
history.append({"role": "user", "content": "Go on."})
history.append({"role": "assistant", "content": ask(history)})
# The history grew too long: the harness keeps a summary of it only (a new branch).
summary = "Summary: " + history[-1]["content"] + ". Now give the final answer."
print(ask([{"role": "user", "content": summary}]))
"""
)

CRASHES = (
    CALL
    + r"""
ask([{"role": "user", "content": instruction}])
print("Traceback (most recent call last):\nValueError: the harness broke", file=sys.stderr)
sys.exit(3)
"""
)

HANGS = (
    CALL
    + r"""
import subprocess, time
child = subprocess.Popen(["sleep", "600"])
open(sys.argv[4], "w").write(str(child.pid))
ask([{"role": "user", "content": instruction}])
print("waiting for ever", file=sys.stderr, flush=True)
time.sleep(600)
"""
)

SILENT = r"""
import sys
print("I know the answer without asking anyone", file=sys.stderr)
"""


class FinalAnswer(Environment):
    """Scores 1 when the trajectory's last answer is 42; keeps what ``verify`` was given."""

    def __init__(self) -> None:
        self.verified: list[JsonDict] = []

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        self.verified.append(response)
        answers = [item for item in response["output"] if item.get("role") == "assistant"]
        last = message_text(answers[-1]) if answers else ""
        return Verdict(reward=1.0 if last == "42" else 0.0)


def _model() -> FakeModel:
    def script(params: JsonDict) -> JsonDict:
        asked = message_text(params["input"][-1])
        return say("42" if asked.startswith("Summary") else f"working on it ({len(asked)})")

    return FakeModel(script)


TASK: JsonDict = {"responses_create_params": {"input": "What is six times seven?"}}


def _harness(tmp_path: Path, name: str, source: str) -> str:
    script = tmp_path / f"{name}.py"
    script.write_text(source)
    return f"{sys.executable} {script} {{base_url}} {{api_key}} {{instruction}}"


@pytest.fixture
async def env() -> AsyncIterator[tuple[FinalAnswer, LocalEnvironmentClient]]:
    environment = FinalAnswer()
    client = LocalEnvironmentClient(environment)
    try:
        yield environment, client
    finally:
        await client.aclose()


async def _run(agent: CommandAgent, client: LocalEnvironmentClient) -> tuple[Any, list[Any]]:
    """One rollout, and the gateway rollouts the agent opened for it."""
    model = _model()
    gateway = await agent.gateway(model)
    opened: list[Any] = []
    open_rollout = gateway.open

    def spy(rollout_id: str | None = None, *, scope: Any = None) -> Any:
        opened.append(open_rollout(rollout_id, scope=scope))
        return opened[-1]

    gateway.open = spy  # type: ignore[method-assign]
    try:
        return await agent.run(TASK, client, model), opened
    finally:
        await agent.aclose()


async def test_a_harness_that_compacts_its_history_is_scored_on_a_trajectory_of_two_branches(
    tmp_path: Path, env: tuple[FinalAnswer, LocalEnvironmentClient]
) -> None:
    environment, client = env
    agent = CommandAgent(cmd=_harness(tmp_path, "compacts", COMPACTS))
    result, opened = await _run(agent, client)
    assert result.failure is None, result.failure
    assert result.verdict.reward == 1.0
    assert result.model_calls == 3
    [rollout] = opened
    assert [call.parent for call in rollout.calls] == [None, 0, None]  # two branches
    assert (result.branches, result.retokenized) == (2, 0)  # what the row says
    [verified] = environment.verified
    assert verified["output"] == result.response["output"]
    assert output_text({"output": verified["output"][-1:]}) == "42"
    assert result.producers == [item["producer"] for item in result.response["output"]]


async def test_a_harness_that_exits_with_an_error_is_an_agent_error_with_its_stderr(
    tmp_path: Path, env: tuple[FinalAnswer, LocalEnvironmentClient]
) -> None:
    environment, client = env
    agent = CommandAgent(cmd=_harness(tmp_path, "crashes", CRASHES))
    result, _ = await _run(agent, client)
    assert result.verdict is None
    assert result.failure.kind is FailureKind.AGENT_ERROR
    assert "exited with status 3" in result.failure.reason
    assert result.failure.reason.endswith("ValueError: the harness broke")
    assert result.model_calls == 1  # the trajectory so far is kept
    assert environment.verified == []


async def test_a_harness_that_hangs_is_killed_with_everything_it_started(
    tmp_path: Path, env: tuple[FinalAnswer, LocalEnvironmentClient]
) -> None:
    _, client = env
    pid_file = tmp_path / "child.pid"
    cmd = f"{_harness(tmp_path, 'hangs', HANGS)} {pid_file}"
    agent = CommandAgent(cmd=cmd, timeout=3)
    started = time.monotonic()
    result, _ = await _run(agent, client)
    assert time.monotonic() - started < 20
    assert result.failure.kind is FailureKind.AGENT_ERROR
    assert "ran past its timeout (3 s)" in result.failure.reason
    assert result.failure.reason.endswith("waiting for ever")
    child = int(pid_file.read_text())
    assert not Path(f"/proc/{child}").exists()  # its child was killed too (and reaped)


async def test_a_harness_that_never_calls_the_model_is_an_agent_error(
    tmp_path: Path, env: tuple[FinalAnswer, LocalEnvironmentClient]
) -> None:
    environment, client = env
    agent = CommandAgent(cmd=_harness(tmp_path, "silent", SILENT))
    result, _ = await _run(agent, client)
    assert result.failure.kind is FailureKind.AGENT_ERROR
    assert "never called the model" in result.failure.reason
    assert "without asking anyone" in result.failure.reason
    assert environment.verified == []


async def test_the_harness_gets_its_workdir_and_the_placeholders_in_its_environment(
    tmp_path: Path, env: tuple[FinalAnswer, LocalEnvironmentClient]
) -> None:
    _, client = env
    seen = tmp_path / "seen"
    source = CALL + (
        "import os\n"
        f"open({str(seen)!r}, 'w').write('\\n'.join([os.getcwd(), sys.argv[4],"
        " os.environ['OPENAI_BASE_URL'], os.environ['PALAESTRA_INSTRUCTION']]))\n"
        "ask([{'role': 'user', 'content': instruction}])\n"
    )
    agent = CommandAgent(cmd=f"{_harness(tmp_path, 'looks', source)} {{workdir}}")
    result, opened = await _run(agent, client)
    assert result.failure is None, result.failure
    cwd, workdir, base_url, instruction = seen.read_text().split("\n")
    assert cwd == workdir
    assert not Path(workdir).exists()  # removed after the rollout
    assert base_url == opened[0].base_url
    assert instruction == "What is six times seven?"


def test_placeholders_are_filled_shell_quoted_and_unknown_braces_are_kept() -> None:
    filled = fill("run {instruction} --at {base_url} {other}", {
        "instruction": "it's $HOME; rm -rf /",
        "base_url": "http://127.0.0.1:1/r/x/v1",
    })  # fmt: skip
    assert filled == "run 'it'\"'\"'s $HOME; rm -rf /' --at http://127.0.0.1:1/r/x/v1 {other}"


async def test_box_exec_on_an_environment_without_a_box_is_refused_before_any_rollout(
    env: tuple[FinalAnswer, LocalEnvironmentClient],
) -> None:
    _, client = env
    agent = make_agent("command", cmd="{box_exec} ls")
    with pytest.raises(ConfigError, match="no box"):
        await agent.preflight(client, _model())  # type: ignore[attr-defined]


def test_the_command_agent_needs_a_command() -> None:
    with pytest.raises(ConfigError, match="cmd"):
        make_agent("command")


async def test_each_model_gets_a_gateway_of_its_own_and_aclose_closes_them_all() -> None:
    agent = CommandAgent(cmd="true")
    first, second = _model(), _model()
    one, again, other = (
        await agent.gateway(first),
        await agent.gateway(first),
        await agent.gateway(second),
    )
    assert one is again and one is not other  # a trainer's new model: a new gateway
    urls = [one.url, other.url]
    await agent.aclose()
    for url in urls:
        host, port = url.removeprefix("http://").split(":")
        with pytest.raises(OSError):
            _, writer = await asyncio.open_connection(host, int(port))
            writer.close()


def _answered(index: int, parent: int | None, prompt: list[int], sampled: list[int]) -> Call:
    return Call(
        index, "chat", False, parent, [], [], prompt, sampled, [0.0] * len(sampled),
        "stop", None, 0.0, 0.0, None,
    )  # fmt: skip


def test_a_call_whose_ids_do_not_extend_the_call_its_messages_continue_is_counted_apart() -> None:
    # Call 1 continues call 0 token for token; call 2's messages continue call 1, but its ids
    # came back re-tokenised (9 where the engine sampled 4): a branch of its own, counted.
    calls = [
        _answered(0, None, [1, 2], [3]),
        _answered(1, 0, [1, 2, 3, 7], [4]),
        _answered(2, 1, [1, 2, 3, 7, 9, 8], [5]),
    ]
    assert call_shape(calls) == (2, 1)
    calls[2] = _answered(2, 1, [1, 2, 3, 7, 4, 8], [5])
    assert call_shape(calls) == (1, 0)
    failed = Call(3, "chat", False, None, [], [], None, None, None, None, None, 0.0, 0.0, "502")
    assert call_shape([*calls, failed]) == (1, 0)  # a failed call answered nothing
