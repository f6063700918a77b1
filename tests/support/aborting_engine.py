"""An inference engine that aborts its generations at every weight update, as vLLM does.

``ScriptedModelServer(script, tokenizer=..., decode_time=...)`` answers ``/v1/completions``
(token-id prompts) and ``/v1/chat/completions`` through this engine: a generation is planned
from the script (the ids the "model" samples for the scripted answer) and takes ``decode_time``
seconds per token. ``server.weight_update(pause)`` is vLLM's ``POST /pause?mode=abort`` followed,
``pause`` seconds later, by ``POST /resume``: every generation in flight is answered at once,
HTTP 200, with the tokens decoded so far and ``finish_reason: "abort"`` (vLLM's non-streaming
shape: the partial ``text`` or ``message.content``, its ``token_ids`` and log-probs, ``usage``
counting them), and requests that arrive during the pause wait for the resume.

The engine is deterministic as a model is: asked to continue an aborted generation (a
completion whose prompt is the aborted call's prompt followed by the ids it had decoded, or a
chat request whose final assistant message is the text so far, with ``continue_final_message``)
it decodes the rest of the same generation. A continuation it does not recognise is answered
400, so a client that resumes from the wrong place fails loudly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from palaestra.models.chat_format import (
    chat_request_to_responses_params,
    response_to_chat_completion,
)
from palaestra.models.tool_formats import parse_hermes
from palaestra.types import JsonDict
from tests.support.toy_tokenizer import IM_END

if TYPE_CHECKING:
    from tests.support.scripted_model import ScriptedModelServer


@dataclass
class _Plan:
    """What is left of a generation to decode."""

    ids: list[int]
    log_probs: list[float]


class AbortingEngine:
    """The decoding loop of a ``ScriptedModelServer`` with ``decode_time`` (see the module)."""

    def __init__(self, server: ScriptedModelServer) -> None:
        self.server = server
        self.version = 0
        """Weight updates so far: the policy version now served."""
        self.aborted = 0
        """Generations answered ``abort`` so far."""
        self.continued = 0
        """Requests that continued an aborted generation."""
        self.in_flight = 0
        self.reports_version = False
        """Answer ``metadata.weight_version`` (the version serving), as SGLang does."""
        self._abort: asyncio.Event | None = None
        self._running: asyncio.Event | None = None
        self._resume: dict[Any, list[_Plan]] = {}
        """The rest of each aborted generation, by the request that continues it (a list:
        rollouts of one task can abort at one place with one prompt)."""

    def _events(self) -> tuple[asyncio.Event, asyncio.Event]:
        if self._abort is None or self._running is None:
            self._abort, self._running = asyncio.Event(), asyncio.Event()
            self._running.set()
        return self._abort, self._running

    def _keep(self, key: Any, plan: _Plan) -> None:
        self._resume.setdefault(key, []).append(plan)

    def _take(self, key: Any) -> _Plan | None:
        plans = self._resume.get(key)
        if not plans:
            return None
        plan = plans.pop()
        if not plans:
            del self._resume[key]
        return plan

    async def update(self, pause: float, until: Callable[[], bool] | None = None) -> int:
        """Abort what is decoding, pause ``pause`` seconds, serve the next version.

        With ``until``, first wait for a generation to be decoding (checked on the loop that
        decodes, so it cannot finish in between) and abort it; when ``until()`` turns true
        first, do nothing and answer 0. A test that needs an abort then gets one however
        slowly a loaded machine runs it."""
        if until is not None:
            while self.in_flight == 0:
                if until():
                    return 0
                await asyncio.sleep(0.002)
        abort, running = self._events()
        aborted = self.in_flight
        running.clear()
        self._abort = asyncio.Event()  # generations that start after this one are not aborted
        abort.set()
        self.version += 1
        if pause:
            await asyncio.sleep(pause)
        running.set()
        return aborted

    async def _decode(self, plan: _Plan, limit: int | None) -> tuple[int, str]:
        """Decode ``plan`` (at most ``limit`` tokens): how many tokens, and the finish."""
        _, running = self._events()
        await running.wait()  # a paused engine holds new requests until it resumes
        abort = self._abort
        assert abort is not None
        wanted = len(plan.ids) if limit is None else min(limit, len(plan.ids))
        finish = "stop" if wanted == len(plan.ids) else "length"
        loop = asyncio.get_running_loop()
        start = loop.time()
        self.in_flight += 1
        try:
            await asyncio.wait_for(abort.wait(), timeout=wanted * self.server.decode_time)
        except TimeoutError:
            # An update that came while the timeout was being delivered counted this
            # generation in flight: it is aborted, as the update said.
            if not abort.is_set():
                return wanted, finish
        finally:
            self.in_flight -= 1
        self.aborted += 1
        done = int((loop.time() - start) / self.server.decode_time)
        return min(done, wanted - 1, len(plan.ids) - 1), "abort"

    def _plan(self, params: JsonDict) -> tuple[_Plan, JsonDict] | web.Response:
        reply = self.server.script(params)
        if not isinstance(reply, dict):
            return web.json_response({"error": {"message": "no faults in the engine"}}, status=500)
        completion = response_to_chat_completion(reply)
        _, ids, log_probs = self.server._generation(completion)
        return _Plan(ids, log_probs), completion

    # --- /v1/completions ------------------------------------------------------------------

    async def completion(self, body: JsonDict, prompt: list[int]) -> web.StreamResponse:
        tokenizer = self.server.tokenizer
        assert tokenizer is not None
        plan = self._take(tuple(prompt))
        if plan is not None:
            self.continued += 1
        else:
            text = tokenizer.decode(prompt)
            made = self._plan({"prompt_token_ids": prompt, "prompt": text, "input": []})
            if isinstance(made, web.Response):
                return made
            plan = made[0]
        served = self.version  # an update aborts the generation: its tokens are this version's
        count, finish = await self._decode(plan, body.get("max_tokens"))
        ids, log_probs = plan.ids[:count], plan.log_probs[:count]
        if finish == "abort":
            self._keep(tuple(prompt + ids), _Plan(plan.ids[count:], plan.log_probs[count:]))
        choice: JsonDict = {
            "index": 0,
            "text": tokenizer.decode([t for t in ids if t != IM_END]),
            "logprobs": {
                "text_offset": [],
                "token_logprobs": log_probs,
                "tokens": [tokenizer.piece(t) for t in ids],
                "top_logprobs": [],
            },
            "finish_reason": finish,
            "stop_reason": None,
        }
        if body.get("return_token_ids"):
            choice["token_ids"] = ids
            choice["prompt_token_ids"] = prompt
        answer: JsonDict = {
            "id": "cmpl-engine",
            "object": "text_completion",
            "model": self.server.model,
            "choices": [choice],
            "usage": {
                "prompt_tokens": len(prompt),
                "completion_tokens": len(ids),
                "total_tokens": len(prompt) + len(ids),
            },
        }
        if self.reports_version:
            answer["metadata"] = {"weight_version": str(served)}
        return web.json_response(answer)

    # --- /v1/chat/completions -------------------------------------------------------------

    async def chat(self, body: JsonDict) -> web.StreamResponse:
        tokenizer = self.server.tokenizer
        assert tokenizer is not None
        messages: list[JsonDict] = body["messages"]
        continuing = bool(body.get("continue_final_message"))
        message: JsonDict | None = None
        if continuing:
            if body.get("add_generation_prompt", True) or messages[-1].get("role") != "assistant":
                message_text = "continue_final_message needs add_generation_prompt false"
                return web.json_response({"error": {"message": message_text}}, status=400)
            plan = self._take(orjson.dumps(messages))
            if plan is None:
                unknown = "the engine never decoded this assistant prefix"
                return web.json_response({"error": {"message": unknown}}, status=400)
            self.continued += 1
            base, prefix = messages[:-1], str(messages[-1].get("content") or "")
        else:
            made = self._plan(chat_request_to_responses_params(body))
            if isinstance(made, web.Response):
                return made
            plan, completion = made
            message = completion["choices"][0]["message"]
            base, prefix = messages, ""
        count, finish = await self._decode(plan, body.get("max_tokens"))
        ids, log_probs = plan.ids[:count], plan.log_probs[:count]
        text = tokenizer.decode([t for t in ids if t != IM_END])
        if finish == "abort":
            continued = [*base, {"role": "assistant", "content": prefix + text}]
            self._keep(orjson.dumps(continued), _Plan(plan.ids[count:], plan.log_probs[count:]))
            message = {"role": "assistant", "content": text, "tool_calls": []}
        elif message is None or finish == "length":
            # vLLM's tool parser reads only this request's output text
            parsed = parse_hermes(text) if "</tool_call>" in text else None
            message = {"role": "assistant", "content": text if parsed is None else parsed.text}
            message["tool_calls"] = [] if parsed is None else parsed.tool_calls
        if message.get("tool_calls") and finish == "stop":
            finish = "tool_calls"
        rendered = tokenizer.render(base, body.get("tools"), add_generation_prompt=True)
        prompt = tokenizer.encode(rendered + prefix)
        choice: JsonDict = {
            "index": 0,
            "message": message,
            "finish_reason": finish,
            "stop_reason": None,
        }
        answer: JsonDict = {
            "id": "chatcmpl-engine",
            "object": "chat.completion",
            "model": self.server.model,
            "choices": [choice],
            "usage": {
                "prompt_tokens": len(prompt),
                "completion_tokens": len(ids),
                "total_tokens": len(prompt) + len(ids),
            },
        }
        if body.get("return_token_ids"):
            choice["token_ids"] = ids
            choice["logprobs"] = {
                "content": [
                    {"token": f"token_id:{t}", "logprob": v, "bytes": None, "top_logprobs": []}
                    for t, v in zip(ids, log_probs, strict=True)
                ]
            }
            answer["prompt_token_ids"] = prompt
        return web.json_response(answer)
