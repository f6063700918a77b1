"""AutoApiModel while the endpoint fails: one probe per run, then full concurrency."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from palaestra.errors import ModelAuthError, ModelError
from palaestra.models import ModelConfig
from palaestra.models.openai.auto_api import AutoApiModel
from palaestra.types import output_text
from tests.support.scripted_model import (
    ScriptedFault,
    ScriptedModelServer,
    fail_first,
    text_response,
)

RETRIES = 1
ATTEMPTS = RETRIES + 1


def plain(url: str, **fields: Any) -> ModelConfig:
    """An endpoint at ``url`` with the default retry policy."""
    return ModelConfig(url=url, **fields)


def fast(url: str, **fields: Any) -> ModelConfig:
    """An endpoint at ``url`` that retries RETRIES times without waiting long."""
    return plain(url, max_retries=RETRIES, retry_delay=0.0, max_retry_delay=0.0, **fields)


async def test_a_failing_endpoint_is_probed_once_then_called_at_full_concurrency() -> None:
    # Each answer is held a moment so that requests sent together are seen together.
    failing = ScriptedFault(status=500, delay=0.3)
    with ScriptedModelServer(lambda _: failing) as server:
        model = AutoApiModel(fast(server.url, model="m"))
        try:
            answers = await asyncio.gather(
                *(model.respond({"input": str(n)}) for n in range(8)), return_exceptions=True
            )
        finally:
            await model.aclose()
        routes = [route for route, _ in server.requests]
        peak = server.peak_in_flight
    assert all(isinstance(answer, ModelError) for answer in answers)
    # One budget per call, no extra probing; and after the one probe, the other seven were
    # in flight together (waiting behind the probe one at a time kept this at 1).
    assert routes == ["/v1/responses"] * (8 * ATTEMPTS)
    assert peak > 1
    assert model.api is None  # a 500 says nothing about which API the server speaks


async def test_a_transient_probe_failure_is_not_taken_for_a_missing_route() -> None:
    script = fail_first(ATTEMPTS, ScriptedFault(status=503), then=lambda _: text_response("ok"))
    with ScriptedModelServer(script) as server:
        model = AutoApiModel(fast(server.url, model="m"))
        try:
            answers = await asyncio.gather(
                *(model.respond({"input": str(n)}) for n in range(4)), return_exceptions=True
            )
            later = await model.respond({"input": "later"})
        finally:
            await model.aclose()
        routes = [route for route, _ in server.requests]
    assert isinstance(answers[0], ModelError)  # the probe's own rollout spent its budget
    assert [output_text(a) for a in answers[1:] if isinstance(a, dict)] == ["ok"] * 3
    assert output_text(later) == "ok"
    assert model.api == "responses"
    assert routes == ["/v1/responses"] * (ATTEMPTS + 4)


async def test_a_rejected_key_stops_the_probe_and_every_waiting_call() -> None:
    with ScriptedModelServer(lambda _: text_response("ok"), api_key="right") as server:
        model = AutoApiModel(fast(server.url, model="m", api_key="wrong"))
        try:
            answers = await asyncio.gather(
                *(model.respond({"input": str(n)}) for n in range(3)), return_exceptions=True
            )
        finally:
            await model.aclose()
        routes = [route for route, _ in server.requests]
    assert all(isinstance(answer, ModelAuthError) for answer in answers)
    assert routes == ["/v1/responses"] * 3  # one request each, none retried
    assert model.api is None


@pytest.mark.parametrize("api", ["responses", "chat"])
async def test_after_the_probe_decides_no_call_probes_again(api: str) -> None:
    with ScriptedModelServer(lambda _: text_response("ok"), api=api) as server:  # type: ignore[arg-type]
        model = AutoApiModel(fast(server.url, model="m"))
        try:
            await asyncio.gather(*(model.respond({"input": str(n)}) for n in range(5)))
        finally:
            await model.aclose()
        routes = [route for route, _ in server.requests]
    assert model.api == api
    probes = 1 if api == "chat" else 0  # the one 404 that found the route missing
    assert routes.count("/v1/responses") == probes + (5 if api == "responses" else 0)
    assert routes.count("/v1/chat/completions") == (5 if api == "chat" else 0)
