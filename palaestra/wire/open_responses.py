"""Open Responses: the Response objects and streamed events palaestra serves and stores.

Open Responses is the Responses API as an open specification (an OpenAPI document and a prose
spec). palaestra's model and agent servers answer ``POST /v1/responses`` with it, and the
``response`` of every row is one. ``SPEC_VERSION`` names the version palaestra conforms to.

- ``conform(response, params)``: a Response with every field the spec requires, typed as it
  says. What the model answered wins; a field it left out (or null where the spec wants a
  value) is the request's setting, else the spec's default. Output items get the ``id`` and
  ``status`` every item must carry, a message's string content becomes content parts, and a
  function tool the fields a ``FunctionTool`` has. Fields the spec does not know (the token ids
  on output items, NeMo Gym's ``conversation``/``prompt``/``user``) stay where they are: the
  spec lets an implementation extend its schemas (docs/peers.md lists palaestra's).
- ``Layout(fields, echoed).conform(response, params)``: the same, laid out in another
  dialect's field order (NeMo Gym's, for a rollout's trajectory) in one pass.
- ``event_stream(response)``: the same Response as the spec's server-sent events, from
  ``response.created`` to its terminal event, each with its ``sequence_number``, then
  ``data: [DONE]``. palaestra's models answer whole, so a stream is written once the answer is
  known.

``conform`` keeps the order of the fields it is given (NeMo Gym's, in a row) and appends the
ones the spec adds, so a row stays a NeMo Gym ``Response`` as well.
"""

from __future__ import annotations

import hashlib
import operator
import os
import time
from collections.abc import Iterable
from typing import Any, Final

import orjson

from palaestra.errors import InputError
from palaestra.types import JsonDict

SPEC_VERSION: Final = "2026-04-24"
"""The Open Responses version (its OpenAPI document's ``info.version``) palaestra conforms to."""

TERMINAL_EVENTS: Final = {
    "completed": "response.completed",
    "incomplete": "response.incomplete",
    "failed": "response.failed",
}
"""A Response's last event by its ``status`` (any other status ends as ``completed`` would)."""

DONE: Final = b"data: [DONE]\n\n"
"""The literal that ends every stream (the spec's terminal event)."""

_SETTINGS: Final[dict[str, Any]] = {
    "tool_choice": "auto",
    "truncation": "disabled",
    "parallel_tool_calls": True,
    "text": {"format": {"type": "text"}, "verbosity": "medium"},
    "top_p": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "top_logprobs": 0,
    "temperature": 1.0,
    "store": False,
    "background": False,
    "service_tier": "default",
}
"""Required non-null settings: the request's value, else the spec's default. palaestra stores
no Response (``store`` false), runs none in the background and never truncates input."""

_NULLABLE: Final = (
    "previous_response_id",
    "instructions",
    "error",
    "incomplete_details",
    "reasoning",
    "usage",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "safety_identifier",
    "prompt_cache_key",
)
"""Required fields that may be null: the request's value when it sets one, else null."""

_UNNAMED_REASON: Final = "max_output_tokens"
"""The ``incomplete_details.reason`` of an answer that gave none (a prompt past the model's
context, whose ``code`` says ``context_length_exceeded``): the spec requires a string, and
OpenAI's ``Response`` type (which NeMo Gym validates rows with) admits only its own reasons.
No output token could be sampled, so the output budget is what ran out."""

_ID_PREFIXES: Final = {
    "message": "msg",
    "function_call": "fc",
    "function_call_output": "fco",
    "reasoning": "rs",
}
_STATUSES: Final = frozenset({"in_progress", "completed", "incomplete"})
_SETTING_VALUES: Final = operator.itemgetter(*_SETTINGS)


def _new_id(prefix: str) -> str:
    return f"{prefix}_{os.urandom(12).hex()}"


_TOOL_FIELDS: Final = frozenset({"description", "parameters", "strict"})
_NO_PARAMS: Final[JsonDict] = {}


