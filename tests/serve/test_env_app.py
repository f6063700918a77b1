"""The environment server over real HTTP, driven the way NeMo Gym's agents drive it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from palaestra import LocalEnvironmentClient, ToolCallingAgent
from palaestra.agents import StepAgent
from palaestra.environment.sessions import Session
from palaestra.environment.tools import tool
from palaestra.envs.counter.environment import Counter
from palaestra.envs.number_guess.environment import NumberGuess, task
from palaestra.envs.synonyms.environment import Synonyms
from palaestra.errors import EnvironmentFailure, ToolCallRejected
from palaestra.http.guard import Guard
from palaestra.http.runner import BackgroundServer
from palaestra.remote.env import RemoteEnvironmentClient
from palaestra.serve.env_app import environment_app
from palaestra.transport import FramedHeaders, HttpAnswer, HttpClient
from palaestra.types import FailureKind, JsonDict, Verdict
from tests.envs.test_counter import stepper
from tests.envs.test_counter import tasks as counter_tasks
from tests.envs.test_number_guess import bisector
from tests.support.cookie_resources_server import cookie_resources_app


@pytest.fixture
def counter_server() -> Iterator[BackgroundServer]:
    with BackgroundServer(environment_app(Counter())) as server:
        yield server


async def test_a_nemo_gym_style_client_with_cookies_gets_the_in_process_rewards(
    counter_server: BackgroundServer,
) -> None:
    rows = counter_tasks()
    local = LocalEnvironmentClient(Counter())
    expected = [(await ToolCallingAgent().run(row, local, stepper(row))).verdict for row in rows]
    rewards = []
    for row in rows:
        # one cookie jar per rollout, as NeMo Gym's agent keeps one per request chain;
        # unsafe=True lets aiohttp keep cookies set by an IP-address host such as 127.0.0.1
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(base_url=counter_server.url, cookie_jar=jar) as http:
            async with http.post("/seed_session", json=row) as seeded:
                assert seeded.status == 200 and await seeded.json() == {}
            for amount in row["increments"]:
                async with http.post("/increment", json={"amount": amount}) as called:
                    assert called.status == 200
                    value = await called.json()
            async with http.post("/read_counter", json={}) as read:
                assert await read.json() == value
            body = {**row, "response": {"output": [], "id": "r"}}
            async with http.post("/verify", json=body) as verified:
                answer = await verified.json()
            assert answer["responses_create_params"] == row["responses_create_params"]
            assert answer["final_value"] == row["target_value"]
            rewards.append(answer["reward"])
            async with http.post("/close_session", json={}) as closed:
                assert closed.status == 200
    assert rewards == [v.reward for v in expected if v is not None] == [1.0] * 5


async def test_remote_client_runs_the_agent_unchanged(counter_server: BackgroundServer) -> None:
    remote = await RemoteEnvironmentClient.connect(counter_server.url)
    try:
        assert [t["name"] for t in remote.tools()] == ["increment", "read_counter"]
        rows = counter_tasks()
        results = await asyncio.gather(
            *(ToolCallingAgent().run(row, remote, stepper(row)) for row in rows)
        )
        for row, result in zip(rows, results, strict=True):
            assert result.failure is None and result.verdict is not None
            assert result.verdict.reward == 1.0
            assert result.verdict.metrics["final_value"] == row["target_value"]
    finally:
        await remote.aclose()
    assert len(counter_server._server.config.app.state.client.sessions) == 0  # all closed


async def test_remote_tool_mistakes_are_fed_back_like_in_process() -> None:
    with BackgroundServer(environment_app(Synonyms())) as server:
        remote = await RemoteEnvironmentClient.connect(server.url)
        local = LocalEnvironmentClient(Synonyms())
        try:
            for client in (remote, local):
                session = await client.seed({"expected_synonyms": ["joyful"]})
                assert await client.call_tool(session, "get_synonym", {"word": "happy"}) == (
                    "joyful"
                )
                with pytest.raises(ToolCallRejected, match="zebra"):
                    await client.call_tool(session, "get_synonym", {"word": "zebra"})
                with pytest.raises(ToolCallRejected, match="word"):
                    await client.call_tool(session, "get_synonym", {"wrd": "x"})
                await client.close(session)
        finally:
            await remote.aclose()


async def test_remote_client_drives_a_cookie_only_nemo_gym_style_server() -> None:
    with BackgroundServer(cookie_resources_app()) as server:
        remote = await RemoteEnvironmentClient.connect(server.url)
        try:
            assert remote.tools() == []  # NeMo Gym servers do not list tools
            task: JsonDict = {"responses_create_params": {"input": "x"}, "target_value": 3}
            sessions = [await remote.seed(task) for _ in range(2)]
            await remote.call_tool(sessions[0], "increment", {"amount": 3})
            await remote.call_tool(sessions[1], "increment", {"amount": 1})
            first = await remote.verify(sessions[0], task, {"output": []})
            second = await remote.verify(sessions[1], task, {"output": []})
            assert (first.reward, first.metrics) == (1.0, {"final_value": 3})
            assert (second.reward, second.metrics) == (0.0, {"final_value": 1})
        finally:
            await remote.aclose()


async def test_a_verify_asked_to_close_its_session_closes_it_and_the_client_sends_no_close(
    counter_server: BackgroundServer,
) -> None:
    sessions = counter_server._server.config.app.state.client.sessions
    task: JsonDict = {"responses_create_params": {"input": "x"}, "target_value": 3}
    remote = await RemoteEnvironmentClient.connect(counter_server.url)
    try:
        session = await remote.seed(task)
        await remote.call_tool(session, "increment", {"amount": 3})
        assert len(sessions) == 1
        verdict = await remote.verify(session, task, {"output": []})
        assert verdict.reward == 1.0
        assert len(sessions) == 0  # closed by the verify itself
        # A /close_session now would be a 404 session_lost (raised): none is sent.
        await remote.close(session)
    finally:
        await remote.aclose()


async def test_a_server_that_does_not_say_it_closed_the_session_still_gets_a_close() -> None:
    closed: list[str] = []
    with BackgroundServer(cookie_resources_app(closed)) as server:
        remote = await RemoteEnvironmentClient.connect(server.url)
        try:
            task: JsonDict = {"responses_create_params": {"input": "x"}, "target_value": 3}
            session = await remote.seed(task)
            await remote.verify(session, task, {"output": []})
            assert closed == []
            await remote.close(session)
        finally:
            await remote.aclose()
    assert len(closed) == 1


async def test_a_server_whose_openapi_asks_for_the_newest_close_body_gets_it() -> None:
    closed: list[str] = []
    with BackgroundServer(cookie_resources_app(closed, typed_close=True)) as server:
        remote = await RemoteEnvironmentClient.connect(server.url)
        try:
            task: JsonDict = {"responses_create_params": {"input": "x"}, "target_value": 3}
            sessions = [await remote.seed(task) for _ in range(2)]
            for session in sessions:
                await remote.call_tool(session, "increment", {"amount": 3})
                await remote.close(session)
        finally:
            await remote.aclose()
    assert len(closed) == 2 and len(set(closed)) == 2  # before: {} refused (422), none closed


class CounterWithBrokenClose(Counter):
    def close(self, session: Session) -> None:
        raise OSError("the close has a bug")


async def test_a_close_that_fails_after_its_verify_fails_the_rollout_as_a_close_would() -> None:
    row = counter_tasks()[0]
    with BackgroundServer(environment_app(CounterWithBrokenClose())) as server:
        remote = await RemoteEnvironmentClient.connect(server.url)
        try:
            result = await ToolCallingAgent().run(row, remote, stepper(row))
        finally:
            await remote.aclose()
        assert len(server._server.config.app.state.client.sessions) == 0
    # The verify's answer carries the close's failure (how a failure in a session is
    # answered), which the collector records as the rollout's failure: never a score.
    assert result.failure is None and result.verdict is not None
    failure = result.verdict.failure
    assert failure is not None and failure.kind is FailureKind.ENV_ERROR
    assert "the close has a bug" in failure.reason


async def test_protocol_errors_are_clear(counter_server: BackgroundServer) -> None:
    async with aiohttp.ClientSession(base_url=counter_server.url) as http:
        async with http.post("/seed_session", data=b"{nope") as bad:
            assert bad.status == 400
        async with http.post("/increment", json={"amount": 1}) as no_session:
            assert no_session.status == 401
            assert "seed_session" in (await no_session.json())["error"]["message"]
        async with http.post("/verify", json={"responses_create_params": {}}) as missing:
            assert missing.status == 422
            assert (await missing.json())["error"]["param"] == "response"
        forged = {"x-palaestra-session": "abc.def"}
        async with http.post("/increment", json={}, headers=forged) as denied:
            assert denied.status == 404
            assert (await denied.json())["error"]["type"] == "session_lost"
        async with http.post("/seed_session", json={}) as seeded:
            token = seeded.headers["x-palaestra-session"]
        async with http.post(
            "/increment", json={"amount": "many"}, headers={"x-palaestra-session": token}
        ) as invalid:
            assert invalid.status == 422
            assert "amount" in (await invalid.json())["error"]["message"]


async def test_verify_without_a_session_scores_in_a_fresh_one(
    counter_server: BackgroundServer,
) -> None:
    async with aiohttp.ClientSession(base_url=counter_server.url) as http:
        body = {
            "responses_create_params": {"input": "x"},
            "initial_value": 4,
            "target_value": 4,
            "response": {"output": []},
        }
        async with http.post("/verify", json=body) as verified:
            assert (await verified.json())["reward"] == 1.0


async def test_aggregate_metrics_endpoint() -> None:
    with BackgroundServer(environment_app(Counter())) as server:
        async with aiohttp.ClientSession(base_url=server.url) as http:
            rows = [{"reward": 1.0, "_ng_task_index": 0}, {"reward": 0.0, "_ng_task_index": 0}]
            async with http.post("/aggregate_metrics", json={"verify_responses": rows}) as done:
                metrics = await done.json()
    assert metrics["agent_metrics"]["mean/reward"] == 0.5
    assert metrics["key_metrics"]["pass@2"] == 1.0
    assert set(metrics) == {"agent_metrics", "key_metrics", "group_level_metrics"}


async def test_guard_requires_the_token_and_bounds_the_body() -> None:
    app = Guard(environment_app(Counter()), token="s3cret", max_body=1000)
    with BackgroundServer(app) as server:
        async with aiohttp.ClientSession(base_url=server.url) as http:
            async with http.get("/") as anonymous:
                assert anonymous.status == 401
            auth = {"Authorization": "Bearer s3cret"}
            async with http.get("/", headers=auth) as allowed:
                assert allowed.status == 200
            big = orjson.dumps({"pad": "x" * 5000})
            async with http.post("/seed_session", data=big, headers=auth) as too_big:
                assert too_big.status == 413


async def test_turn_based_environment_over_http_gives_the_same_episode() -> None:
    row = task(low=1, high=64, target=45)
    local = await StepAgent(max_steps=8).run(row, LocalEnvironmentClient(NumberGuess()), bisector())
    with BackgroundServer(environment_app(NumberGuess())) as server:
        remote_client = await RemoteEnvironmentClient.connect(server.url)
        try:
            assert remote_client.default_agent == "step"
            remote = await StepAgent(max_steps=8).run(row, remote_client, bisector())
        finally:
            await remote_client.aclose()
        plain = await RemoteEnvironmentClient.connect(server.url)
        try:
            counter_like = await plain.seed({})
            with pytest.raises(EnvironmentFailure, match="/step answered 500"):
                await plain.step(counter_like, "3")  # reset was never called: a clear failure
        finally:
            await plain.aclose()
    assert local.verdict is not None and remote.verdict is not None
    assert remote.verdict.reward == local.verdict.reward == 1.0
    assert remote.verdict.step_rewards == local.verdict.step_rewards
    assert remote.response["output"] == local.response["output"]  # type: ignore[index]


COUNTER_TASK: JsonDict = {"responses_create_params": {"input": "x"}, "target_value": 2}
RESPONSE: JsonDict = {"id": "r", "output": []}


async def _post(
    http: aiohttp.ClientSession, route: str, body: JsonDict, token: str | None = None
) -> tuple[int, JsonDict, aiohttp.ClientResponse]:
    headers = {"x-palaestra-session": token} if token else {}
    async with http.post(route, json=body, headers=headers) as answer:
        return answer.status, await answer.json(), answer


async def test_a_verify_with_a_forged_session_token_is_a_session_lost_failure() -> None:
    with BackgroundServer(environment_app(NumberGuess())) as server:
        async with aiohttp.ClientSession(base_url=server.url) as http:
            _, _, seeded = await _post(http, "/seed_session", task(low=1, high=8, target=3))
            token = seeded.headers["x-palaestra-session"]
            session_id, _, signature = token.rpartition(".")
            forged = f"{session_id}.{'0' * len(signature)}"
            body = {**task(low=1, high=8, target=3), "response": RESPONSE}
            for route, sent in [
                ("/verify", body),
                ("/reset", {}),
                ("/step", {"action": "3"}),
                ("/close_session", {}),
            ]:
                status, answer, _ = await _post(http, route, sent, forged)
                assert status == 404, route
                assert answer["error"]["type"] == "session_lost"
                assert answer["error"]["param"] == "session"
                assert "reward" not in answer


async def test_a_verify_after_a_server_restart_is_a_session_lost_failure() -> None:
    secret = b"k" * 32  # the same secret across the restart: the token is valid, the id unknown
    with BackgroundServer(environment_app(Counter(), secret=secret)) as first:
        async with aiohttp.ClientSession(base_url=first.url) as http:
            _, _, seeded = await _post(http, "/seed_session", COUNTER_TASK)
            token = seeded.headers["x-palaestra-session"]
            status, _, _ = await _post(http, "/increment", {"amount": 2}, token)
            assert status == 200
    with BackgroundServer(environment_app(Counter(), secret=secret)) as restarted:
        async with aiohttp.ClientSession(base_url=restarted.url) as http:
            verify = {**COUNTER_TASK, "response": RESPONSE}
            for route, sent in [("/verify", verify), ("/increment", {}), ("/close_session", {})]:
                status, answer, _ = await _post(http, route, sent, token)
                assert status == 404, route
                assert answer["error"]["type"] == "session_lost"
            status, answer, _ = await _post(http, "/increment", {"amount": 1})
            assert status == 401  # no token at all: still "seed first"
            status, answer, _ = await _post(http, "/verify", verify)
            assert status == 200 and answer["final_value"] == 0  # no token: re-verification


async def test_seeds_over_the_session_cap_are_refused_with_retry_after_and_counted() -> None:
    app = environment_app(Counter(), max_sessions=2, max_task_bytes=200)
    with BackgroundServer(app) as server:
        async with aiohttp.ClientSession(base_url=server.url) as http:
            tokens = []
            for _ in range(2):
                status, _, seeded = await _post(http, "/seed_session", COUNTER_TASK)
                assert status == 200
                tokens.append(seeded.headers["x-palaestra-session"])
            for _ in range(3):
                status, answer, refused = await _post(http, "/seed_session", COUNTER_TASK)
                assert status == 503 and refused.headers["Retry-After"] == "1"
                assert "max_sessions" in answer["error"]["message"]
            assert len(app.state.client.sessions) == 2  # memory bounded by the cap
            async with http.get("/") as health:
                assert (await health.json())["refused_sessions"] == 3
            status, _, _ = await _post(http, "/close_session", {}, tokens[0])
            assert status == 200
            status, _, _ = await _post(http, "/seed_session", COUNTER_TASK)
            assert status == 200  # closing a session made room
            huge = {**COUNTER_TASK, "pad": "x" * 300}
            status, answer, _ = await _post(http, "/seed_session", huge)
            assert status == 413 and "max_task_bytes" in answer["error"]["message"]
            app.state.client.sessions.ttl = -1.0  # every open session is now expired
            status, _, _ = await _post(http, "/seed_session", COUNTER_TASK)
            assert status == 200  # a full server sweeps expired sessions before refusing
            assert len(app.state.client.sessions) == 1


def test_the_session_caps_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_sessions"):
        environment_app(Counter(), max_sessions=0)


class BrokenCounter(Counter):
    """A counter whose verify and ``explode`` tool raise, as an author's bug would."""

    name = "broken_counter"

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        raise ValueError("the verifier has a bug")  # the line the server log must name

    def seed(self, task: JsonDict) -> JsonDict:
        if task.get("break_seed"):
            raise KeyError("the seed has a bug")
        return super().seed(task)

    @tool
    def explode(self, session: Session) -> int:
        """A tool with a bug."""
        raise RuntimeError("the tool has a bug")


