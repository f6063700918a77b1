"""Aborted generations are continued, never taken for answers: against a scripted engine that
aborts every generation in flight at each weight update, answering exactly as vLLM does."""

from __future__ import annotations

import asyncio
import re
import threading
from typing import Any

import pytest

from palaestra import Environment, LocalEnvironmentClient, Session, tool
from palaestra.agents import ToolCallingAgent
from palaestra.errors import ModelError, ModelTimeout
from palaestra.models import ModelConfig, build_model
from palaestra.models.openai.resume import MAX_RESUMPTIONS
from palaestra.training import RolloutSampler
from palaestra.training.tokens import check_contiguity
from palaestra.types import AgentResult, JsonDict, function_calls, output_text
from palaestra.wire.rows import PARAMS
from tests.support.scripted_model import (
    ScriptedModelServer,
    text_response,
    tool_call_response,
)
from tests.support.toy_tokenizer import IM_END, ToyTokenizer

_QUESTION = re.compile(r"What is (\d+)\+(\d+)\?")


class Adder(Environment):
    """Add numbers with a tool."""

    def seed(self, task: JsonDict) -> int:
        return int(task["answer"])

    @tool
    def add(self, a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def verify(self, session: Session, response: JsonDict) -> float:
        return 1.0 if output_text(response).strip() == f"The sum is {session.state}." else 0.0


def _reply_text(a: int, b: int, after_tool: bool) -> str:
    return f"The sum is {a + b}." if after_tool else ""


def _script(params: JsonDict) -> JsonDict:
    """Call the tool, then answer from its output: decided by the conversation so far, so
    concurrent rollouts each get their own answers."""
    text = str(params.get("prompt") or params.get("input"))
    found = _QUESTION.search(text)
    assert found is not None, text
    a, b = int(found[1]), int(found[2])
    if "<|im_start|>tool" in text or "function_call_output" in text:
        return text_response(f"The sum is {a + b}.")
    return tool_call_response("add", f'{{"a": {a}, "b": {b}}}', call_id="call_1")


def _task(a: int, b: int) -> JsonDict:
    return {"responses_create_params": {"input": f"What is {a}+{b}?"}, "answer": a + b}


def _planned_log_probs(count: int) -> list[float]:
    """The log-probs the scripted model samples, by position in the generation."""
    return [-0.01 * (1 + i % 7) for i in range(count)]


class Updates:
    """Weight updates every ``every`` seconds, each pausing the engine ``pause`` seconds.

    With ``while_decoding``, each update waits for a generation to be decoding and aborts it
    (or, once the test is done, does nothing): a test that needs aborts gets them even when a
    loaded machine delays the updates past a whole generation."""

    def __init__(
        self,
        server: ScriptedModelServer,
        every: float,
        pause: float,
        *,
        while_decoding: bool = False,
    ) -> None:
        self.server, self.every, self.pause = server, every, pause
        self._stop = threading.Event()
        self._until = self._stop.is_set if while_decoding else None
        self.aborted: list[int] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.aborted.append(self.server.weight_update(self.pause, self._until))

    def __enter__(self) -> Updates:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _extends(prompt: list[int], call: JsonDict) -> bool:
    """Whether ``prompt`` is ``call``'s prompt followed by a part of its generation."""
    whole = call["prompt_token_ids"] + call["generation_token_ids"]
    return (
        len(call["prompt_token_ids"]) <= len(prompt) < len(whole) and whole[: len(prompt)] == prompt
    )


async def _rollout(server: ScriptedModelServer, task: JsonDict, **options: Any) -> AgentResult:
    config = ModelConfig(url=server.url, model="scripted-model", max_retries=0, options=options)
    model = build_model(config)
    try:
        result = await ToolCallingAgent().run(task, LocalEnvironmentClient(Adder()), model)
        result.timings["resumptions"] = model.stats.resumptions
        return result
    finally:
        await model.aclose()


async def test_an_aborted_token_mode_call_is_resumed_from_its_ids_into_one_generation() -> None:
    tokenizer = ToyTokenizer()
    with ScriptedModelServer(_script, api="chat", tokenizer=tokenizer, decode_time=0.02) as server:
        with Updates(server, every=0.15, pause=0.05, while_decoding=True) as updates:
            result = await _rollout(server, _task(20, 22), token_mode=True)
        sent = server.bodies("/v1/completions")
        aborted, continued = server.engine.aborted, server.engine.continued
    assert sum(updates.aborted) == aborted >= 1 and continued == aborted
    assert result.failure is None and result.verdict is not None and result.verdict.reward == 1.0
    assert result.model_calls == 2 and result.tool_calls == 1
    assert result.timings["resumptions"] == aborted
    assert len(sent) == 2 + aborted  # each resumption one more request
    assert result.response is not None
    calls = [item for item in result.response["output"] if "generation_token_ids" in item]
    for call in calls:
        generated = call["generation_token_ids"]
        # every id and log-prob the engine sampled, in order, across the segments
        assert generated[-1] == IM_END
        assert call["generation_log_probs"] == _planned_log_probs(len(generated))
    # each resumption sent the call's prompt followed by the ids so far, nothing re-rendered
    for body in sent:
        prompt = body["prompt"]
        (owner,) = [c for c in calls if _extends(prompt, c)]
        start = len(owner["prompt_token_ids"])
        assert prompt[start:] == owner["generation_token_ids"][: len(prompt) - start]
    assert check_contiguity(result.response).contiguous


async def test_64_rollouts_in_flight_through_weight_updates_lose_nothing() -> None:
    tokenizer = ToyTokenizer()
    tasks = [_task(a, a + 1) for a in range(8)]
    with ScriptedModelServer(_script, api="chat", tokenizer=tokenizer, decode_time=0.004) as server:
        async with RolloutSampler(
            Adder(),
            tasks=tasks,
            group_size=8,
            policy=server.url,
            concurrency=64,
            on_failure="mask",
        ) as sampler:
            with Updates(server, every=0.1, pause=0.02) as updates:
                groups = await sampler.batch()
            resumptions = sampler.model.stats.resumptions
        peak = server.peak_in_flight
        aborted, continued = server.engine.aborted, server.engine.continued
    assert len(updates.aborted) >= 2 and aborted >= 64  # every update hit calls in flight
    assert peak >= 64 and continued == aborted == resumptions
    assert len(groups) == 8
    for group in groups:
        assert not group.failures and len(group.rollouts) == 8
        for rollout in group.rollouts:
            assert rollout.reward == 1.0
            assert rollout.contiguity is None or rollout.contiguity.contiguous
            masked = [i for i, bit in enumerate(rollout.loss_mask) if bit]
            # the mask covers exactly the sampled tokens: two calls, each its planned log-probs
            sampled = [rollout.log_probs[i] for i in masked]
            first_end = rollout.turn_ends[0] - rollout.prompt_length + 1
            assert sampled[:first_end] == _planned_log_probs(first_end)
            assert sampled[first_end:] == _planned_log_probs(len(sampled) - first_end)


async def test_an_aborted_chat_call_continues_its_final_message_and_reads_the_joined_text() -> None:
    tokenizer = ToyTokenizer()
    with ScriptedModelServer(_script, api="chat", tokenizer=tokenizer, decode_time=0.02) as server:
        with Updates(server, every=0.15, pause=0.05, while_decoding=True):
            result = await _rollout(server, _task(20, 22))
        sent = server.bodies("/v1/chat/completions")
        aborted, continued = server.engine.aborted, server.engine.continued
    assert aborted >= 1 and continued == aborted == result.timings["resumptions"]
    # a tool call split by an abort is read from the joined text: the tool ran, the answer is whole
    assert result.failure is None and result.verdict is not None and result.verdict.reward == 1.0
    assert result.tool_calls == 1 and result.model_calls == 2
    resumed = [body for body in sent if body.get("continue_final_message")]
    assert len(resumed) == aborted
    for body in resumed:
        assert body["add_generation_prompt"] is False
        assert body["messages"][-1]["role"] == "assistant"


async def test_return_tokens_resumes_contiguously_when_the_server_re_tokenises_the_same() -> None:
    tokenizer = ToyTokenizer(merges=False)
    with ScriptedModelServer(_script, api="chat", tokenizer=tokenizer, decode_time=0.02) as server:
        with Updates(server, every=0.15, pause=0.05, while_decoding=True):
            result = await _rollout(server, _task(20, 22), return_tokens=True)
        aborted = server.engine.aborted
    assert aborted >= 1 and result.failure is None and result.response is not None
    calls = [item for item in result.response["output"] if "generation_token_ids" in item]
    for call in calls:
        assert call["generation_log_probs"] == _planned_log_probs(len(call["generation_token_ids"]))
    assert check_contiguity(result.response).contiguous


async def test_return_tokens_fails_a_resumption_the_server_re_tokenised_naming_token_mode() -> None:
    # The merged id '{"' is sampled as one id and re-tokenised as two when the partial text
    # comes back as the final message: the joined call would not be what the policy sampled.
    tokenizer = ToyTokenizer()
    server = ScriptedModelServer(_script, api="chat", tokenizer=tokenizer, decode_time=0.02)
    with server, Updates(server, every=0.15, pause=0.0):
        result = await _rollout(server, _task(20, 22), return_tokens=True)
    assert result.failure is not None and result.verdict is None
    assert "re-tokenised the text so far differently" in result.failure.reason
    assert "use token_mode" in result.failure.reason


def _always_aborting(route: str, answer: JsonDict) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from palaestra.http.json import JSONResponse

    async def handler(request: Request) -> Response:
        return JSONResponse(answer)

    return Starlette(routes=[Route(route, handler, methods=["POST"])])


_ABORTED_CHAT: JsonDict = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "par", "tool_calls": []},
            "finish_reason": "abort",
            "stop_reason": None,
        }
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


