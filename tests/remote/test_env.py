"""The remote environment client against real env servers that restart, vanish or fill up."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from palaestra import ToolCallingAgent
from palaestra.environment.sessions import Session
from palaestra.environment.tools import tool
from palaestra.envs.counter.environment import Counter
from palaestra.errors import (
    EnvironmentFailure,
    EnvironmentUnreachable,
    ModelError,
    SessionLost,
    ToolCallRejected,
    ToolFailure,
)
from palaestra.http.runner import BackgroundServer
from palaestra.models.openai.retry import RetryPolicy
from palaestra.remote.env import RemoteEnvironmentClient, verdict_from_answer
from palaestra.serve.env_app import environment_app
from palaestra.transport import HttpAnswer, HttpClient, unix_url
from palaestra.types import FailureKind, JsonDict
from tests.support.fake_model import FakeModel, call, outputs_so_far, response, say
from tests.support.network import free_port

TASK: JsonDict = {"responses_create_params": {"input": "count to 3"}, "target_value": 3}
FAST = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.05)
PATIENT = RetryPolicy(max_retries=6, base_delay=0.2, max_delay=1.0)
"""At least 1.7 s of waits in all (jitter halves them at worst): a 0.3 s outage fits easily."""


class RestartableServer:
    """A counter server on a fixed port that can be stopped and started again (a restart)."""

    def __init__(self, max_sessions: int | None = None) -> None:
        self.port = free_port()
        self.max_sessions = max_sessions
        self.app = environment_app(Counter())
        self.server: BackgroundServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> BackgroundServer:
        self.app = environment_app(Counter(), max_sessions=self.max_sessions)
        self.server = BackgroundServer(self.app, port=self.port)
        return self.server.start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def served() -> Iterator[RestartableServer]:
    server = RestartableServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def test_a_server_restart_mid_rollout_is_a_session_lost_failure_never_a_score(
    served: RestartableServer,
) -> None:
    def script(params: JsonDict) -> JsonDict:
        if outputs_so_far(params):
            return say("done")
        return response(call("increment", '{"amount": 3}', "c0"))

    class RestartingModel(FakeModel):
        async def respond(self, params: JsonDict) -> JsonDict:
            if outputs_so_far(params):  # the tool counted to 3; the server forgets every session
                await asyncio.to_thread(served.restart)
            return await super().respond(params)

    remote = await RemoteEnvironmentClient.connect(served.url)
    try:
        result = await ToolCallingAgent().run(TASK, remote, RestartingModel(script))
    finally:
        await remote.aclose()
    assert result.verdict is None  # before: a fresh session verified, reward 0.0, no failure
    assert result.failure is not None and result.failure.kind is FailureKind.SESSION_LOST
    assert "/verify" in result.failure.reason and "lost" in result.failure.reason


async def test_every_session_route_after_a_restart_raises_session_lost(
    served: RestartableServer,
) -> None:
    remote = await RemoteEnvironmentClient.connect(served.url)
    try:
        session = await remote.seed(TASK)
        assert await remote.call_tool(session, "increment", {"amount": 3}) == "3"
        await asyncio.to_thread(served.restart)
        with pytest.raises(SessionLost):  # before: "unknown tool 'increment'"
            await remote.call_tool(session, "increment", {"amount": 1})
        with pytest.raises(SessionLost):
            await remote.verify(session, TASK, {"output": []})
        with pytest.raises(SessionLost):
            await remote.close(session)
        fresh = await remote.seed(TASK)  # the server itself is fine
        verdict = await remote.verify(fresh, TASK, {"output": []})
        assert verdict.reward == 0.0 and verdict.failure is None
        await remote.close(fresh)
    finally:
        await remote.aclose()


async def test_a_seed_during_a_short_outage_is_retried_through(served: RestartableServer) -> None:
    remote = RemoteEnvironmentClient(served.url, retry=PATIENT)
    served.stop()
    back = threading.Timer(0.3, served.start)
    back.start()
    try:
        session = await remote.seed(TASK)  # before: EnvironmentFailure "connection refused"
        assert await remote.call_tool(session, "increment", {"amount": 3}) == "3"
        assert (await remote.verify(session, TASK, {"output": []})).reward == 1.0
        await remote.close(session)
    finally:
        back.join()
        await remote.aclose()


async def test_a_server_that_stays_down_is_unreachable_for_every_call() -> None:
    remote = RemoteEnvironmentClient(f"http://127.0.0.1:{free_port()}", retry=FAST)
    try:
        with pytest.raises(EnvironmentUnreachable, match="after 3 attempt"):
            await remote.seed(TASK)
        with pytest.raises(EnvironmentUnreachable):  # a tool call was sent nowhere: not run
            await remote.call_tool("s", "increment", {"amount": 1})
    finally:
        await remote.aclose()


async def test_a_session_whose_server_went_down_is_unreachable_for_its_close(
    served: RestartableServer,
) -> None:
    remote = await RemoteEnvironmentClient.connect(served.url, retry=FAST)
    try:
        session = await remote.seed(TASK)
        assert await remote.call_tool(session, "increment", {"amount": 1}) == "1"  # seeds it
        served.stop()
        with pytest.raises(EnvironmentUnreachable):
            await remote.close(session)
    finally:
        await remote.aclose()


async def test_closing_a_handle_this_client_never_seeded_sends_nothing() -> None:
    remote = RemoteEnvironmentClient(f"http://127.0.0.1:{free_port()}", retry=FAST)
    try:
        await remote.close("never-seeded")  # no server at all: a request would have failed
    finally:
        await remote.aclose()


async def test_a_full_server_is_waited_for_within_the_budget() -> None:
    server = RestartableServer(max_sessions=1)
    server.start()
    caps = server.app.state.caps
    remote = RemoteEnvironmentClient(server.url, retry=PATIENT)
    try:
        first = await remote.seed(TASK)
        second = asyncio.create_task(remote.seed(TASK))
        while caps.refused == 0:  # the second seed met the cap (503 + Retry-After)
            await asyncio.sleep(0.01)
        await remote.close(first)
        session = await second  # before: EnvironmentFailure "seed_session answered 503"
        await remote.close(session)
        hurried = RemoteEnvironmentClient(server.url, retry=FAST)
        try:
            held = await hurried.seed(TASK)
            with pytest.raises(EnvironmentFailure, match="answered 503") as refused:
                await hurried.seed(TASK)
            assert not isinstance(refused.value, EnvironmentUnreachable)
            await hurried.close(held)
        finally:
            await hurried.aclose()
    finally:
        await remote.aclose()
        server.stop()


def test_a_verify_answer_in_nemo_gym_failure_form_is_a_failure_not_its_placeholder_reward() -> None:
    answer = {"reward": 0.0, "_ng_failure_class": "timeout_exceeded"}
    verdict = verdict_from_answer(answer, {})
    assert verdict.failure is not None and verdict.failure.kind is FailureKind.TIMEOUT
    odd_kind = {"reward": 0.0, "failure": {"kind": "no_such_kind", "reason": "x"}}
    failure = verdict_from_answer(odd_kind, {}).failure
    assert failure is not None and failure.kind is FailureKind.INTERNAL_ERROR


class SlowCounter(Counter):
    tool_timeout = 0.2

    @tool
    async def stall(self, session: Session) -> str:
        """Wait far longer than the tool timeout."""
        await asyncio.sleep(5)
        return "never"


async def test_a_tool_that_timed_out_on_the_server_is_a_timeout_here_too() -> None:
    with BackgroundServer(environment_app(SlowCounter())) as server:
        remote = await RemoteEnvironmentClient.connect(server.url)
        try:
            session = await remote.seed(TASK)
            with pytest.raises(ToolFailure) as caught:
                await remote.call_tool(session, "stall", {})
        finally:
            await remote.aclose()
    assert caught.value.kind is FailureKind.TIMEOUT  # before: tool_error, the kind was lost
    assert "timed out after 0.2s" in caught.value.reason


class CountingHttp(HttpClient):
    """An HTTP client that notes the route of every POST it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.posts: list[str] = []

    async def request(self, method: str, url: str, **options: Any) -> HttpAnswer:
        if method == "POST":
            self.posts.append(url.rsplit("/", 1)[1])
        return await super().request(method, url, **options)


