"""Streamed answers (``stream: true``) as each API's server-sent events, from a whole answer.

A palaestra ``Model`` answers a call whole, so the gateway streams the answer once it has it:
every event of the stream in one write, in the shapes OpenAI's clients parse. Chat Completions
and Completions send ``data:`` chunks ending with ``data: [DONE]``; the Responses API sends
typed events from ``response.created`` to ``response.completed`` (``.incomplete`` or
``.failed`` for such an answer), each with its ``sequence_number``.
"""

from __future__ import annotations

from typing import Any

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


_FINAL_EVENTS = {"incomplete": "response.incomplete", "failed": "response.failed"}


class _Events:
    __slots__ = ("chunks", "number")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.number = 0

    def add(self, kind: str, **fields: Any) -> None:
        payload = {"type": kind, "sequence_number": self.number, **fields}
        self.number += 1
        self.chunks.append(b"event: %s\ndata: %s\n\n" % (kind.encode(), orjson.dumps(payload)))


def responses_stream(response: JsonDict) -> bytes:
    """A Response as the Responses API's streamed events, ending with the whole Response."""
    events = _Events()
    started = {**response, "status": "in_progress", "output": [], "incomplete_details": None}
    events.add("response.created", response=started)
    events.add("response.in_progress", response=started)
    for index, item in enumerate(response.get("output") or ()):
        _item_events(events, index, item)
    final = _FINAL_EVENTS.get(str(response.get("status")), "response.completed")
    events.add(final, response=response)
    return b"".join(events.chunks)


def _item_events(events: _Events, index: int, item: JsonDict) -> None:
    kind = item.get("type")
    item_id = item.get("id") or ""
    if kind == "message":
        events.add(
            "response.output_item.added",
            output_index=index,
            item={**item, "status": "in_progress", "content": []},
        )
        for part_index, part in enumerate(item.get("content") or ()):
            where = {"item_id": item_id, "output_index": index, "content_index": part_index}
            if part.get("type") == "output_text":
                empty = {**part, "text": ""}
                events.add("response.content_part.added", part=empty, **where)
                text = part.get("text", "")
                events.add("response.output_text.delta", delta=text, logprobs=[], **where)
                events.add("response.output_text.done", text=text, logprobs=[], **where)
            else:
                events.add("response.content_part.added", part=part, **where)
            events.add("response.content_part.done", part=part, **where)
    elif kind == "function_call":
        events.add(
            "response.output_item.added",
            output_index=index,
            item={**item, "status": "in_progress", "arguments": ""},
        )
        arguments = item.get("arguments", "")
        where = {"item_id": item_id, "output_index": index}
        events.add("response.function_call_arguments.delta", delta=arguments, **where)
        events.add(
            "response.function_call_arguments.done",
            arguments=arguments,
            name=item.get("name"),
            **where,
        )
    else:
        events.add("response.output_item.added", output_index=index, item=item)
    events.add("response.output_item.done", output_index=index, item=item)