async def test_a_verify_that_cannot_be_scored_reaches_each_caller_as_a_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="palaestra.serve")
    with BackgroundServer(environment_app(BrokenCounter())) as server:
        async with aiohttp.ClientSession(base_url=server.url) as http:
            _, _, seeded = await _post(http, "/seed_session", COUNTER_TASK)
            token = seeded.headers["x-palaestra-session"]
            verify = {**COUNTER_TASK, "response": RESPONSE}
            # in a session (a NeMo Gym agent): 200 with NeMo Gym's failure class beside ours
            status, in_session, _ = await _post(http, "/verify", verify, token)
            # without one (a stateless scorer such as NeMo Evaluator's client): an error status
            status_alone, alone, _ = await _post(http, "/verify", verify)
        remote = await RemoteEnvironmentClient.connect(server.url)
        try:
            verdict = await remote.verify(await remote.seed(COUNTER_TASK), COUNTER_TASK, RESPONSE)
        finally:
            await remote.aclose()
    assert status == 200
    assert in_session["_ng_failure_class"] == "legitimate"
    assert in_session["failure"]["kind"] == "verifier_error"
    assert "the verifier has a bug" in in_session["failure"]["reason"]
    assert status_alone == 500 and alone["failure"]["kind"] == "verifier_error"
    assert "reward" not in alone
    assert verdict.failure is not None and verdict.failure.kind is FailureKind.VERIFIER_ERROR
    logged = "\n".join(r.getMessage() + str(r.exc_text or "") for r in caplog.records)
    assert "test_env_app.py" in caplog.text and "in verify" in caplog.text, logged


