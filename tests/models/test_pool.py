"""The model pool over real scripted servers: stickiness, least-loaded choice, health, counts."""

from __future__ import annotations

import asyncio
import threading

import pytest

from palaestra.errors import ModelError, ModelUnreachable
from palaestra.models import build_model
from palaestra.models.affinity import rollout_scope
from palaestra.models.pool import FAILURES_TO_REMOVE, ModelPool
from palaestra.spec import ModelConfig
from palaestra.types import JsonDict
from tests.support.network import free_port
from tests.support.scripted_model import ScriptedFault, ScriptedModelServer, text_response

RESPONSES = "/v1/responses"


def answer(params: JsonDict) -> JsonDict:
    return text_response("ok")


def pool_of(*urls: str, **fields: object) -> ModelPool:
    fields = {"api": "responses", "retry_delay": 0, **fields}
    config = ModelConfig(urls=list(urls), **fields)  # type: ignore[arg-type]
    pool = build_model(config)
    assert isinstance(pool, ModelPool)
    return pool


def params(text: str = "hi") -> JsonDict:
    return {"input": [{"role": "user", "content": text}]}


async def test_a_rollout_stays_on_its_endpoint() -> None:
    with ScriptedModelServer(answer) as a, ScriptedModelServer(answer) as b:
        pool = pool_of(a.url, b.url)
        try:
            for _ in range(3):  # three rollouts of three calls each
                with rollout_scope() as scope:
                    for _ in range(3):
                        await pool.respond(params())
                assert scope.urls is not None and len(scope.urls) == 1
        finally:
            await pool.aclose()
        # Sequential rollouts: ties go round-robin, and each rollout's calls stay together.
        assert sorted([len(a.bodies(RESPONSES)), len(b.bodies(RESPONSES))]) == [3, 6]
        stats = {entry["url"]: entry for entry in pool.endpoint_stats()}
        assert stats[a.url]["calls"] == len(a.bodies(RESPONSES))
        assert stats[b.url]["calls"] == len(b.bodies(RESPONSES))
        assert sum(entry["rollouts"] for entry in stats.values()) == 3


async def test_a_new_rollout_goes_to_the_least_loaded_endpoint() -> None:
    busy = threading.Event()
    release = threading.Event()

    def slow_once(params: JsonDict) -> JsonDict | ScriptedFault:
        if "hold" in str(params["input"]):
            busy.set()
            release.wait(10)
        return answer(params)

    with ScriptedModelServer(slow_once) as a, ScriptedModelServer(slow_once) as b:
        pool = pool_of(a.url, b.url)
        try:
            with rollout_scope() as held:
                holding = asyncio.ensure_future(pool.respond(params("hold")))
                await asyncio.to_thread(busy.wait, 10)
            for _ in range(4):  # each new rollout finds one call in flight on the held endpoint
                with rollout_scope() as scope:
                    await pool.respond(params())
                assert scope.urls is not None and held.urls is not None
                assert scope.urls != held.urls
            release.set()
            await holding
        finally:
            release.set()
            await pool.aclose()
        stats = {entry["url"]: entry for entry in pool.endpoint_stats()}
        assert held.urls is not None
        assert stats[held.urls[0]]["calls"] == 1
        assert stats[held.urls[0]]["in_flight_peak"] == 1


async def test_calls_outside_a_rollout_spread_over_the_endpoints() -> None:
    with ScriptedModelServer(answer) as a, ScriptedModelServer(answer) as b:
        pool = pool_of(a.url, b.url)
        try:
            for _ in range(4):
                await pool.respond(params())
        finally:
            await pool.aclose()
        assert len(a.bodies(RESPONSES)) == len(b.bodies(RESPONSES)) == 2