def conform(response: JsonDict, params: JsonDict | None = None) -> JsonDict:
    """``response`` as the spec's ``ResponseResource`` (a new dict; ``response`` is untouched).

    ``params`` are the create params it answers (their settings fill what the answer left
    out). Idempotent: a conformed Response comes back equal.

    Every row and every served answer passes here: an item, tool or usage that conforms
    already is taken as it is, and an item's id is hashed only when it has none.
    """
    asked = params if isinstance(params, dict) else _NO_PARAMS
    whole: JsonDict = dict(response)
    if "object" not in whole:
        whole["object"] = "response"
    if not isinstance(whole.get("id"), str):
        whole["id"] = _new_id("resp")
    created = whole.get("created_at")
    if created.__class__ is not int:
        whole["created_at"] = int(created) if isinstance(created, int | float) else int(time.time())
    if not isinstance(whole.get("model"), str):
        model = asked.get("model")
        whole["model"] = model if isinstance(model, str) else ""
    status = whole.get("status")
    if not isinstance(status, str):
        status = whole["status"] = "completed"
    if status == "completed":
        if not isinstance(whole.get("completed_at"), int):
            whole["completed_at"] = int(time.time())
    else:
        whole["completed_at"] = None
    for key in _NULLABLE:
        if whole.get(key) is None:
            whole[key] = asked.get(key)
    for key, default in _SETTINGS.items():
        if whole.get(key) is None:
            value = asked.get(key)
            whole[key] = default if value is None else value
    return _conform_parts(whole, asked)


def _conform_parts(whole: JsonDict, asked: JsonDict) -> JsonDict:
    """``conform``'s part after the top-level fields: text, tools, items, usage, details."""
    text = whole["text"]
    if text is _SETTINGS["text"]:  # each Response its own: a row's text is not the default's
        whole["text"] = {"format": {"type": "text"}, "verbosity": "medium"}
    elif isinstance(text, dict) and text.get("verbosity") is None:
        whole["text"] = {**text, "verbosity": "medium"}  # the model's own default
    tools = whole.get("tools") or asked.get("tools")
    whole["tools"] = (
        [
            tool if tool.__class__ is dict and tool.keys() >= _TOOL_FIELDS else _tool(tool)
            for tool in tools
        ]
        if isinstance(tools, list)
        else []
    )
    output = whole.get("output")
    answer = whole["id"]
    whole["output"] = (
        [_item(item, answer, index) for index, item in enumerate(output)]
        if isinstance(output, list)
        else []
    )
    if whole["usage"] is not None:
        whole["usage"] = _usage(whole["usage"])
    details = whole["incomplete_details"]
    if isinstance(details, dict) and not isinstance(details.get("reason"), str):
        whole["incomplete_details"] = {**details, "reason": _UNNAMED_REASON}
    return whole


class Layout:
    """Responses laid out as another dialect has them (NeMo Gym's ``Response``, in a row), and
    conformed in the same pass.

    ``fields`` are the dialect's fields in its order with the value each has when nothing is
    known; ``echoed`` the ones a Response takes from its request. ``conform(response, params)``
    equals ``conform`` of ``{**fields, **echoed params, **response}`` (with a missing ``id``,
    ``created_at``, ``model``, ``output`` and ``tools`` as the dialect fills them), in that
    order, but is built on a template made once: where a Response is assembled, so that its
    verifier and its row read it conformed and nothing walks it twice.
    """

    __slots__ = ("echoed", "requested", "tail", "template")

    def __init__(self, fields: JsonDict, echoed: frozenset[str]) -> None:
        template = dict(fields)
        for key, default in _SETTINGS.items():  # the spec's defaults where the dialect has none
            if key in template and template[key] is None:
                template[key] = default
        self.template: Final = template
        self.echoed: Final = echoed
        self.requested: Final = frozenset(_NULLABLE) | frozenset(_SETTINGS)
        """Request fields a Response takes when it has no value of its own."""
        self.tail: Final = {
            key: _SETTINGS.get(key)
            for key in ("completed_at", *_NULLABLE, *_SETTINGS)
            if key not in template
        }
        """The spec's fields the dialect lacks, appended after the Response's own."""

    def conform(self, response: JsonDict, params: JsonDict | None) -> JsonDict:
        """``response`` (untouched) laid out and conformed, answering create ``params``."""
        asked = params if isinstance(params, dict) else _NO_PARAMS
        whole = self.template.copy()
        requested: list[str] = []
        for key, value in asked.items():
            if key in self.echoed:
                whole[key] = value
            if key in self.requested:
                requested.append(key)
        whole.update(response)
        for key, default in self.tail.items():
            if key not in whole:
                whole[key] = default
        for key in requested:  # the request's value where the answer has none
            if response.get(key) is None and asked[key] is not None:
                whole[key] = asked[key]
        if None in _SETTING_VALUES(whole):  # a null the answer and the request both left
            for key, default in _SETTINGS.items():
                if whole[key] is None:
                    whole[key] = default
        if not isinstance(whole["id"], str):
            whole["id"] = _new_id("resp")
        created = whole["created_at"]
        if created.__class__ is not int:
            whole["created_at"] = (
                int(created) if isinstance(created, int | float) else int(time.time())
            )
        model = whole["model"]
        if not isinstance(model, str):
            model = None if model is None else asked.get("model")
            whole["model"] = model if isinstance(model, str) else ""
        status = whole["status"]
        if not isinstance(status, str):
            status = whole["status"] = "completed"
        if status == "completed":
            if not isinstance(whole["completed_at"], int):
                whole["completed_at"] = int(time.time())
        else:
            whole["completed_at"] = None
        return _conform_parts(whole, asked)