async def test_an_exception_in_seed_or_a_tool_leaves_its_file_and_line_in_the_server_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="palaestra.serve")
    with BackgroundServer(environment_app(BrokenCounter())) as server:
        async with aiohttp.ClientSession(base_url=server.url) as http:
            status, answer, _ = await _post(http, "/seed_session", {"break_seed": True})
            _, _, seeded = await _post(http, "/seed_session", COUNTER_TASK)
            token = seeded.headers["x-palaestra-session"]
            tool_status, tool_answer, _ = await _post(http, "/explode", {}, token)
    assert status == 500 and answer["failure"]["kind"] == "env_error"
    assert tool_status == 500 and tool_answer["failure"]["kind"] == "tool_error"
    seed_line = BrokenCounter.seed.__code__.co_firstlineno + 2  # the raise
    tool_line = BrokenCounter.explode.__code__.co_firstlineno + 3
    assert f'test_env_app.py", line {seed_line}, in seed' in caplog.text
    assert f'test_env_app.py", line {tool_line}, in explode' in caplog.text


async def test_aggregate_metrics_counts_failed_rows_and_never_averages_them() -> None:
    with BackgroundServer(environment_app(Counter())) as server:
        async with aiohttp.ClientSession(base_url=server.url) as http:
            rows = [
                {"reward": 1.0, "_ng_task_index": 0},
                {"reward": 0.0, "_ng_failure_class": "legitimate", "_ng_task_index": 0},
                {"failure": {"kind": "timeout", "reason": "slow"}, "_ng_task_index": 1},
            ]
            status, metrics, _ = await _post(http, "/aggregate_metrics", {"verify_responses": rows})
    assert status == 200
    assert metrics["agent_metrics"]["mean/reward"] == 1.0
    assert metrics["key_metrics"]["failures"] == 2
    assert metrics["failures_by_kind"] == {"internal_error": 1, "timeout": 1}


