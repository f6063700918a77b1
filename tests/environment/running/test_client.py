from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from palaestra import Environment, LocalEnvironmentClient, Session, ToolError, Verdict, tool
from palaestra.agents import ToolCallingAgent
from palaestra.environment.step import StepEnvironment
from palaestra.errors import (
    EnvironmentFailure,
    EnvironmentTimeout,
    RolloutFailure,
    ToolCallRejected,
    ToolFailure,
    VerifierFailure,
    VerifierTimeout,
)
from palaestra.types import FailureKind, JsonDict, StepResult
from tests.support.fake_model import FakeModel, call, outputs_so_far, response, say


class Lab(Environment):
    """A lab."""

    tool_timeout = 0.2
    verify_timeout = 0.2

    def __init__(self) -> None:
        self.closed: list[str] = []

    def seed(self, task: dict[str, object]) -> dict[str, int]:
        if task.get("explode"):
            raise RuntimeError("seed broke")
        return {"n": 0}

    @tool
    def add(self, session: Session, amount: int) -> int:
        """Add."""
        session.state["n"] += amount
        return int(session.state["n"])

    @tool
    def refuse(self) -> str:
        """Refuse."""
        raise ToolError("not like that")

    @tool
    def crash(self) -> str:
        """Crash."""
        raise ZeroDivisionError("boom")

    @tool
    async def hang(self) -> str:
        """Hang."""
        await asyncio.sleep(5)
        return "never"

    @tool(blocking=True)
    def slow_sync(self) -> list[int]:
        """Blocking work in a thread."""
        return [1, 2]

    async def verify(self, session: Session, response: dict[str, object]) -> Verdict | float:
        if response.get("mode") == "hang":
            await asyncio.sleep(5)
        if response.get("mode") == "crash":
            raise KeyError("missing")
        if response.get("mode") == "junk":
            return "yes"  # type: ignore[return-value]
        return float(session.state["n"])

    def close(self, session: Session) -> None:
        self.closed.append(session.id)


async def test_tools_share_state_within_a_session_only() -> None:
    client = LocalEnvironmentClient(Lab())
    one = await client.seed({})
    two = await client.seed({})
    assert await client.call_tool(one, "add", {"amount": 2}) == "2"
    assert await client.call_tool(one, "add", {"amount": 3}) == "5"
    assert await client.call_tool(two, "add", {"amount": 1}) == "1"
    assert (await client.verify(one, {}, {})).reward == 5.0
    await client.close(one)
    assert client.environment.closed == [one]  # type: ignore[attr-defined]


async def test_model_mistakes_are_rejected_with_a_message_for_the_model() -> None:
    client = LocalEnvironmentClient(Lab())
    session = await client.seed({})
    with pytest.raises(ToolCallRejected, match=r"unknown tool 'nope'.*add"):
        await client.call_tool(session, "nope", {})
    with pytest.raises(ToolCallRejected, match="field 'amount'"):
        await client.call_tool(session, "add", {"amount": "lots"})
    with pytest.raises(ToolCallRejected, match="not like that"):
        await client.call_tool(session, "refuse", {})


async def test_tool_bugs_and_timeouts_fail_the_rollout() -> None:
    client = LocalEnvironmentClient(Lab())
    session = await client.seed({})
    with pytest.raises(ToolFailure, match="ZeroDivisionError: boom") as crashed:
        await client.call_tool(session, "crash", {})
    assert crashed.value.kind is FailureKind.TOOL_ERROR
    with pytest.raises(ToolFailure, match="timed out"):
        await client.call_tool(session, "hang", {})
    assert await client.call_tool(session, "slow_sync", {}) == "[1,2]"


async def test_verify_and_seed_failures_name_their_layer() -> None:
    client = LocalEnvironmentClient(Lab())
    with pytest.raises(EnvironmentFailure, match="seed broke"):
        await client.seed({"explode": True})
    session = await client.seed({})
    with pytest.raises(VerifierFailure, match="KeyError"):
        await client.verify(session, {}, {"mode": "crash"})
    with pytest.raises(VerifierFailure, match="timed out"):
        await client.verify(session, {}, {"mode": "hang"})
    junk = await client.verify(session, {}, {"mode": "junk"})
    assert junk.failure is not None and junk.failure.kind is FailureKind.VERIFIER_ERROR


