"""A real OpenAI-compatible HTTP server for tests, answering from a script.

The server runs on 127.0.0.1 in a background thread with its own event loop, so async tests and
subprocesses (``palaestra collect ...``) reach it alike over real HTTP::

    script = Sequence([tool_call_response("add", '{"a": 2, "b": 2}'), text_response("4")])
    with ScriptedModelServer(script) as server:
        model = OpenAIResponsesModel(server.url)   # "http://127.0.0.1:PORT/v1"

A script maps Responses create params to a Response dict or a ``ScriptedFault``. Scripts are
written once against Responses: a chat request is converted to Responses params before the
script sees it, and the script's Response is converted back to a chat completion.

With a ``tokenizer`` (``tests.support.toy_tokenizer``) the server also answers token ids as
vLLM does (``flavour="vllm"``) or SGLang does (``"sglang"``): Chat Completions with
``return_token_ids`` / ``logprobs`` (the prompt re-tokenised from the messages, the generation
as the "model" sampled it), ``POST /tokenize`` with ``messages`` or ``prompt`` at the server
root, and ``POST /v1/completions`` with a token-id prompt (the script then sees
``{"prompt_token_ids", "prompt", "input": []}``).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from aiohttp import web

from palaestra.models.chat_format import (
    chat_request_to_responses_params,
    response_to_chat_completion,
)
from palaestra.types import JsonDict
from tests.support.aborting_engine import AbortingEngine
from tests.support.toy_tokenizer import IM_END, ToyTokenizer, assistant_body


@dataclass(frozen=True)
class ScriptedFault:
    """A misbehaving answer: an error status, a delay, a dropped connection or a garbage body.

    With ``status=200`` and a Response as ``body`` (plus ``delay``) it is a slow success.
    """

    status: int = 500
    body: JsonDict | None = None
    delay: float = 0.0
    disconnect: bool = False
    raw_body: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


Reply = JsonDict | ScriptedFault
Script = Callable[[JsonDict], Reply]

DEFAULT_MODEL = "scripted-model"
_response_ids = itertools.count(1)


def _response(
    output: list[JsonDict], usage: JsonDict | None, last_item: JsonDict | None
) -> JsonDict:
    if last_item:
        output[-1].update(last_item)
    return {
        "id": f"resp_scripted_{next(_response_ids)}",
        "object": "response",
        "created_at": int(time.time()),
        "model": DEFAULT_MODEL,
        "status": "completed",
        "incomplete_details": None,
        "error": None,
        "output": output,
        "usage": usage or {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
        "tools": [],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
    }


def text_response(
    text: str, *, usage: JsonDict | None = None, last_item: JsonDict | None = None
) -> JsonDict:
    """A Response with one assistant message; ``last_item`` fields go on that item."""
    message = {
        "type": "message",
        "id": "msg_scripted",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    return _response([message], usage, last_item)


def tool_call_response(
    name: str,
    arguments: str,
    *,
    call_id: str = "call_1",
    usage: JsonDict | None = None,
    last_item: JsonDict | None = None,
) -> JsonDict:
    """A Response with one function call (``arguments`` is the JSON string the model wrote)."""
    call = {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }
    return _response([call], usage, last_item)


class Sequence:
    """A script that answers its replies in order, one per request (thread-safe).

    A reply may itself be a script (called with the params). When the replies run out it
    answers HTTP 410, which no client retries, so an over-long conversation fails loudly.
    """

    def __init__(self, replies: Iterable[Reply | Script]) -> None:
        self._replies = list(replies)
        self._next = 0
        self._lock = threading.Lock()

    def __call__(self, params: JsonDict) -> Reply:
        with self._lock:
            index = self._next
            self._next += 1
        if index >= len(self._replies):
            message = f"scripted model: the script is exhausted after {len(self._replies)} replies"
            return ScriptedFault(status=410, body={"error": {"message": message}})
        reply = self._replies[index]
        return reply(params) if callable(reply) else reply


def fail_first(n: int, fault: ScriptedFault, then: Script) -> Script:
    """A script that answers ``fault`` to the first ``n`` requests, then defers to ``then``."""
    calls = itertools.count()  # next() on a count is atomic under the GIL

    def script(params: JsonDict) -> Reply:
        return fault if next(calls) < n else then(params)

    return script


class ScriptedModelServer:
    """An OpenAI-compatible server on a free 127.0.0.1 port answering from ``script``.

    ``api`` chooses the routes: "responses" or "chat" alone (the other answers 404, as a
    server without it would), or "both". Every request, even a 404, is recorded.

    With ``api_key`` set, every route (``/v1/models`` too) answers 401 as OpenAI does to a
    request without ``Authorization: Bearer <api_key>``. ``models`` replaces the model listing:
    it is called for each ``GET /v1/models`` and may answer a ``ScriptedFault``.
    ``peak_in_flight`` is the most requests the server was handling at one time. ``port``
    (default 0: a free one) lets a stopped server come back at the same address.

    With ``decode_time`` (seconds per generated token) and a ``tokenizer``, generations take
    time, and ``weight_update()`` aborts every one in flight as vLLM's ``POST /pause`` (mode
    ``abort``) does: see ``AbortingEngine``.
    """

    def __init__(
        self,
        script: Script,
        *,
        api: Literal["both", "responses", "chat"] = "both",
        model: str = DEFAULT_MODEL,
        api_key: str | None = None,
        models: Callable[[], Reply] | None = None,
        tokenizer: ToyTokenizer | None = None,
        flavour: Literal["vllm", "sglang"] = "vllm",
        port: int = 0,
        decode_time: float = 0.0,
    ) -> None:
        self.script = script
        self.tokenizer = tokenizer
        self.flavour = flavour
        self.api = api
        self.model = model
        self.api_key = api_key
        self.models_script = models
        self._in_flight = 0
        self._peak_in_flight = 0
        self.port = port
        self._requests: list[tuple[str, JsonDict]] = []
        self._authorizations: list[str | None] = []
        self._headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._startup_error: BaseException | None = None
        self._transports: set[asyncio.Transport] = set()
        self.decode_time = decode_time
        self.engine = AbortingEngine(self)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[tuple[str, JsonDict]]:
        """A snapshot of (route, body) for every request received so far."""
        with self._lock:
            return list(self._requests)

    @property
    def authorizations(self) -> list[str | None]:
        """The ``Authorization`` header of every request received so far (None when absent)."""
        with self._lock:
            return list(self._authorizations)

    @property
    def headers(self) -> list[dict[str, str]]:
        """The headers of every request received so far (names lower-case), in order."""
        with self._lock:
            return list(self._headers)

    @property
    def peak_in_flight(self) -> int:
        """The most requests the server was handling at one time so far."""
        with self._lock:
            return self._peak_in_flight

    def weight_update(self, pause: float = 0.0, until: Callable[[], bool] | None = None) -> int:
        """Abort every generation in flight, hold new ones for ``pause`` seconds, then serve
        the next policy version; the number of generations aborted (thread-safe). With
        ``until``, first wait for a generation to be decoding unless ``until()`` turns true
        (``AbortingEngine.update``)."""
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(self.engine.update(pause, until), self._loop)
        return future.result(timeout=600 if until is not None else 30 + pause)

    def bodies(self, route: str) -> list[JsonDict]:
        """The bodies received on one route, e.g. ``"/v1/responses"``."""
        return [body for seen, body in self.requests if seen == route]

    def __enter__(self) -> ScriptedModelServer:
        self._thread = threading.Thread(target=self._run, name="scripted-model", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout=10):
            raise RuntimeError("scripted model server did not start within 10 s")
        if self._startup_error is not None:
            raise RuntimeError("scripted model server failed to start") from self._startup_error
        return self

    def __exit__(self, *exc_info: object) -> None:
        # A second exit (a test stopped the server itself mid-run) has nothing left to stop.
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout=10)

    # --- the server thread ----------------------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported to __enter__ instead of dying silently
            self._startup_error = exc
            self._ready.set()
        finally:
            try:
                loop.run_until_complete(self._drop_connections())
            finally:
                loop.close()

    async def _drop_connections(self) -> None:
        """Close every connection left, as a killed process would: one accepted as the server
        stopped would otherwise stay open in the closed loop, and its client hang."""
        loop = asyncio.get_running_loop()
        for transport in list(getattr(loop, "_transports", {}).values()):
            transport.abort()
        pending = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await asyncio.sleep(0)  # the aborted transports close their sockets on the next turn

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        app = web.Application(middlewares=[self._count_and_authorize])
        app.router.add_get("/v1/models", self._models)
        # A route the server "lacks" still records the request, then answers 404 as one would.
        serves_responses = self.api in ("both", "responses")
        serves_chat = self.api in ("both", "chat")
        app.router.add_post("/v1/responses", self._responses if serves_responses else self._absent)
        app.router.add_post("/v1/chat/completions", self._chat if serves_chat else self._absent)
        if self.tokenizer is not None:
            app.router.add_post("/tokenize", self._tokenize)
            app.router.add_post("/v1/completions", self._completions)
        # Cancel handlers whose client went away, and don't wait long for slow ones on exit.
        runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.5)
        await runner.setup()
        try:
            await web.TCPSite(runner, "127.0.0.1", self.port).start()
            self.port = runner.addresses[0][1]
            self._ready.set()
            await self._stop.wait()
        finally:
            # Drop the connections still open (a call in progress), as a killed process would:
            # left to the closed loop, the client would wait out its read timeout.
            for transport in self._transports:
                transport.abort()
            await runner.cleanup()

    @web.middleware
    async def _count_and_authorize(
        self, request: web.Request, handler: Callable[[web.Request], Any]
    ) -> web.StreamResponse:
        with self._lock:
            self._in_flight += 1
            self._peak_in_flight = max(self._peak_in_flight, self._in_flight)
        if request.transport is not None:
            self._transports.add(request.transport)
        try:
            expected = f"Bearer {self.api_key}"
            if self.api_key is not None and request.headers.get("Authorization") != expected:
                if request.method == "POST":
                    await self._json_body(request)
                else:
                    self._record(request, {})
                error = {
                    "message": "Incorrect API key provided.",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
                return web.json_response({"error": error}, status=401)
            response: web.StreamResponse = await handler(request)
            return response
        finally:
            with self._lock:
                self._in_flight -= 1

    def _record(self, request: web.Request, body: JsonDict) -> None:
        with self._lock:
            self._requests.append((request.path, body))
            self._authorizations.append(request.headers.get("Authorization"))
            self._headers.append({name.lower(): value for name, value in request.headers.items()})

    async def _models(self, request: web.Request) -> web.StreamResponse:
        self._record(request, {})
        if self.models_script is not None:
            return await self._answer(request, self.models_script(), convert=None)
        model = {"id": self.model, "object": "model", "owned_by": "palaestra-tests"}
        return web.json_response({"object": "list", "data": [model]})

    async def _absent(self, request: web.Request) -> web.Response:
        await self._json_body(request)
        return web.json_response({"detail": "Not Found"}, status=404)

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        body = await self._json_body(request)
        if body is None:
            return web.json_response({"error": {"message": "body is not JSON"}}, status=400)
        return await self._answer(request, self.script(body), convert=None)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await self._json_body(request)
        if body is None:
            return web.json_response({"error": {"message": "body is not JSON"}}, status=400)
        if self.decode_time and self.tokenizer is not None:
            return await self.engine.chat(body)
        params = chat_request_to_responses_params(body)
        convert = response_to_chat_completion
        if self.tokenizer is not None and body.get("return_token_ids"):

            def convert(response: JsonDict) -> JsonDict:
                return self._chat_with_tokens(body, response)

        return await self._answer(request, self.script(params), convert=convert)

    # --- token ids (with a tokenizer) -------------------------------------------------------

    def _generation(self, completion: JsonDict) -> tuple[str, list[int], list[float]]:
        """What the "model" sampled for a scripted answer: the text vLLM returns (without the
        end-of-turn token), the ids (with it) and their log-probs."""
        assert self.tokenizer is not None
        text = assistant_body(completion["choices"][0]["message"])
        ids = [*self.tokenizer.generate(text), IM_END]
        return text, ids, [-0.01 * (1 + i % 7) for i in range(len(ids))]

    def _chat_with_tokens(self, body: JsonDict, response: JsonDict) -> JsonDict:
        assert self.tokenizer is not None
        completion = response_to_chat_completion(response)
        rendered = self.tokenizer.render(body["messages"], body.get("tools"))
        prompt = self.tokenizer.encode(rendered)
        _, ids, log_probs = self._generation(completion)
        choice = completion["choices"][0]
        choice["token_ids"] = ids
        as_ids = body.get("return_tokens_as_token_ids") and self.flavour == "vllm"
        choice["logprobs"] = {
            "content": [
                {
                    "token": f"token_id:{token}" if as_ids else self.tokenizer.piece(token),
                    "logprob": value,
                    "bytes": None,
                    "top_logprobs": [],
                }
                for token, value in zip(ids, log_probs, strict=True)
            ]
        }
        if self.flavour == "vllm":
            completion["prompt_token_ids"] = prompt
        elif body.get("return_prompt_token_ids"):
            choice["prompt_token_ids"] = prompt
        return completion

    async def _tokenize(self, request: web.Request) -> web.StreamResponse:
        assert self.tokenizer is not None
        body = await self._json_body(request) or {}
        if isinstance(body.get("messages"), list):
            text = self.tokenizer.render(
                body["messages"],
                body.get("tools"),
                add_generation_prompt=bool(body.get("add_generation_prompt", True)),
            )
        else:
            text = str(body.get("prompt", ""))
        tokens = self.tokenizer.encode(text)
        answer: JsonDict = {"count": len(tokens), "max_model_len": 4096, "tokens": tokens}
        if body.get("return_token_strs"):
            answer["token_strs"] = [self.tokenizer.piece(token) for token in tokens]
        return web.json_response(answer)

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        assert self.tokenizer is not None
        body = await self._json_body(request) or {}
        prompt = body.get("prompt")
        if not isinstance(prompt, list) or not all(isinstance(t, int) for t in prompt):
            return web.json_response({"error": {"message": "prompt must be ids"}}, status=400)
        if self.decode_time:
            return await self.engine.completion(body, prompt)
        params = {"prompt_token_ids": prompt, "prompt": self.tokenizer.decode(prompt), "input": []}
        reply = self.script(params)

        def convert(response: JsonDict) -> JsonDict:
            text, ids, log_probs = self._generation(response_to_chat_completion(response))
            choice: JsonDict = {
                "index": 0,
                "text": text,
                "logprobs": {
                    "text_offset": [],
                    "token_logprobs": log_probs,
                    "tokens": [self.tokenizer.piece(t) for t in ids] if self.tokenizer else [],
                    "top_logprobs": [],
                },
                "finish_reason": "stop",
                "stop_reason": None,
            }
            if body.get("return_token_ids"):
                choice["token_ids"] = ids
                choice["prompt_token_ids"] = prompt
            usage = {
                "prompt_tokens": len(prompt),
                "completion_tokens": len(ids),
                "total_tokens": len(prompt) + len(ids),
            }
            return {
                "id": "cmpl-scripted",
                "object": "text_completion",
                "created": int(time.time()),
                "model": self.model,
                "choices": [choice],
                "usage": usage,
            }

        return await self._answer(request, reply, convert=convert)

    async def _json_body(self, request: web.Request) -> JsonDict | None:
        try:
            body: Any = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            body = None
        self._record(request, body if isinstance(body, dict) else {"_raw": body})
        return body if isinstance(body, dict) else None

    async def _answer(
        self,
        request: web.Request,
        reply: Reply,
        convert: Callable[[JsonDict], JsonDict] | None,
    ) -> web.StreamResponse:
        if not isinstance(reply, ScriptedFault):
            return web.json_response(convert(reply) if convert else reply)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.disconnect:
            if request.transport is not None:
                request.transport.abort()  # drop the connection without an answer
            raise asyncio.CancelledError
        headers = dict(reply.headers)
        if reply.raw_body is not None:
            return web.Response(status=reply.status, body=reply.raw_body, headers=headers)
        body = reply.body or {"error": {"message": f"scripted fault (HTTP {reply.status})"}}
        if convert and reply.status == 200:
            body = convert(body)
        return web.json_response(body, status=reply.status, headers=headers)
