"""Streamed answers (``stream: true``) as each API's server-sent events, from a whole answer.

A palaestra ``Model`` answers a call whole, so the gateway streams the answer once it has it:
every event of the stream in one write, in the shapes OpenAI's clients parse. Chat Completions
and Completions send ``data:`` chunks ending with ``data: [DONE]``; the Responses API's events
are Open Responses' (``palaestra.wire.open_responses.event_stream``, as the model and agent
servers send them).
"""

from __future__ import annotations

import orjson

from palaestra.types import JsonDict

_DONE = b"data: [DONE]\n\n"


def _data(payload: JsonDict) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def chat_stream(completion: JsonDict, *, include_usage: bool) -> bytes:
    """A chat completion as ``chat.completion.chunk`` events: the role, the reasoning, the
    text, each tool call, the finish reason, the usage when asked, then ``[DONE]``."""
    base = {
        "id": completion["id"],
        "object": "chat.completion.chunk",
        "created": completion["created"],
        "model": completion["model"],
    }
    choice = completion["choices"][0]
    message: JsonDict = choice["message"]

    def chunk(delta: JsonDict, finish: str | None = None) -> bytes:
        choices = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        return _data({**base, "choices": choices})

    events = [chunk({"role": "assistant", "content": ""})]
    if message.get("reasoning_content"):
        events.append(chunk({"reasoning_content": message["reasoning_content"]}))
    if message.get("content"):
        events.append(chunk({"content": message["content"]}))
    for index, call in enumerate(message.get("tool_calls") or ()):
        events.append(chunk({"tool_calls": [{"index": index, **call}]}))
    events.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        events.append(_data({**base, "choices": [], "usage": completion["usage"]}))
    events.append(_DONE)
    return b"".join(events)


def completion_stream(completion: JsonDict) -> bytes:
    """A ``text_completion`` as streamed chunks: the text, the finish reason, ``[DONE]``."""
    choice = completion["choices"][0]
    base = {key: completion[key] for key in ("id", "object", "created", "model")}
    text = {"index": 0, "text": choice["text"], "logprobs": None, "finish_reason": None}
    end = {"index": 0, "text": "", "logprobs": None, "finish_reason": choice["finish_reason"]}
    return b"".join((_data({**base, "choices": [text]}), _data({**base, "choices": [end]}), _DONE))