def _tool(tool: Any) -> Any:
    """A function tool with the fields ``FunctionTool`` requires (null when the task has none)."""
    if not isinstance(tool, dict) or tool.get("type") != "function":
        return tool
    if tool.keys() >= _TOOL_FIELDS:
        return tool
    return {"description": None, "parameters": None, "strict": None, **tool}


def _item(item: Any, answer: str, index: int) -> Any:
    """An output item with its ``id`` and ``status``; a message's content as parts.

    A missing id is made from the response's id ``answer`` and the item's ``index``, so the
    same answer conforms to the same row every time (a resumed or re-encoded result
    included)."""
    if not isinstance(item, dict):
        return item
    kind = item.get("type")
    if kind is None and "role" in item:  # an easy input message: {"role", "content"}
        item = {"type": "message", **item}
        kind = "message"
    prefix = _ID_PREFIXES.get(kind) if isinstance(kind, str) else None
    if prefix is None:  # another implementation's item: passed on as it is
        return item
    fixed = item
    if not isinstance(item.get("id"), str):
        place = f"{answer}:{index}".encode()
        fixed = {**fixed, "id": f"{prefix}_{hashlib.sha256(place).hexdigest()[:24]}"}
    if kind != "reasoning" and fixed.get("status") not in _STATUSES:
        fixed = {**fixed, "status": "completed"}
    if kind == "message" and not isinstance(fixed.get("content"), list):
        fixed = {**fixed, "content": _parts(fixed.get("role"), fixed.get("content"))}
    elif kind == "reasoning" and not isinstance(fixed.get("summary"), list):
        fixed = {**fixed, "summary": []}
    return fixed


def _parts(role: Any, content: Any) -> list[JsonDict]:
    text = "" if content is None else str(content)
    if role == "assistant":
        return [{"type": "output_text", "text": text, "annotations": []}]
    return [{"type": "input_text", "text": text}]


def _usage(usage: Any) -> Any:
    if not isinstance(usage, dict):
        return None
    inputs = usage.get("input_tokens_details")
    outputs = usage.get("output_tokens_details")
    if (
        isinstance(usage.get("input_tokens"), int)
        and isinstance(usage.get("output_tokens"), int)
        and isinstance(usage.get("total_tokens"), int)
        and isinstance(inputs, dict)
        and isinstance(inputs.get("cached_tokens"), int)
        and isinstance(outputs, dict)
        and isinstance(outputs.get("reasoning_tokens"), int)
    ):
        return dict(usage)  # whole already
    fixed: JsonDict = dict(usage)
    for key in ("input_tokens", "output_tokens"):
        if not isinstance(fixed.get(key), int):
            fixed[key] = 0
    if not isinstance(fixed.get("total_tokens"), int):
        fixed["total_tokens"] = fixed["input_tokens"] + fixed["output_tokens"]
    for details, count in (
        ("input_tokens_details", "cached_tokens"),
        ("output_tokens_details", "reasoning_tokens"),
    ):
        inner = fixed.get(details)
        if not isinstance(inner, dict) or not isinstance(inner.get(count), int):
            fixed[details] = {**(inner if isinstance(inner, dict) else {}), count: 0}
    return fixed


# --- requests -------------------------------------------------------------------------------

_UNSERVED: Final = {
    "previous_response_id": "palaestra stores no Response to continue: send the whole input",
    "conversation": "palaestra keeps no conversation state: send the whole input",
    "background": "palaestra answers in the foreground only",
}
"""Request fields the spec defines that palaestra's servers do not serve, and why."""


def refuse_unserved(params: JsonDict) -> None:
    """``InputError`` naming the first field ``params`` set that palaestra does not serve
    (``_UNSERVED``): refused, never answered as if the field were not there. A null or false
    value asks for nothing and passes."""
    for field, why in _UNSERVED.items():
        if params.get(field) not in (None, False):
            raise InputError(why, field=field)


# --- streamed events ------------------------------------------------------------------------


