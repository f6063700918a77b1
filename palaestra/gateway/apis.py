"""The three OpenAI APIs the gateway speaks, each as: its request -> Responses params, and the
model's Response -> its answer, whole or streamed.

The conversions are the project's (``palaestra.models.chat_format``); what is added here is
what a gateway must do on top:

- a request's ``model`` is dropped (the gateway serves one model; a harness names whatever
  its configuration says) and answers name the served model;
- training fields a harness sends on its messages are dropped: only what the gateway recorded
  may reach a model in token mode as ids it sampled (``GatewayRollout.prepare``);
- training fields are not sent back to the harness (it has no use for them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from palaestra.errors import ModelError, PalaestraError
from palaestra.gateway import events
from palaestra.models.chat_format import (
    TOKEN_FIELDS,
    chat_message_items,
    chat_request_to_responses_params,
    completion_request_to_responses_params,
    response_to_chat_completion,
    response_to_text_completion,
)
from palaestra.types import JsonDict
from palaestra.wire.open_responses import conform, event_stream

_UNSENT = frozenset((*TOKEN_FIELDS, "producer"))
_RESPONSES_DROPPED = (
    "model",
    "stream",
    "stream_options",
    "store",
    "background",
    "previous_response_id",
    "include",
    "user",
    "prompt_cache_key",
    "safety_identifier",
    "service_tier",
)


class BadRequest(PalaestraError):
    """A request the gateway refuses before the model sees it (a 400)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


@dataclass(slots=True)
class Request:
    """One API call as the gateway handles it.

    ``params`` are the Responses params without their input; ``raw`` is the request's history
    as sent (chat messages, or Responses input items), each element of which ``convert`` turns
    into clean input items (``GatewayRollout.prepare`` converts only what is new)."""

    api: str
    body: JsonDict
    params: JsonDict
    raw: list[Any]
    convert: Callable[[Any], list[JsonDict]]
    stream: bool
    previous_response_id: str | None = None


def _clean(items: list[JsonDict]) -> list[JsonDict]:
    """``items`` without the training fields a harness may have sent on them (in place)."""
    for item in items:
        if not _UNSENT.isdisjoint(item):
            for field in _UNSENT:
                item.pop(field, None)
    return items


def _chat_items(message: Any) -> list[JsonDict]:
    try:
        return _clean(chat_message_items(message))
    except ModelError as error:
        raise BadRequest(error.reason, "messages") from None


def _input_item(item: Any) -> list[JsonDict]:
    if not isinstance(item, dict):
        raise BadRequest(f"an input item is not an object: {item!r:.80}", "input")
    return _clean([item])


def parse(api: str, body: JsonDict) -> Request:
    """The Responses params of ``body``, a request to ``api``; ``BadRequest`` for one that
    cannot be answered. The history is converted later, by ``Request.convert``."""
    stream = body.get("stream") is True
    previous: str | None = None
    convert: Callable[[Any], list[JsonDict]] = _input_item
    try:
        if api == "chat":
            raw = body.get("messages")
            if not isinstance(raw, list):
                raise BadRequest("field 'messages' must be a list of chat messages", "messages")
            if body.get("n") not in (None, 1):
                raise BadRequest("only one choice per request (n: 1) is supported", "n")
            params = chat_request_to_responses_params({**body, "messages": []})
            params.pop("model", None)
            convert = _chat_items
        elif api == "completions":
            if body.get("n") not in (None, 1):
                raise BadRequest("only one choice per request (n: 1) is supported", "n")
            params = completion_request_to_responses_params(body)
            raw = params["input"]
        else:
            raw = body.get("input")
            if isinstance(raw, str):
                raw = [{"type": "message", "role": "user", "content": raw}]
            if not isinstance(raw, list):
                raise BadRequest("field 'input' must be a string or a list of items", "input")
            params = {key: value for key, value in body.items() if key not in _RESPONSES_DROPPED}
            previous = body.get("previous_response_id")
            if previous is not None and not isinstance(previous, str):
                raise BadRequest(
                    "field 'previous_response_id' must be a string", "previous_response_id"
                )
    except ModelError as error:  # the conversions say what they cannot convert this way
        raise BadRequest(error.reason) from None
    params["input"] = []
    return Request(api, body, params, raw, convert, stream, previous)


def _without_tokens(item: JsonDict) -> JsonDict:
    return {key: value for key, value in item.items() if key not in _UNSENT}


def answer(request: Request, response: JsonDict, model: str) -> tuple[bytes, bytes]:
    """The body and content type of the harness' answer to ``request``."""
    api = request.api
    if api == "responses":
        output = response.get("output") or []
        shown = {**response, "model": model}
        if output and not _UNSENT.isdisjoint(output[-1]):
            shown["output"] = [*output[:-1], _without_tokens(output[-1])]
        shown = conform(shown, request.body)
        if request.stream:
            return event_stream(shown), _SSE
        return orjson.dumps(shown), _JSON
    if api == "chat":
        completion = response_to_chat_completion(response)
        completion["model"] = model
        message = completion["choices"][0]["message"]
        for field in TOKEN_FIELDS:
            message.pop(field, None)
        if request.stream:
            options = request.body.get("stream_options")
            usage = isinstance(options, dict) and options.get("include_usage") is True
            return events.chat_stream(completion, include_usage=usage), _SSE
        return orjson.dumps(completion), _JSON
    text = response_to_text_completion(response)
    text["model"] = model
    if request.stream:
        return events.completion_stream(text), _SSE
    return orjson.dumps(text), _JSON


_JSON = b"application/json"
_SSE = b"text/event-stream"