def counting_to(target: int) -> FakeModel:
    def script(params: JsonDict) -> JsonDict:
        if outputs_so_far(params):
            return say("done")
        return response(call("increment", f'{{"amount": {target}}}', "c0"))

    return FakeModel(script)


async def test_a_palaestra_server_is_seeded_by_the_first_call_one_exchange_fewer(
    served: RestartableServer,
) -> None:
    http = CountingHttp()
    remote = await RemoteEnvironmentClient.connect(served.url, http=http)
    try:
        result = await ToolCallingAgent().run(TASK, remote, counting_to(3))
        assert result.verdict is not None and result.verdict.reward == 1.0
        # Before: seed_session, increment, verify. The verify closed the session.
        assert http.posts == ["increment", "verify"]
        assert len(served.app.state.client.sessions) == 0
        answered = await ToolCallingAgent().run(TASK, remote, FakeModel(lambda _: say("3")))
        assert answered.verdict is not None and http.posts[2:] == ["verify"]  # seed and verify
        step_by_step = await RemoteEnvironmentClient.connect(
            served.url, http=http, seed_with_first_call=False
        )
        await step_by_step.close(await step_by_step.seed(TASK))
        assert http.posts[3:] == ["seed_session", "close_session"]
        await step_by_step.aclose()
    finally:
        await remote.aclose()
        await http.aclose()