async def test_a_call_carrying_its_seed_runs_in_the_session_it_seeds() -> None:
    task = orjson.dumps({"responses_create_params": {"input": "x"}, "target_value": 3})
    app = environment_app(Counter(), max_task_bytes=1000)
    sessions = app.state.client.sessions
    with BackgroundServer(app) as server:
        async with aiohttp.ClientSession(base_url=server.url) as http:
            tools = await (await http.get("/tools")).json()
            assert tools["seed_with_first_call"] is True

            async def post(route: str, body: bytes, seed: str) -> aiohttp.ClientResponse:
                headers = {"x-palaestra-seed": seed, "Content-Type": "application/json"}
                return await http.post(route, data=body, headers=headers)

            called = await post("/increment", task + b'{"amount": 3}', str(len(task)))
            assert called.status == 200 and await called.json() == 3
            token = called.headers["x-palaestra-session"]
            assert token in called.headers["set-cookie"] and len(sessions) == 1
            body = {"target_value": 3, "response": {"output": []}}
            verified = await http.post("/verify", json=body, headers={"x-palaestra-session": token})
            assert (await verified.json())["reward"] == 1.0  # the session the call seeded

            # Bad counts, and a seed the server refuses: the seed's answer, no session, no call.
            for seed in ("x", str(len(task) + 20), "-1"):
                refused = await post("/increment", task + b"{}", seed)
                assert refused.status == 400 and "x-palaestra-session" not in refused.headers
            big = orjson.dumps({"responses_create_params": {"input": "x" * 2000}})
            too_big = await post("/increment", big + b"{}", str(len(big)))
            assert too_big.status == 413 and "max_task_bytes" in await too_big.text()
            assert "x-palaestra-session" not in too_big.headers
            assert len(sessions) == 1

            # A verify seeding its session and asked to close it: all three in one exchange.
            closing = {"x-palaestra-seed": str(len(task)), "x-palaestra-close": "1"}
            at_once = await http.post("/verify", data=task + orjson.dumps(body), headers=closing)
            assert (await at_once.json())["reward"] == 0.0  # a fresh counter: 0, not 3
            assert at_once.headers["x-palaestra-closed"] == "1" and len(sessions) == 1