async def test_a_call_aborted_past_the_bound_is_a_model_error_naming_why() -> None:
    from palaestra.http.runner import BackgroundServer

    with BackgroundServer(_always_aborting("/v1/chat/completions", _ABORTED_CHAT)) as server:
        config = ModelConfig(url=f"{server.url}/v1", model="m", api="chat", max_retries=0)
        model = build_model(config)
        try:
            with pytest.raises(ModelError, match=f"aborted the same call {MAX_RESUMPTIONS + 1} "):
                await model.respond({"input": "hi"})
        finally:
            await model.aclose()
    assert model.stats.resumptions == MAX_RESUMPTIONS
    assert model.stats.requests == MAX_RESUMPTIONS + 1


async def test_max_tokens_bounds_the_whole_call_across_resumptions() -> None:
    from palaestra.http.runner import BackgroundServer

    with BackgroundServer(_always_aborting("/v1/chat/completions", _ABORTED_CHAT)) as server:
        config = ModelConfig(url=f"{server.url}/v1", model="m", api="chat", max_retries=0)
        model = build_model(config)
        try:
            response = await model.respond({"input": "hi", "max_output_tokens": 3})
        finally:
            await model.aclose()
    # one token per segment: three segments spend the budget, and the call ends as cut off
    assert model.stats.requests == 3 and model.stats.resumptions == 2
    assert response["status"] == "incomplete"
    assert output_text(response) == "parparpar"
    assert response["usage"]["output_tokens"] == 3  # each segment's one token, counted once