async def test_a_rollout_that_never_reaches_the_environment_costs_it_no_request(
    served: RestartableServer,
) -> None:
    def failing(params: JsonDict) -> JsonDict:
        raise ModelError("the model is down")

    http = CountingHttp()
    remote = await RemoteEnvironmentClient.connect(served.url, http=http)
    try:
        result = await ToolCallingAgent().run(TASK, remote, FakeModel(failing))
    finally:
        await remote.aclose()
        await http.aclose()
    assert result.failure is not None and result.failure.kind is FailureKind.MODEL_ERROR
    assert http.posts == []  # before: a seed and its close


async def test_a_seed_refused_with_the_first_call_fails_it_as_the_seed_would_and_runs_nothing() -> (
    None
):
    class Refusing(Counter):
        def seed(self, task: JsonDict) -> JsonDict:
            raise ValueError("no such task")

    app = environment_app(Refusing())
    with BackgroundServer(app) as server:
        remote = await RemoteEnvironmentClient.connect(server.url)
        try:
            session = await remote.seed(TASK)
            with pytest.raises(EnvironmentFailure, match="seed_session answered 500") as caught:
                await remote.call_tool(session, "increment", {"amount": 1})
            assert "no such task" in caught.value.reason
            await remote.close(session)  # nothing was seeded: nothing to close
            result = await ToolCallingAgent().run(TASK, remote, counting_to(3))
        finally:
            await remote.aclose()
    assert len(app.state.client.sessions) == 0
    assert result.verdict is None and result.failure is not None
    assert result.failure.kind is FailureKind.ENV_ERROR and "no such task" in result.failure.reason


async def test_a_full_server_is_waited_for_by_a_call_that_seeds_its_session() -> None:
    server = RestartableServer(max_sessions=1)
    server.start()
    caps = server.app.state.caps
    remote = await RemoteEnvironmentClient.connect(server.url, retry=PATIENT)
    try:
        first = await remote.seed(TASK)
        assert await remote.call_tool(first, "increment", {"amount": 1}) == "1"
        second = await remote.seed(TASK)
        called = asyncio.create_task(remote.call_tool(second, "increment", {"amount": 2}))
        while caps.refused == 0:  # the call's seed met the cap: 503, the tool did not run
            await asyncio.sleep(0.01)
        await remote.close(first)
        assert await called == "2"  # the seed and the call, sent again once there was room
        assert (await remote.verify(second, TASK, {"output": []})).metrics["final_value"] == 2
        assert len(server.app.state.client.sessions) == 0
    finally:
        await remote.aclose()
        server.stop()