class UnanswerableCounter(Counter):
    """A counter whose ``odd`` tool returns what JSON cannot carry: its route raises an
    exception no exception handler maps, as a bug in an environment's tool can."""

    name = "unanswerable_counter"

    @tool
    def odd(self, session: Session) -> object:
        """A tool with a bug: a set is no JSON."""
        return {1, 2}


async def test_a_call_seeding_its_session_whose_route_raises_closes_the_session() -> None:
    task = orjson.dumps(COUNTER_TASK)
    app = environment_app(UnanswerableCounter())
    with BackgroundServer(app) as server:
        async with aiohttp.ClientSession(base_url=server.url) as http:
            before = (await (await http.get("/")).json())["sessions"]
            headers = {"x-palaestra-seed": str(len(task)), "Content-Type": "application/json"}
            async with http.post("/odd", data=task + b"{}", headers=headers) as answer:
                status = answer.status
                assert "x-palaestra-session" not in answer.headers
            after = (await (await http.get("/")).json())["sessions"]
        remote = await RemoteEnvironmentClient.connect(server.url)
        try:
            session = await remote.seed(COUNTER_TASK)  # seeded with its first call
            with pytest.raises(EnvironmentFailure) as failed:
                await remote.call_tool(session, "odd", {})
            assert failed.value.kind is FailureKind.ENV_ERROR  # a failure with a kind
        finally:
            await remote.aclose()
        assert len(app.state.client.sessions) == before
    assert status == 500
    assert after == before == 0


