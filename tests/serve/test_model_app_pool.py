"""A model server over a pool keeps each rollout's calls on one endpoint when it can tell them
apart: by palaestra's rollout header, by ``X-Session-ID``, or by the cookie NeMo Gym's agents
send back."""

from __future__ import annotations

from collections.abc import Iterator

import aiohttp
import pytest

from palaestra.models import build_model
from palaestra.models.affinity import rollout_scope
from palaestra.models.openai.responses import OpenAIResponsesModel
from palaestra.serve import BackgroundServer, model_app
from palaestra.spec import ModelConfig
from palaestra.types import JsonDict
from palaestra.wire.protocol import ROLLOUT_COOKIE, SESSION_ID_HEADER
from tests.support.scripted_model import ScriptedModelServer, text_response

ROLLOUTS = ("r0", "r1", "r2", "r3")


def _echo(params: JsonDict) -> JsonDict:
    return text_response("ok")


@pytest.fixture
def served_pool() -> Iterator[tuple[str, ScriptedModelServer, ScriptedModelServer]]:
    """(the pooled model server's /v1 URL, its two endpoints)."""
    with ScriptedModelServer(_echo) as a, ScriptedModelServer(_echo) as b:
        pool = build_model(ModelConfig(urls=[a.url, b.url], api="responses", model="m"))
        with BackgroundServer(model_app(pool, model_id="m")) as proxy:
            yield f"{proxy.url}/v1", a, b


def _holders(a: ScriptedModelServer, b: ScriptedModelServer, rollout: str) -> list[tuple[str, int]]:
    """Which endpoints got calls of ``rollout`` (inputs start with its name), and how many."""
    found = []
    for server in (a, b):
        count = sum(
            str(body["input"]).startswith(rollout) for body in server.bodies("/v1/responses")
        )
        if count:
            found.append((server.url, count))
    return found


async def test_a_palaestra_client_s_rollouts_each_stay_on_one_endpoint_of_a_served_pool(
    served_pool: tuple[str, ScriptedModelServer, ScriptedModelServer],
) -> None:
    url, a, b = served_pool
    model = OpenAIResponsesModel(ModelConfig(url=url, model="m"))
    try:
        for rollout in ROLLOUTS:  # one after another: unnamed calls would alternate
            with rollout_scope():
                for turn in range(3):
                    await model.respond({"input": f"{rollout} turn {turn}"})
    finally:
        await model.aclose()
    for rollout in ROLLOUTS:
        holders = _holders(a, b, rollout)
        assert len(holders) == 1 and holders[0][1] == 3, (rollout, holders)
    assert len(a.bodies("/v1/responses")) == len(b.bodies("/v1/responses")) == 6  # still spread


async def test_a_client_that_sends_the_model_server_s_cookies_back_stays_on_one_endpoint(
    served_pool: tuple[str, ScriptedModelServer, ScriptedModelServer],
) -> None:
    url, a, b = served_pool
    # As NeMo Gym's simple agent does: no cookie jar; each model call sends the cookies the
    # previous answer of the same rollout set, the first call none.
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
        for rollout in ROLLOUTS:
            cookies = None
            for turn in range(3):
                body = {"input": f"{rollout} turn {turn}"}
                async with http.post(f"{url}/responses", json=body, cookies=cookies) as answer:
                    assert answer.status == 200
                    cookies = answer.cookies
                    assert ROLLOUT_COOKIE in cookies
    for rollout in ROLLOUTS:
        holders = _holders(a, b, rollout)
        assert len(holders) == 1 and holders[0][1] == 3, (rollout, holders)


async def test_a_client_that_sends_only_x_session_id_stays_on_one_endpoint(
    served_pool: tuple[str, ScriptedModelServer, ScriptedModelServer],
) -> None:
    url, a, b = served_pool
    # As verifiers, prime-rl or SkyRL do: the rollout named by X-Session-ID, no cookie kept.
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
        for rollout in ROLLOUTS:
            for turn in range(3):
                body = {"input": f"{rollout} turn {turn}"}
                headers = {SESSION_ID_HEADER: f"session-{rollout}"}
                async with http.post(f"{url}/responses", json=body, headers=headers) as answer:
                    assert answer.status == 200
                    assert ROLLOUT_COOKIE not in answer.cookies  # named: no cookie needed
    for rollout in ROLLOUTS:
        holders = _holders(a, b, rollout)
        assert len(holders) == 1 and holders[0][1] == 3, (rollout, holders)
    assert len(a.bodies("/v1/responses")) == len(b.bodies("/v1/responses")) == 6  # still spread


async def test_calls_that_name_no_rollout_are_spread_over_the_endpoints(
    served_pool: tuple[str, ScriptedModelServer, ScriptedModelServer],
) -> None:
    url, a, b = served_pool
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
        for turn in range(4):  # over Chat Completions: the same routing
            body = {"messages": [{"role": "user", "content": f"r0 turn {turn}"}]}
            async with http.post(f"{url}/chat/completions", json=body) as answer:
                assert answer.status == 200
    # one after another, each call least-loaded: ties alternate
    assert len(a.bodies("/v1/responses")) == len(b.bodies("/v1/responses")) == 2