async def test_concurrent_first_calls_of_one_session_seed_it_once(
    served: RestartableServer,
) -> None:
    remote = await RemoteEnvironmentClient.connect(served.url)
    try:
        session = await remote.seed(TASK)
        values = await asyncio.gather(
            *(remote.call_tool(session, "increment", {"amount": 1}) for _ in range(3))
        )
        assert sorted(values) == ["1", "2", "3"]  # one session: before, a 401 for the others
        assert len(served.app.state.client.sessions) == 1
        closing = asyncio.create_task(remote.close(await remote.seed(TASK)))
        await remote.close(session)
        await closing
        assert len(served.app.state.client.sessions) == 0
    finally:
        await remote.aclose()


async def test_a_server_on_a_unix_socket_is_named_by_its_path_in_failures(tmp_path: Path) -> None:
    socket = tmp_path / "env.sock"  # nothing listens there
    remote = RemoteEnvironmentClient(unix_url(str(socket)), retry=FAST)
    try:
        with pytest.raises(EnvironmentUnreachable) as caught:
            await remote.seed(TASK)
    finally:
        await remote.aclose()
    assert f"unix:{socket}/seed_session failed" in caught.value.reason  # before: %2F-encoded


async def test_a_first_call_the_tool_refuses_still_seeds_the_session_it_names(
    served: RestartableServer,
) -> None:
    remote = await RemoteEnvironmentClient.connect(served.url)
    try:
        session = await remote.seed(TASK)
        with pytest.raises(ToolCallRejected):  # the model's mistake: told to it, not fatal
            await remote.call_tool(session, "increment", {"amount": "three"})
        assert await remote.call_tool(session, "increment", {"amount": 2}) == "2"
        assert len(served.app.state.client.sessions) == 1  # the same session throughout
        await remote.close(session)
        assert len(served.app.state.client.sessions) == 0
    finally:
        await remote.aclose()


async def test_a_first_call_to_a_tool_the_server_lacks_is_an_unknown_tool_the_model_is_told(
    served: RestartableServer,
) -> None:
    def guessing(params: JsonDict) -> JsonDict:
        if outputs_so_far(params):
            return say("done")
        return response(call("teleport", "{}", "c0"))  # no such tool on the server

    http = CountingHttp()
    remote = await RemoteEnvironmentClient.connect(served.url, http=http)
    try:
        session = await remote.seed(TASK)
        with pytest.raises(ToolCallRejected, match="unknown tool 'teleport'"):
            await remote.call_tool(session, "teleport", {})
        assert await remote.call_tool(session, "increment", {"amount": 2}) == "2"
        assert len(served.app.state.client.sessions) == 1  # seeded once, on its own
        await remote.close(session)
        result = await ToolCallingAgent().run(TASK, remote, FakeModel(guessing))
    finally:
        await remote.aclose()
        await http.aclose()
    # Before: the seeding call's 404 was read as the seed failing, and the rollout as env_error.
    assert result.failure is None and result.verdict is not None
    assert http.posts[-4:] == ["teleport", "seed_session", "teleport", "verify"]
    assert len(served.app.state.client.sessions) == 0


class Stopwatch(Counter):
    """A counter whose ``stop`` ends the episode."""

    @tool(ends_episode=True)
    def stop(self, session: Session) -> int:
        """Stop counting."""
        return int(session.state["value"])


async def test_a_served_tool_that_ends_the_episode_ends_it_through_the_remote_client() -> None:
    def script(params: JsonDict) -> JsonDict:
        done = len(outputs_so_far(params))
        name = "increment" if done % 2 == 0 else "stop"  # stop, then increment if asked again
        return response(call(name, "{}", f"c{done}"))

    server = BackgroundServer(environment_app(Stopwatch()), port=free_port())
    url = server.start().url
    try:
        remote = await RemoteEnvironmentClient.connect(url)
        try:
            assert remote.ending_tools == frozenset({"stop"})
            model = FakeModel(script)
            result = await ToolCallingAgent().run({**TASK, "target_value": 1}, remote, model)
        finally:
            await remote.aclose()
    finally:
        server.stop()
    assert len(model.requests) == 2 and result.truncated is None
    assert result.verdict is not None and result.verdict.reward == 1.0