class UngradableCounter(Counter):
    """A counter whose verifier cannot grade a task marked ``ungradable``."""

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        if session.task.get("ungradable"):
            return Verdict.failed(FailureKind.VERIFIER_ERROR, "cannot grade this")
        return super().verify(session, response)


async def test_a_verify_asking_for_the_no_echo_gets_no_echo_and_a_failure_stays_one() -> None:
    task: JsonDict = {"responses_create_params": {"input": "x"}, "target_value": 3}
    with BackgroundServer(environment_app(UngradableCounter())) as server:
        async with aiohttp.ClientSession(base_url=server.url) as http:

            async def verify(row: JsonDict, alone: bool) -> JsonDict:
                seeded = await http.post("/seed_session", json=row)
                token = seeded.headers["x-palaestra-session"]
                headers = {"x-palaestra-session": token}
                if alone:
                    headers["x-palaestra-no-echo"] = "1"
                body = {"response": {"output": []}} if alone else {**row, "response": {}}
                answer = await http.post("/verify", json=body, headers=headers)
                assert answer.status == 200
                return dict(await answer.json())

            echoed = await verify(task, alone=False)
            alone = await verify(task, alone=True)
            assert set(echoed) - set(alone) == {
                "responses_create_params",
                "target_value",
                "response",
            }
            assert alone == {k: v for k, v in echoed.items() if k in alone}  # the same verdict
            assert alone["reward"] == 0.0 and alone["final_value"] == 0  # nothing counted yet
            failed = await verify({**task, "ungradable": True}, alone=True)
            assert failed["failure"]["kind"] == "verifier_error"  # a failure, not a bare 0
            assert "response" not in failed


