from __future__ import annotations

import asyncio

import pytest

from palaestra import Environment, LocalEnvironmentClient, Session, ToolError, Verdict, tool
from palaestra.errors import EnvironmentFailure, ToolCallRejected, ToolFailure, VerifierFailure
from palaestra.types import FailureKind


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