def take_stream(params: JsonDict) -> bool:
    """Whether create params ask for a stream, taking ``stream`` and ``stream_options`` out of
    them: palaestra asks its model for the whole answer and streams it itself. ``InputError``
    naming ``stream`` when it is not a boolean."""
    params.pop("stream_options", None)
    stream = params.pop("stream", None)
    if stream is not None and not isinstance(stream, bool):
        raise InputError("must be a boolean", field="stream")
    return stream is True


class _Events:
    """Server-sent events in the order they are added, numbered from 0."""

    __slots__ = ("chunks", "number")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.number = 0

    def add(self, kind: str, **fields: Any) -> None:
        payload = {"type": kind, "sequence_number": self.number, **fields}
        self.number += 1
        self.chunks.append(b"event: %s\ndata: %s\n\n" % (kind.encode(), orjson.dumps(payload)))


def event_stream(response: JsonDict) -> bytes:
    """A conformed Response as the spec's streamed events, ``data: [DONE]`` last.

    ``response.created`` and ``response.in_progress`` carry it in progress with no output;
    each output item is added, streamed (its text, refusal, summary or arguments as one delta)
    and done; the terminal event (``response.completed``, ``.incomplete`` or ``.failed``, by
    its status) carries it whole.
    """
    events = _Events()
    started = {
        **response,
        "status": "in_progress",
        "completed_at": None,
        "output": [],
        "incomplete_details": None,
        "error": None,
        "usage": None,
    }
    events.add("response.created", response=started)
    events.add("response.in_progress", response=started)
    for index, item in enumerate(response.get("output") or ()):
        _item_events(events, index, item)
    terminal = TERMINAL_EVENTS.get(str(response.get("status")), "response.completed")
    events.add(terminal, response=response)
    events.chunks.append(DONE)
    return b"".join(events.chunks)


def _item_events(events: _Events, index: int, item: JsonDict) -> None:
    kind = item.get("type")
    where = {"item_id": item.get("id", ""), "output_index": index}
    if kind == "message":
        events.add(
            "response.output_item.added",
            output_index=index,
            item={**item, "status": "in_progress", "content": []},
        )
        for part_index, part in enumerate(item.get("content") or ()):
            _part_events(events, {**where, "content_index": part_index}, part)
    elif kind == "function_call":
        events.add(
            "response.output_item.added",
            output_index=index,
            item={**item, "status": "in_progress", "arguments": ""},
        )
        arguments = item.get("arguments", "")
        events.add("response.function_call_arguments.delta", delta=arguments, **where)
        events.add("response.function_call_arguments.done", arguments=arguments, **where)
    elif kind == "reasoning":
        events.add(
            "response.output_item.added",
            output_index=index,
            item={**item, "summary": [], **({"content": []} if "content" in item else {})},
        )
        _summary_events(events, where, item.get("summary") or ())
        for part_index, part in enumerate(item.get("content") or ()):
            text = str(part.get("text", "")) if isinstance(part, dict) else ""
            at = {**where, "content_index": part_index}
            events.add("response.reasoning.delta", delta=text, **at)
            events.add("response.reasoning.done", text=text, **at)
    else:  # a tool's output (an agent's trajectory), or another implementation's item
        events.add("response.output_item.added", output_index=index, item=item)
    events.add("response.output_item.done", output_index=index, item=item)


def _part_events(events: _Events, where: JsonDict, part: Any) -> None:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind == "output_text":
        text = str(part.get("text", ""))
        logprobs = part.get("logprobs") or []
        events.add("response.content_part.added", part={**part, "text": ""}, **where)
        events.add("response.output_text.delta", delta=text, logprobs=logprobs, **where)
        events.add("response.output_text.done", text=text, logprobs=logprobs, **where)
    elif kind == "refusal":
        refusal = str(part.get("refusal", ""))
        events.add("response.content_part.added", part={**part, "refusal": ""}, **where)
        events.add("response.refusal.delta", delta=refusal, **where)
        events.add("response.refusal.done", refusal=refusal, **where)
    else:
        events.add("response.content_part.added", part=part, **where)
    events.add("response.content_part.done", part=part, **where)


def _summary_events(events: _Events, where: JsonDict, summary: Iterable[Any]) -> None:
    for summary_index, part in enumerate(summary):
        if not isinstance(part, dict):
            continue
        text = str(part.get("text", ""))
        at = {**where, "summary_index": summary_index}
        events.add("response.reasoning_summary_part.added", part={**part, "text": ""}, **at)
        events.add("response.reasoning_summary_text.delta", delta=text, **at)
        events.add("response.reasoning_summary_text.done", text=text, **at)
        events.add("response.reasoning_summary_part.done", part=part, **at)