async def test_palaestras_client_sends_a_palaestra_server_the_response_alone_for_the_same_verdict(
    counter_server: BackgroundServer,
) -> None:
    sent: list[tuple[bytes, dict[str, str]]] = []

    class Watching(HttpClient):
        async def request(self, method: str, url: str, **options: Any) -> HttpAnswer:
            if url.endswith("/verify"):
                headers = options.get("headers")
                items = headers.items if isinstance(headers, FramedHeaders) else headers
                sent.append((options["body"], dict(items or {})))
            return await super().request(method, url, **options)

    task: JsonDict = {"responses_create_params": {"input": "x"}, "target_value": 3}
    http = Watching()
    verdicts = []
    try:
        for along in (True, False):  # seeded with the verify itself, then on its own first
            remote = await RemoteEnvironmentClient.connect(
                counter_server.url, http=http, seed_with_first_call=along
            )
            session = await remote.seed(task)
            verdicts.append(await remote.verify(session, task, {"output": []}))
            await remote.close(session)
        plain = RemoteEnvironmentClient(counter_server.url, http=http)  # learned nothing
        session = await plain.seed(task)
        verdicts.append(await plain.verify(session, task, {"output": []}))
        await plain.close(session)
    finally:
        await http.aclose()
    expected = (0.0, {"final_value": 0, "distance": 3})
    assert [(v.reward, v.metrics) for v in verdicts] == [expected] * 3
    (seeding, seeding_headers), (alone, headers), (whole, plain_headers) = sent
    assert seeding.endswith(b'{"response":{"output":[]}}') and b"target_value" in seeding
    assert orjson.loads(alone) == {"response": {"output": []}}  # the task stays in the session
    assert seeding_headers["x-palaestra-no-echo"] == headers["x-palaestra-no-echo"]
    assert orjson.loads(whole)["target_value"] == 3  # NeMo Gym's form, to any other server
    assert "x-palaestra-no-echo" not in plain_headers
    assert len(counter_server._server.config.app.state.client.sessions) == 0


async def test_the_default_bound_refuses_seeds_past_the_tasks_bytes_with_retry_after() -> None:
    from palaestra.serve.env_app import DEFAULT_MAX_TASK_BYTES, DEFAULT_MAX_TOTAL_TASK_BYTES

    app = environment_app(Counter())  # the defaults
    big = orjson.dumps({**COUNTER_TASK, "pad": "x" * (DEFAULT_MAX_TASK_BYTES - 100)})
    assert DEFAULT_MAX_TASK_BYTES - 100 < len(big) <= DEFAULT_MAX_TASK_BYTES
    fits = DEFAULT_MAX_TOTAL_TASK_BYTES // len(big)
    assert fits <= 512  # a bound a 2-core machine survives: 512 MB at most
    headers = {"content-type": "application/json"}
    with BackgroundServer(app) as server:
        async with aiohttp.ClientSession(base_url=server.url) as http:
            tokens = []
            for _ in range(fits):
                async with http.post("/seed_session", data=big, headers=headers) as seeded:
                    assert seeded.status == 200
                    tokens.append(seeded.headers["x-palaestra-session"])
            async with http.post("/seed_session", data=big, headers=headers) as refused:
                answer = await refused.json()
                assert refused.status == 503  # before: admitted, up to 32,768 of them
                assert refused.headers["Retry-After"] == "1"
            assert answer["error"]["type"] == "server_busy"
            assert "max_total_task_bytes" in answer["error"]["message"]
            small = orjson.dumps(COUNTER_TASK)
            async with http.post("/seed_session", data=small, headers=headers) as seeded:
                assert seeded.status == 200  # a small task still fits beside them
            async with http.get("/") as health:
                held = await health.json()
            assert held["task_bytes"] == fits * len(big) + len(small)
            assert held["max_total_task_bytes"] == DEFAULT_MAX_TOTAL_TASK_BYTES
            assert held["refused_sessions"] == 1
            status, _, _ = await _post(http, "/close_session", {}, tokens[0])
            assert status == 200
            async with http.post("/seed_session", data=big, headers=headers) as again:
                assert again.status == 200  # closing a session gave its bytes back
    assert app.state.client.sessions.held_bytes == 0  # the shutdown closed every session