async def test_a_cancelled_responses_answer_with_output_is_asked_again() -> None:
    from palaestra.http.runner import BackgroundServer

    cancelled = {**text_response("par"), "status": "cancelled"}
    answers = iter([cancelled, cancelled, text_response("whole")])

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from palaestra.http.json import JSONResponse

    async def handler(request: Request) -> Response:
        return JSONResponse(next(answers))

    app = Starlette(routes=[Route("/v1/responses", handler, methods=["POST"])])
    with BackgroundServer(app) as server:
        config = ModelConfig(url=f"{server.url}/v1", model="m", api="responses", max_retries=0)
        model = build_model(config)
        try:
            response = await model.respond({"input": "hi"})
        finally:
            await model.aclose()
    assert output_text(response) == "whole" and model.stats.resumptions == 2


async def test_a_paused_engine_is_waited_for_within_request_timeout_plus_pause_deadline() -> None:
    tokenizer = ToyTokenizer()
    # A generation takes ~0.3 s here, well inside either limit: only the pause can exceed one.
    # The engine holds the resumption 2.5 s: past a request timeout of 1 s alone, within it
    # plus a pause deadline of 30 s, past it plus one of 0.5 s.
    for timeout, deadline, fails in ((30.0, 0.0, False), (1.0, 30.0, False), (1.0, 0.5, True)):
        server = ScriptedModelServer(_script, api="chat", tokenizer=tokenizer, decode_time=0.006)
        with server:
            config = ModelConfig(
                url=server.url,
                model="scripted-model",
                max_retries=0,
                request_timeout=timeout,
                pause_deadline=deadline,
                options={"token_mode": True},
            )
            model = build_model(config)
            try:
                call = asyncio.ensure_future(model.respond(_task(2, 3)[PARAMS]))
                while server.engine.in_flight == 0:  # decoding: the update will abort it
                    await asyncio.sleep(0.005)
                await asyncio.to_thread(server.weight_update, 2.5)
                if fails:
                    with pytest.raises(ModelTimeout):
                        await call
                else:
                    response = await call
                    assert function_calls(response)[0]["name"] == "add"
                    stats = model.stats  # the abort is a pause, not a retry
                    assert (stats.resumptions, stats.paused_calls, stats.retries) == (1, 1, 0)
            finally:
                await model.aclose()
        assert server.engine.aborted == 1


async def test_a_pool_reports_each_endpoint_s_resumptions() -> None:
    from palaestra.http.runner import BackgroundServer

    app = _always_aborting("/v1/chat/completions", _ABORTED_CHAT)
    with BackgroundServer(app) as one, BackgroundServer(app) as two:
        urls = [f"{one.url}/v1", f"{two.url}/v1"]
        pool = build_model(ModelConfig(urls=urls, model="m", api="chat", max_retries=0))
        try:
            response = await pool.respond({"input": "hi", "max_output_tokens": 3})
        finally:
            await pool.aclose()
    assert output_text(response) == "parparpar"
    stats = pool.endpoint_stats()  # type: ignore[attr-defined]
    assert sorted(entry["resumptions"] for entry in stats) == [0, 2]  # on the one it ran on
