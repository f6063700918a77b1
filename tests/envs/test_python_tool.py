"""python_tool: a stateful sandboxed Python tool per rollout, and math's boxed-answer check."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, ClassVar

import orjson
import pytest

from palaestra import LocalEnvironmentClient, ToolCallingAgent
from palaestra.collection.tasks import read_tasks, task_problem
from palaestra.environment.finding.registry import find_environment
from palaestra.envs._shared.boxed_math import symbolic_check
from palaestra.envs.python_tool.environment import PythonTool, cell_text, shorten
from palaestra.errors import ToolFailure
from palaestra.sandbox import CellResult, Limit, Limits, isolation
from palaestra.sandbox.workdir import PREFIX
from palaestra.types import AgentResult, FailureKind, JsonDict
from tests.sandbox.conftest import RecordedUidPool, leftovers, new_leftovers
from tests.support.fake_model import FakeModel, call, outputs_so_far, response, say


@pytest.fixture(autouse=True)
def _no_leaks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(isolation, "UidPool", RecordedUidPool)
    before = set(leftovers())
    yield
    assert new_leftovers(before) == [], "the test left processes behind"
    assert list(Path(tempfile.gettempdir()).glob(f"{PREFIX}{os.getpid()}-*")) == []


class QuickTool(PythonTool):
    """Short cells so that limits are reached quickly."""

    limits: ClassVar[Limits] = PythonTool.limits.replace(wall_time=1.0)
    pool_workers = 1


@pytest.fixture
async def env() -> AsyncIterator[LocalEnvironmentClient]:
    client = LocalEnvironmentClient(QuickTool())
    yield client
    await client.aclose()


def examples() -> list[JsonDict]:
    entry = find_environment("python_tool")
    assert entry.example_tasks is not None
    return [line.row for line in read_tasks(entry.example_tasks)]


def coding(*cells: str, answer: str) -> FakeModel:
    """Runs each cell with execute_python, one per turn, then answers ``answer``."""

    def script(params: JsonDict) -> JsonDict:
        done = len(outputs_so_far(params))
        if done < len(cells):
            arguments = orjson.dumps({"code": cells[done]}).decode()
            return response(call("execute_python", arguments, f"c{done}"))
        return say(answer)

    return FakeModel(script)


async def rollout(
    env: LocalEnvironmentClient, *cells: str, answer: str = "\\boxed{115}"
) -> tuple[AgentResult, list[str]]:
    """The result and what the tool answered to each cell."""
    model = coding(*cells, answer=answer)
    result = await ToolCallingAgent(max_steps=len(cells) + 1).run(examples()[3], env, model)
    assert len(env.sessions) == 0  # closed, and so its Python session with it
    return result, [item["output"] for item in outputs_so_far(model.requests[-1])]


def test_the_tool_is_offered_with_its_code_parameter() -> None:
    [schema] = PythonTool().tools()
    assert schema["name"] == "execute_python" and schema["parameters"]["required"] == ["code"]
    assert "persistent session" in schema["description"]


async def test_state_persists_across_calls_and_the_boxed_answer_is_scored(
    env: LocalEnvironmentClient,
) -> None:
    result, outputs = await rollout(env, "x = 2**100\nprint('set')", "sum(map(int, str(x)))")
    assert outputs == ["set", "115"]
    assert result.failure is None and result.verdict is not None
    assert result.verdict.reward == 1.0
    metrics = result.verdict.metrics
    assert (metrics["tool_calls"], metrics["tool_errors"], metrics["limit_hit"]) == (2, 0, "")
    assert metrics["extracted_answer"] == "115" and metrics["symbolic_match"] is True


@pytest.mark.parametrize(
    ("answer", "found", "reward"),
    [("\\boxed{116}", True, 0.0), ("It is 115.", False, 0.0), ("\\boxed{115.0}", True, 1.0)],
)
async def test_wrong_and_unboxed_answers_score_zero(
    env: LocalEnvironmentClient, answer: str, found: bool, reward: float
) -> None:
    result, _ = await rollout(env, "2**100", answer=answer)
    assert result.verdict is not None and result.verdict.failure is None
    assert (result.verdict.reward, result.verdict.metrics["answer_found"]) == (reward, found)


async def test_errors_and_limits_are_told_to_the_model_and_the_session_goes_on(
    env: LocalEnvironmentClient,
) -> None:
    result, outputs = await rollout(
        env,
        "x = 7\n1 / 0",
        "while True:\n    pass",
        "block = bytearray(8 * 1024**3)",
        "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)",
        "open('/usr/lib/palaestra-owned', 'w')",
        "import os\nwhile True:\n    os.fork()" if os.geteuid() == 0 else "pass",
        "print('x' * 200_000)",
        "x * 6",
    )
    assert "ZeroDivisionError: division by zero" in outputs[0]
    assert outputs[1].endswith("[limit hit: wall_time]")
    assert "MemoryError" in outputs[2] and outputs[2].endswith("[limit hit: memory]")
    assert "Network is unreachable" in outputs[3] and outputs[3].endswith("[limit hit: network]")
    assert "Read-only file system" in outputs[4] and not Path("/usr/lib/palaestra-owned").exists()
    if os.geteuid() == 0:
        assert outputs[5].endswith("[limit hit: processes]")
    assert "characters cut" in outputs[6] and len(outputs[6]) < 4200
    assert outputs[7] == "42"  # the same session throughout
    assert result.verdict is not None and result.verdict.reward == 1.0
    metrics = result.verdict.metrics
    assert metrics["tool_calls"] == 8 and metrics["tool_errors"] >= 5
    assert metrics["limit_hit"].startswith("wall_time,memory,network,filesystem")
    assert metrics["python_restarts"] == 0


async def test_a_session_that_dies_or_expires_is_replaced_and_the_model_is_told(
    env: LocalEnvironmentClient,
) -> None:
    _, outputs = await rollout(env, "x = 1", "import os\nos._exit(3)", "x")
    assert "exit status 3" in outputs[1] and "its variables are gone" in outputs[1]
    assert "NameError" in outputs[2]  # a new session: x is gone

    class Forgetful(QuickTool):
        idle_ttl = 0.3

    client = LocalEnvironmentClient(Forgetful())
    try:
        session = await client.seed(examples()[3])
        await client.call_tool(session, "execute_python", {"code": "y = 1"})
        await asyncio.sleep(1.5)  # the session expires by itself
        again = await client.call_tool(session, "execute_python", {"code": "'y' in globals()"})
        assert again.startswith("[the earlier Python session had ended") and "False" in again
        await client.close(session)
    finally:
        await client.aclose()


async def test_no_session_starts_without_a_call_and_close_kills_it(
    env: LocalEnvironmentClient,
) -> None:
    before = set(leftovers())
    session = await env.seed(examples()[0])
    assert set(leftovers()) == before  # lazily started: a rollout without calls costs nothing
    assert await env.call_tool(session, "execute_python", {"code": "import os\nos.getpid()"})
    assert set(leftovers()) != before
    await env.close(session)
    assert new_leftovers(before) == []


async def test_a_call_cut_off_by_the_tool_timeout_kills_its_session() -> None:
    class Impatient(QuickTool):
        tool_timeout = 0.5
        limits: ClassVar[Limits] = PythonTool.limits.replace(wall_time=5.0)

    client = LocalEnvironmentClient(Impatient())
    try:
        session = await client.seed(examples()[0])
        with pytest.raises(ToolFailure, match="timed out"):
            await client.call_tool(
                session, "execute_python", {"code": "import time\ntime.sleep(3)"}
            )
        assert client.sessions.get(session).state.python is None
        assert await client.call_tool(session, "execute_python", {"code": "1 + 1"}) == "2"
        await client.close(session)
    finally:
        await client.aclose()


async def test_without_bubblewrap_a_call_is_a_tool_error_failure_never_a_zero(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = isolation.tools()
    monkeypatch.setattr(isolation, "tools", lambda: {**found, "bwrap": None})
    client = LocalEnvironmentClient(QuickTool())
    try:
        result, _ = await rollout(client, "1 + 1")
    finally:
        await client.aclose()
    assert result.verdict is None and result.failure is not None
    assert result.failure.kind == FailureKind.TOOL_ERROR
    assert (
        "cannot start" in result.failure.reason
        and "bwrap is not installed" in result.failure.reason
    )


def test_tool_output_shows_output_value_error_and_limit_and_is_bounded() -> None:
    assert cell_text(CellResult("hi\n", "", value="3"), 100) == "hi\n3"
    assert cell_text(CellResult("", "", value=None), 100) == "(no output)"
    failed = cell_text(CellResult("", "warn\n", error="Traceback\nKeyError: 1\n"), 100)
    assert failed == "[stderr]\nwarn\n[error]\nTraceback\nKeyError: 1"
    stopped = cell_text(CellResult("", "", error="TimeoutError", limit=Limit.WALL_TIME), 100)
    assert stopped.endswith("[limit hit: wall_time]")
    cut = shorten("a" * 5000 + "TAIL", 300)
    assert cut.startswith("a" * 200) and cut.endswith("TAIL") and "characters cut" in cut
    assert len(cut) < 360


async def test_examples_and_generated_tasks_accept_their_answers(
    env: LocalEnvironmentClient,
) -> None:
    rows = examples()
    assert len(rows) == 5
    generated = list(PythonTool().generate_tasks(30, seed=2))
    assert generated == list(PythonTool().generate_tasks(30, seed=2))
    assert "count_primes" in {r["source_dataset"] for r in generated}
    for row in [*rows, *generated[:5]]:
        assert task_problem(row) is None
        assert "execute_python" in row["responses_create_params"]["input"][0]["content"]
        assert symbolic_check(row["expected_answer"], row["expected_answer"])["equal"]
    for row in rows:
        model = FakeModel(lambda _, row=row: say(f"\\boxed{{{row['expected_answer']}}}"))
        result: Any = await ToolCallingAgent().run(row, env, model)
        assert result.verdict.reward == 1.0 and result.verdict.metrics["tool_calls"] == 0