async def test_aclose_closes_every_open_session_then_the_environment() -> None:
    class Owning(Lab):
        async def aclose(self) -> None:
            self.closed.append("environment")

    lab = Owning()
    client = LocalEnvironmentClient(lab)
    ids = [await client.seed({}) for _ in range(3)]
    await client.aclose()
    assert sorted(lab.closed[:3]) == sorted(ids)
    assert lab.closed[3] == "environment"


# --- sync environment code runs off the event loop, within its time limits ---------------------


class Sleepy(Environment):
    """Sync tools that sleep, as the README's examples would."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []

    @tool
    def nap(self) -> str:
        """Nap a while."""
        started = time.monotonic()
        time.sleep(0.3)
        self.spans.append((started, time.monotonic()))
        return "rested"

    def verify(self, session: Session, response: JsonDict) -> float:
        return 1.0


def _call_once(params: JsonDict) -> JsonDict:
    """The model calls the tool its prompt names, once, then answers."""
    if outputs_so_far(params):
        return say("done")
    return response(call(str(params["input"][0]["content"]), "{}"))


async def test_sleeping_sync_tools_of_five_concurrent_rollouts_overlap() -> None:
    env = Sleepy()
    client = LocalEnvironmentClient(env)
    task: JsonDict = {"responses_create_params": {"input": "nap"}}
    results = await asyncio.gather(
        *(ToolCallingAgent().run(task, client, FakeModel(_call_once)) for _ in range(5))
    )
    assert all(r.verdict is not None and r.verdict.reward == 1.0 for r in results)
    starts, ends = zip(*env.spans, strict=True)
    assert len(starts) == 5
    assert max(starts) < min(ends)  # every nap began before the first one ended


class Stuck(Environment):
    """A sync tool that hangs until the test lets it go."""

    tool_timeout = 0.3

    def __init__(self) -> None:
        self.release = threading.Event()

    @tool
    def wait_forever(self) -> str:
        """Never answers in time."""
        self.release.wait(10)  # bounded only so that code which blocks the loop ends the test
        return "late"

    @tool
    def quick(self) -> str:
        """Answers at once."""
        return "ok"

    def verify(self, session: Session, response: JsonDict) -> float:
        return 1.0


async def test_a_hanging_sync_tool_fails_its_rollout_as_timeout_while_another_completes() -> None:
    env = Stuck()
    client = LocalEnvironmentClient(env)
    try:
        hung, done = await asyncio.gather(
            ToolCallingAgent().run(
                {"responses_create_params": {"input": "wait_forever"}},
                client,
                FakeModel(_call_once),
            ),
            ToolCallingAgent().run(
                {"responses_create_params": {"input": "quick"}}, client, FakeModel(_call_once)
            ),
        )
        assert done.failure is None and done.verdict is not None and done.verdict.reward == 1.0
        assert hung.failure is not None and hung.failure.kind is FailureKind.TIMEOUT
        assert "tool 'wait_forever' timed out after 0.3s" in hung.failure.reason
        assert "in wait_forever)" in hung.failure.reason  # where its thread was stuck
        assert client.stuck_threads == 1
    finally:
        env.release.set()


class Hangs(StepEnvironment):
    """Every sync entry point hangs when the task names it."""

    tool_timeout = verify_timeout = seed_timeout = close_timeout = 0.2

    def __init__(self) -> None:
        self.release = threading.Event()

    def _maybe_hang(self, task: JsonDict, phase: str) -> None:
        if task.get("hang") == phase:
            self.release.wait(3)  # bounded only so that code which blocks the loop ends the test

    def seed(self, task: JsonDict) -> JsonDict:
        self._maybe_hang(task, "seed")
        return {}

    def reset(self, session: Session) -> str:
        self._maybe_hang(session.task, "reset")
        return "go"

    def step(self, session: Session, action: str) -> StepResult:
        self._maybe_hang(session.task, "step")
        return StepResult("next", reward=1.0)

    def verify(self, session: Session, response: JsonDict) -> float:
        self._maybe_hang(session.task, "verify")
        return 1.0

    def close(self, session: Session) -> None:
        self._maybe_hang(session.task, "close")


@pytest.mark.parametrize(
    ("phase", "failure"),
    [
        ("seed", EnvironmentTimeout),
        ("reset", EnvironmentTimeout),
        ("step", EnvironmentTimeout),
        ("verify", VerifierTimeout),
        ("close", EnvironmentTimeout),
    ],
)
async def test_hanging_sync_seed_reset_step_verify_and_close_time_out(
    phase: str, failure: type[RolloutFailure]
) -> None:
    env = Hangs()
    client = LocalEnvironmentClient(env)
    task: JsonDict = {"hang": phase}
    try:
        with pytest.raises(failure, match=f"{phase} timed out after 0.2s") as caught:
            session = await client.seed(task)
            await client.reset(session)
            await client.step(session, "go")
            await client.verify(session, task, {})
            await client.close(session)
        assert caught.value.kind is FailureKind.TIMEOUT
    finally:
        env.release.set()


# --- an exception in environment code names its file and line --------------------------------


def _broken() -> object:
    return json.loads("{")  # the line every failure below must name


BROKEN_AT = f"(at {__file__}:{_broken.__code__.co_firstlineno + 1} in _broken)"


class Buggy(StepEnvironment):
    """Every entry point breaks when the task names it (through a helper and the stdlib)."""

    def _maybe_break(self, task: JsonDict, phase: str) -> None:
        if task.get("bug") == phase:
            _broken()

    def seed(self, task: JsonDict) -> JsonDict:
        self._maybe_break(task, "seed")
        return {}

    @tool
    def probe(self, session: Session) -> str:
        """Probe."""
        self._maybe_break(session.task, "tool")
        return "fine"

    async def reset(self, session: Session) -> str:  # type: ignore[override]
        self._maybe_break(session.task, "reset")
        return "go"

    def step(self, session: Session, action: str) -> StepResult:
        self._maybe_break(session.task, "step")
        return StepResult("next")

    def verify(self, session: Session, response: JsonDict) -> float:
        self._maybe_break(session.task, "verify")
        return 1.0

    async def close(self, session: Session) -> None:  # type: ignore[override]
        self._maybe_break(session.task, "close")


@pytest.mark.parametrize(
    ("phase", "failure"),
    [
        ("seed", EnvironmentFailure),
        ("tool", ToolFailure),
        ("reset", EnvironmentFailure),
        ("step", EnvironmentFailure),
        ("verify", VerifierFailure),
        ("close", EnvironmentFailure),
    ],
)
async def test_an_exception_in_environment_code_names_its_file_line_and_function(
    phase: str, failure: type[RolloutFailure]
) -> None:
    client = LocalEnvironmentClient(Buggy())
    task: JsonDict = {"bug": phase}
    with pytest.raises(failure) as caught:
        session = await client.seed(task)
        await client.call_tool(session, "probe", {})
        await client.reset(session)
        await client.step(session, "go")
        await client.verify(session, task, {})
        await client.close(session)
    assert type(caught.value) is failure
    assert "JSONDecodeError" in caught.value.reason
    assert caught.value.reason.endswith(BROKEN_AT)
    assert isinstance(caught.value.__cause__, json.JSONDecodeError)  # a server logs its traceback


class Camera(Environment):
    """Shows a picture."""

    @tool
    def look(self) -> list[JsonDict]:
        """Look."""
        return [
            {"type": "input_text", "text": "the page"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0K"},
        ]

    @tool
    def rows(self) -> list[JsonDict]:
        """Rows that are not content parts."""
        return [{"type": "row", "n": 1}]

    def verify(self, session: Session, response: dict[str, object]) -> float:
        return 1.0


async def test_a_tool_that_returns_content_parts_puts_its_image_in_the_trajectory() -> None:
    client = LocalEnvironmentClient(Camera())
    session = await client.seed({})
    output = await client.call_tool(session, "look", {})
    assert isinstance(output, list) and output[1]["type"] == "input_image"
    assert await client.call_tool(session, "rows", {}) == '[{"type":"row","n":1}]'
    model = FakeModel(
        lambda params: say("done") if outputs_so_far(params) else response(call("look", "{}"))
    )
    result = await ToolCallingAgent().run(
        {"responses_create_params": {"input": "go"}}, client, model
    )
    assert result.response is not None
    (shown,) = [
        item for item in result.response["output"] if item["type"] == "function_call_output"
    ]
    assert shown["output"][1]["image_url"].startswith("data:image/png;base64,")
    second = model.requests[1]["input"]
    assert any(isinstance(i, dict) and isinstance(i.get("output"), list) for i in second)