async def test_a_close_in_the_newest_nemo_gym_form_closes_the_cookie_session_and_names_it() -> None:
    app = environment_app(Counter())
    sessions = app.state.client.sessions
    typed = {"resources_session_id": "rs-1", "episode_id": {"rollout_id": "r1", "attempt": 0}}
    jar = aiohttp.CookieJar(unsafe=True)
    with BackgroundServer(app) as server:
        await closes_in_the_newest_form(server.url, jar, sessions, typed)


async def closes_in_the_newest_form(
    url: str, jar: aiohttp.CookieJar, sessions: Any, typed: JsonDict
) -> None:
    async with aiohttp.ClientSession(base_url=url, cookie_jar=jar) as http:
        async with http.post("/seed_session", json=COUNTER_TASK) as seeded:
            assert seeded.status == 200
        assert len(sessions) == 1
        for _ in range(2):  # a repeated close succeeds, as that form requires
            async with http.post("/close_session", json=typed) as closed:
                assert closed.status == 200
                assert await closed.json() == {"resources_session_id": "rs-1"}  # before: {}
            assert len(sessions) == 0
        for wrong, field in (
            ({**typed, "resources_session_id": ""}, "resources_session_id"),
            ({"resources_session_id": "rs-1"}, "episode_id"),
            ({**typed, "episode_id": {"attempt": 1}}, "episode_id"),
        ):
            async with http.post("/close_session", json=wrong) as refused:
                assert refused.status == 422
                assert field in (await refused.json())["error"]["message"]
    async with aiohttp.ClientSession(base_url=url) as http:  # no cookie
        status, answer, _ = await _post(http, "/close_session", typed)
        assert (status, answer) == (200, {"resources_session_id": "rs-1"})
        _, _, seeded = await _post(http, "/seed_session", COUNTER_TASK)
        token = seeded.headers["x-palaestra-session"]
        assert (await _post(http, "/close_session", {}, token))[:2] == (200, {})
        status, answer, _ = await _post(http, "/close_session", {}, token)
        assert status == 404 and answer["error"]["type"] == "session_lost"  # as before


@pytest.mark.parametrize("workers", [None, 2])
def test_a_served_environment_s_version_is_announced_and_recorded_in_every_row(
    tmp_path: Path, workers: int | None
) -> None:
    """In this process, and with worker processes (each reads the version from the server
    as the run's identity did: a difference would refuse the run)."""
    import palaestra
    from palaestra.envs.weather.environment import Weather
    from tests.cli.test_collect_cli import many_tasks, rows, weather_script
    from tests.support.scripted_model import ScriptedModelServer

    class Weather4(Weather):
        name = "weather"
        version = 4

    tasks = many_tasks(tmp_path / "tasks.jsonl", 2)
    with (
        ScriptedModelServer(weather_script()) as model,
        BackgroundServer(environment_app(Weather4())) as env,
    ):
        summary = palaestra.collect(
            env_url=env.url,
            model=model.url,
            input=tasks,
            output=tmp_path / "o.jsonl",
            workers=workers,
        )
    assert summary.done == 2
    assert [r["_palaestra"]["env_version"] for r in rows(tmp_path / "o.jsonl")] == [4, 4]
    identity = orjson.loads((tmp_path / "o_run.json").read_bytes())
    assert identity["env"] == {"url": env.url, "version": 4}
