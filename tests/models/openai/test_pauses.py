"""Weight-update pauses are waits, not retries: rollouts run against a real scripted server
that pauses mid-run in each convention (429 or 503 with Retry-After, X-Agl-Paused, a request
held open, vLLM's abort), with no retry budget at all."""

from __future__ import annotations

import asyncio
import re
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from palaestra import Environment, LocalEnvironmentClient, Session, tool
from palaestra.agents import ToolCallingAgent
from palaestra.errors import ModelAuthError, ModelError
from palaestra.models import ModelConfig, build_model
from palaestra.models.base import Model
from palaestra.models.openai.pauses import PAUSED, retry_after
from palaestra.observe.metrics_counts import endpoint_stats
from palaestra.types import AgentResult, JsonDict, output_text
from tests.support.pausing_model import CONVENTIONS, Convention, Pausing
from tests.support.scripted_model import (
    ScriptedFault,
    ScriptedModelServer,
    text_response,
    tool_call_response,
)
from tests.support.toy_tokenizer import ToyTokenizer

_QUESTION = re.compile(r"What is (\d+)\+(\d+)\?")
ROLLOUTS = 12
PAUSE = 2.5


class Adder(Environment):
    """Add two numbers with a tool, then say the sum."""

    def seed(self, task: JsonDict) -> int:
        return int(task["answer"])

    @tool
    def add(self, a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def verify(self, session: Session, response: JsonDict) -> float:
        return 1.0 if output_text(response).strip() == f"The sum is {session.state}." else 0.0


def _script(params: JsonDict) -> JsonDict:
    """Call the tool, then say its result: read from the conversation, so concurrent rollouts
    each get their own answers."""
    text = str(params.get("prompt") or params.get("input"))
    found = _QUESTION.search(text)
    assert found is not None, text
    a, b = int(found[1]), int(found[2])
    if "<|im_start|>tool" in text or "function_call_output" in text:
        return text_response(f"The sum is {a + b}.")
    return tool_call_response("add", f'{{"a": {a}, "b": {b}}}', call_id="call_1")


def _task(a: int) -> JsonDict:
    return {"responses_create_params": {"input": f"What is {a}+{a + 1}?"}, "answer": 2 * a + 1}


def _model(url: str, **fields: object) -> Model:
    settings: dict[str, object] = {"max_retries": 0, "api": "responses", **fields}
    return build_model(ModelConfig(url=url, model="scripted-model", **settings))  # type: ignore[arg-type]


async def _rollouts(model: Model, count: int = ROLLOUTS) -> list[AgentResult]:
    env = LocalEnvironmentClient(Adder())
    return await asyncio.gather(
        *(ToolCallingAgent().run(_task(a), env, model) for a in range(count))
    )


def _all_scored(results: list[AgentResult]) -> None:
    for result in results:
        assert result.failure is None, result.failure
        assert result.verdict is not None and result.verdict.reward == 1.0


# --- recognising a pause ---------------------------------------------------------------------


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert retry_after("2.5") == 2.5
    assert retry_after(later, now=now.timestamp()) == pytest.approx(30.0)
    assert (
        retry_after(format_datetime(now - timedelta(seconds=5), usegmt=True), now=now.timestamp())
        == 0.0
    )
    assert retry_after("soon") is None and retry_after("-1") is None and retry_after(None) is None


# --- rollouts through a pause, with no retry budget -----------------------------------------


@pytest.mark.parametrize("convention", CONVENTIONS)
async def test_rollouts_with_no_retry_budget_wait_out_a_pause_in_each_convention(
    convention: Convention,
) -> None:
    # The pause begins on the 6th request: some rollouts are between their two calls, the
    # rest have not called yet. A held request outlasts the request timeout alone.
    script = Pausing(_script, convention, retry_after=0.5, pause_at=(6, PAUSE))
    with ScriptedModelServer(script) as server:
        model = _model(server.url, request_timeout=1.0, pause_deadline=30.0)
        try:
            started = time.monotonic()
            results = await _rollouts(model)
            took = time.monotonic() - started
        finally:
            await model.aclose()
    _all_scored(results)
    stats = model.stats
    assert script.paused_answers >= ROLLOUTS - 5  # every rollout still to call met the pause
    assert took >= PAUSE * 0.9
    assert (stats.retries, stats.failures) == (0, 0)
    if convention == "held":  # the client saw nothing but slow answers
        assert stats.paused_calls == 0
    else:
        assert stats.paused_calls >= ROLLOUTS - 5
        # each paused request slept until the pause ended, give or take one wait
        assert stats.paused_seconds >= (ROLLOUTS - 5) * PAUSE * 0.5


async def test_rollouts_through_a_vllm_abort_and_hold_spend_no_retry_and_count_the_pause() -> None:
    tokenizer = ToyTokenizer()
    with ScriptedModelServer(_script, api="chat", tokenizer=tokenizer, decode_time=0.01) as server:
        model = _model(
            server.url,
            api="chat",
            request_timeout=1.0,
            pause_deadline=30.0,
            options={"token_mode": True},
        )
        try:
            running = asyncio.ensure_future(_rollouts(model))
            while server.engine.in_flight == 0:  # decoding: the update aborts them
                await asyncio.sleep(0.005)
            aborted = await asyncio.to_thread(server.weight_update, PAUSE)
            results = await running
        finally:
            await model.aclose()
    _all_scored(results)
    stats = model.stats
    assert aborted >= 1 and stats.resumptions == server.engine.continued >= aborted
    assert stats.paused_calls == stats.resumptions  # each aborted request met the pause once
    assert (stats.retries, stats.failures) == (0, 0)


# --- the pause deadline ---------------------------------------------------------------------


@pytest.mark.parametrize("convention", ["429", "agl"])
async def test_a_pause_past_the_deadline_fails_the_call_naming_the_pause(
    convention: Convention,
) -> None:
    script = Pausing(_script, convention, retry_after=0.2)
    script.pause(60)
    with ScriptedModelServer(script) as server:
        model = _model(server.url, pause_deadline=1.5)
        try:
            started = time.monotonic()
            with pytest.raises(ModelError) as caught:
                await model.respond(_task(1)["responses_create_params"])
            took = time.monotonic() - started
        finally:
            await model.aclose()
    assert 1.5 <= took < 4.0
    error = caught.value
    assert error.transient == PAUSED
    assert "still paused" in error.reason and "pause_deadline of 1.5 s" in error.reason
    assert (model.stats.failures, model.stats.retries, model.stats.paused_calls) == (1, 0, 1)


async def test_a_held_request_past_request_timeout_plus_pause_deadline_times_out() -> None:
    script = Pausing(_script, "held")
    script.pause(5)
    with ScriptedModelServer(script) as server:
        model = _model(server.url, request_timeout=0.5, pause_deadline=0.5)
        try:
            started = time.monotonic()
            with pytest.raises(ModelError) as caught:
                await model.respond(_task(1)["responses_create_params"])
            took = time.monotonic() - started
        finally:
            await model.aclose()
    assert caught.value.transient == "timeout"
    assert 1.0 <= took < 3.0


async def test_with_no_pause_deadline_a_pause_answer_is_a_retry_as_before() -> None:
    script = Pausing(_script, "429", retry_after=0.1)
    script.pause(60)
    with ScriptedModelServer(script) as server:
        model = _model(server.url, pause_deadline=0, max_retries=1, max_retry_delay=0.1)
        try:
            with pytest.raises(ModelError) as caught:
                await model.respond(_task(1)["responses_create_params"])
        finally:
            await model.aclose()
    assert "failed after 2 attempt(s)" in caught.value.reason
    assert (model.stats.retries, model.stats.paused_calls) == (1, 0)


async def test_a_429_without_retry_after_is_no_pause_and_spends_the_budget() -> None:
    fault = ScriptedFault(status=429, body={"error": {"message": "slow down"}})
    with ScriptedModelServer(lambda _: fault) as server:
        model = _model(server.url)
        try:
            with pytest.raises(ModelError) as caught:
                await model.respond(_task(1)["responses_create_params"])
        finally:
            await model.aclose()
    assert caught.value.transient == "http 429"
    assert model.stats.paused_calls == 0


# --- counted where the run reports ----------------------------------------------------------


async def test_paused_calls_and_seconds_reach_the_endpoint_counts() -> None:
    script = Pausing(_script, "503", retry_after=0.3)
    script.pause(0.5)
    with ScriptedModelServer(script) as server:
        model = _model(server.url)
        try:
            await model.respond(_task(1)["responses_create_params"])
        finally:
            await model.aclose()
    [entry] = endpoint_stats(model)
    assert entry["paused_calls"] == 1 and entry["paused_seconds"] >= 0.5
    assert entry["retries"] == 0


async def test_a_rejected_key_is_no_pause_whatever_its_headers_say() -> None:
    fault = ScriptedFault(status=401, headers={"X-Agl-Paused": "true", "Retry-After": "1"})
    with ScriptedModelServer(lambda _: fault) as server:
        model = _model(server.url)
        try:
            started = time.monotonic()
            with pytest.raises(ModelAuthError):
                await model.respond(_task(1)["responses_create_params"])
        finally:
            await model.aclose()
    assert time.monotonic() - started < 1.0 and model.stats.paused_calls == 0