async def test_an_endpoint_answering_5xx_is_taken_out_and_its_calls_move() -> None:
    broken = ScriptedFault(status=503, body={"error": {"message": "overloaded"}})
    with ScriptedModelServer(answer) as good, ScriptedModelServer(lambda p: broken) as bad:
        pool = pool_of(bad.url, good.url)
        try:
            moved = []
            for _ in range(6):
                with rollout_scope() as scope:
                    await pool.respond(params())
                    await pool.respond(params())
                moved.append(scope.urls)
            assert not pool.endpoints[0].healthy
        finally:
            await pool.aclose()
        # Every rollout that started on the broken endpoint moved once, then stayed.
        assert [bad.url, good.url] in moved
        assert all(urls in ([good.url], [bad.url, good.url]) for urls in moved)
        assert len(bad.bodies(RESPONSES)) == FAILURES_TO_REMOVE  # then it was out
        stats = {entry["url"]: entry for entry in pool.endpoint_stats()}
        assert stats[bad.url]["failures"] == FAILURES_TO_REMOVE
        assert stats[bad.url]["removed"] == 1
        assert stats[good.url]["retries"] == FAILURES_TO_REMOVE
        assert stats[good.url]["calls"] == len(good.bodies(RESPONSES)) == 12
        assert pool.stats.requests == 12
        assert pool.stats.retries == FAILURES_TO_REMOVE


async def test_a_client_error_is_not_retried_elsewhere() -> None:
    refused = ScriptedFault(status=422, body={"error": {"message": "bad tool schema"}})
    with ScriptedModelServer(lambda p: refused) as a, ScriptedModelServer(lambda p: refused) as b:
        pool = pool_of(a.url, b.url)
        try:
            with pytest.raises(ModelError, match="422"):
                await pool.respond(params())
        finally:
            await pool.aclose()
        assert len(a.bodies(RESPONSES)) + len(b.bodies(RESPONSES)) == 1
        assert all(endpoint.healthy for endpoint in pool.endpoints)


async def test_a_stopped_endpoint_is_probed_and_put_back() -> None:
    port = free_port()
    with ScriptedModelServer(answer) as a:
        restarted = ScriptedModelServer(answer, port=port)
        pool = pool_of(a.url, f"http://127.0.0.1:{port}/v1")
        try:
            for _ in range(FAILURES_TO_REMOVE + 1):  # the dead one fails, each call moves
                with rollout_scope():
                    await pool.respond(params())
            dead = pool.endpoints[1]
            assert not dead.healthy
            with restarted:
                while not dead.healthy:  # the probe finds it back (every 0.1 s at first)
                    await asyncio.sleep(0.05)
                with rollout_scope() as held:
                    blocking = asyncio.ensure_future(pool.respond(params()))
                    await asyncio.sleep(0)
                with rollout_scope() as scope:
                    await pool.respond(params())
                await blocking
            assert held.urls is not None and scope.urls is not None
            assert {held.urls[0], scope.urls[0]} == {a.url, dead.url}
            assert restarted.bodies(RESPONSES)
        finally:
            await pool.aclose()


async def test_every_endpoint_down_is_model_unreachable() -> None:
    urls = [f"http://127.0.0.1:{free_port()}/v1" for _ in range(2)]
    pool = pool_of(*urls, max_retries=3)
    try:
        with pytest.raises(ModelUnreachable):
            await pool.check()
        with pytest.raises(ModelUnreachable, match="4 attempt"):
            await pool.respond(params())
    finally:
        await pool.aclose()
    assert sum(entry["calls"] for entry in pool.endpoint_stats()) == 4
    assert pool.stats.failures == 1


async def test_check_takes_out_an_endpoint_that_does_not_answer() -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with ScriptedModelServer(answer) as a:
        pool = pool_of(dead, a.url)
        try:
            await pool.check()
            assert [endpoint.healthy for endpoint in pool.endpoints] == [False, True]
            for _ in range(3):
                await pool.respond(params())
        finally:
            await pool.aclose()
        assert len(a.bodies(RESPONSES)) == 3
        assert pool.endpoint_stats()[0]["calls"] == 0


