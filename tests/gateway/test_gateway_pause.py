"""Pausing the gateway for a weight update: calls in flight finish, new ones wait (not fail)."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import openai

from palaestra.gateway import Gateway
from palaestra.models.base import ModelStats
from palaestra.types import JsonDict
from tests.support.fake_model import say


class GatedModel:
    """A model whose answers wait until the test lets them go."""

    name = "gated"

    def __init__(self) -> None:
        self.stats = ModelStats()
        self.release = asyncio.Event()
        self.asked = 0

    async def respond(self, params: JsonDict) -> JsonDict:
        self.asked += 1
        await self.release.wait()
        return say(f"answer {self.asked}")

    async def check(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


async def _until(condition: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_a_pause_drains_calls_in_flight_and_holds_new_ones_until_resumed() -> None:
    model = GatedModel()
    async with Gateway(model) as gateway:
        rollout = gateway.open()
        client = openai.AsyncOpenAI(base_url=rollout.base_url, api_key=rollout.api_key)

        def ask(text: str) -> asyncio.Task[object]:
            messages = [{"role": "user", "content": text}]
            return asyncio.create_task(
                client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
            )

        in_flight = ask("first")
        await _until(lambda: model.asked == 1)
        pausing = asyncio.create_task(gateway.pause())
        await asyncio.sleep(0.2)
        assert not pausing.done()  # the call in flight has not finished: still draining
        held = ask("second")
        await asyncio.sleep(0.2)
        model.release.set()
        await asyncio.wait_for(pausing, 5)
        await in_flight
        await _until(lambda: gateway.counts.paused_calls == 1)
        await asyncio.sleep(0.2)
        assert model.asked == 1 and not held.done()  # held, not answered and not refused
        gateway.resume()
        answer = await asyncio.wait_for(held, 5)
    assert answer.choices[0].message.content == "answer 2"  # type: ignore[attr-defined]
    assert gateway.counts.pauses == 1 and gateway.counts.drain_seconds >= 0.3
    assert [call.error for call in rollout.calls] == [None, None]
    assert rollout.calls[1].latency_s >= 0.2  # its wait counts in its latency


async def test_the_admin_routes_pause_and_resume_only_with_the_admin_token() -> None:
    model = GatedModel()
    model.release.set()
    async with (
        Gateway(model, admin_token="trainer-secret") as gateway,
        aiohttp.ClientSession() as http,
    ):

        async def post(
            path: str, token: str | None, body: JsonDict | None = None
        ) -> tuple[int, JsonDict]:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            async with http.post(
                f"{gateway.url}{path}", json=body or {}, headers=headers
            ) as answer:
                return answer.status, await answer.json()

        assert (await post("/admin/pause", None))[0] == 401
        assert (await post("/admin/pause", "wrong"))[0] == 401
        assert not gateway.paused
        status, paused = await post("/admin/pause", "trainer-secret")
        assert status == 200 and paused["paused"] is True and gateway.paused
        status, _ = await post("/admin/resume", "trainer-secret")
        assert status == 200 and not gateway.paused
        status, opened = await post("/admin/rollouts", "trainer-secret", {"id": "run-7"})
        assert status == 200 and opened["base_url"] == f"{gateway.url}/r/run-7/v1"
        assert (await post("/admin/rollouts", "trainer-secret", {"id": "run-7"}))[0] == 409
        client = openai.AsyncOpenAI(base_url=opened["base_url"], api_key=opened["api_key"])
        await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
        headers = {"Authorization": "Bearer trainer-secret"}
        async with http.delete(f"{gateway.url}/admin/rollouts/run-7", headers=headers) as closed:
            described = await closed.json()
        assert [call["api"] for call in described["calls"]] == ["chat"]
        assert described["response"]["output"][-1]["producer"] == "policy"
        async with http.get(f"{gateway.url}/admin/stats", headers=headers) as stats:
            assert (await stats.json())["pauses"] == 1
        assert "run-7" not in gateway.rollouts


async def test_a_gateway_without_an_admin_token_serves_no_admin_route() -> None:
    async with (
        Gateway(GatedModel()) as gateway,
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.url}/admin/pause", json={}) as answer,
    ):
        assert answer.status == 404