@pytest.mark.parametrize(
    ("api", "garbage"),
    [
        ("responses", ScriptedFault(status=200, raw_body=b"not json at all")),
        ("chat", ScriptedFault(status=200, raw_body=b'{"id": "chatcmpl-1", "choices": []}')),
    ],
)
async def test_a_replica_answering_no_completion_is_taken_out_and_its_calls_move(
    api: str, garbage: ScriptedFault
) -> None:
    with (
        ScriptedModelServer(lambda p: garbage, api=api) as bad,  # type: ignore[arg-type]
        ScriptedModelServer(answer, api=api) as good,  # type: ignore[arg-type]
    ):
        pool = pool_of(bad.url, good.url, api=api, max_retry_delay=0)
        try:
            moved = []
            for _ in range(6):
                with rollout_scope() as scope:
                    await pool.respond(params())
                moved.append(scope.urls)
            assert not pool.endpoints[0].healthy
        finally:
            await pool.aclose()
    assert [bad.url, good.url] in moved
    assert all(urls in ([good.url], [bad.url, good.url]) for urls in moved)
    stats = {entry["url"]: entry for entry in pool.endpoint_stats()}
    assert stats[bad.url]["failures"] == FAILURES_TO_REMOVE
    assert stats[bad.url]["removed"] == 1


async def test_an_endpoint_put_back_by_its_probe_is_taken_out_again_by_one_failure() -> None:
    garbage = ScriptedFault(status=200, raw_body=b"not json")
    with ScriptedModelServer(lambda p: garbage) as bad, ScriptedModelServer(answer) as good:
        pool = pool_of(bad.url, good.url)
        broken = pool.endpoints[0]
        try:
            for _ in range(20):
                with rollout_scope():
                    await pool.respond(params())
                if not broken.healthy:
                    break
            assert len(bad.bodies(RESPONSES)) == FAILURES_TO_REMOVE
            while not broken.healthy:  # its GET /models answers: back on probation
                await asyncio.sleep(0.05)
            for _ in range(20):  # rollouts until one is sent there: it fails once, and is out
                with rollout_scope():
                    await pool.respond(params())
                if not broken.healthy:
                    break
            assert not broken.healthy
        finally:
            await pool.aclose()
        assert broken.removed == 2
        assert len(bad.bodies(RESPONSES)) == FAILURES_TO_REMOVE + 1


@pytest.mark.parametrize("api", ["responses", "chat"])
async def test_a_replica_answering_empty_answers_at_once_gets_few_of_the_rollouts(
    api: str,
) -> None:
    def empty(params: JsonDict) -> JsonDict:
        return text_response("")  # a valid completion: no text, no tool call, at once

    def good(params: JsonDict) -> ScriptedFault:
        return ScriptedFault(status=200, body=text_response("ok"), delay=0.05)

    async def rollout() -> JsonDict:
        with rollout_scope():
            return await pool.respond(params())

    with (
        ScriptedModelServer(empty, api=api) as hollow,  # type: ignore[arg-type]
        ScriptedModelServer(good, api=api) as sound,  # type: ignore[arg-type]
    ):
        pool = pool_of(hollow.url, sound.url, api=api)
        try:
            gate = asyncio.Semaphore(8)

            async def limited() -> JsonDict:
                async with gate:
                    return await rollout()

            answers = await asyncio.gather(*(limited() for _ in range(60)))
        finally:
            await pool.aclose()
        route = RESPONSES if api == "responses" else "/v1/chat/completions"
        to_hollow, to_sound = len(hollow.bodies(route)), len(sound.bodies(route))
    assert to_hollow + to_sound == 60 == len(answers)  # an empty answer is still an answer
    assert to_sound >= 45, (to_hollow, to_sound)
    stats = {entry["url"]: entry for entry in pool.endpoint_stats()}
    assert stats[hollow.url]["empty_answers"] == to_hollow and stats[hollow.url]["removed"] >= 1
    assert stats[sound.url]["empty_answers"] == 0 and stats[sound.url]["failures"] == 0


def test_a_url_given_with_and_without_its_slash_is_one_endpoint() -> None:
    one = ModelConfig(urls=["http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1/"])
    assert (one.url, one.urls) == ("http://127.0.0.1:8000/v1", [])
    two = ModelConfig(urls=["http://a:1/v1/", "http://b:1/v1", "http://a:1/v1"])
    assert (two.url, two.urls) == (None, ["http://a:1/v1/", "http://b:1/v1"])
