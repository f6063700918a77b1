"""The Open Reward Standard (ORS) on the wire: its JSON shapes and its Server-Sent Events.

ORS (the protocol of the ``openreward`` SDK) serves environments over HTTP: an environment's
``splits`` and their ``tasks`` (JSON objects, the *task specs*), its ``tools`` (name,
description, ``input_schema``), and episodes as sessions (``X-Session-ID``) whose tool calls
(``POST /{env}/call``) answer as an event stream: ``task_id`` first, then ``end`` carrying the
result (``{"ok": true, "output": {blocks, metadata, reward, finished}}`` or ``{"ok": false,
"error", "reason"}``), or ``error`` when the tool itself broke. A plain request that is
refused answers its HTTP status with ``{"detail": message}``.

Encoders (what ``palaestra serve ors`` sends) sit beside their decoders (what the ``ors:``
environment reads), so each shape is written down once.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from palaestra.errors import PalaestraError
from palaestra.types import JsonDict

SPLIT_TYPES = ("train", "validation", "test")
"""The kinds of split ORS knows; a split of another name is served as ``validation``."""
ERROR_REASONS = ("not_found", "name_collision", "input_validation", "episode_finished")
"""Why a tool call was refused (``RunToolError.reason``): the caller's mistake, not a failure."""
SESSION_HEADER = "X-Session-ID"
PING_INTERVAL = 10.0
"""Seconds between the comments that keep a long tool call's stream alive (the SDK's client
gives up on a stream silent for 30 s)."""

_FAILED = re.compile(r"^rollout failed \(([a-z_]+)\): (.*)$", re.DOTALL)


class OrsProtocolError(PalaestraError, ValueError):
    """An answer that is not in ORS's shape (the message says which field)."""


# --- errors ---------------------------------------------------------------------------------


def detail(message: str) -> JsonDict:
    """The body of a refused request: ``{"detail": message}``."""
    return {"detail": message}


def detail_of(body: bytes) -> str:
    """The ``detail`` of a refused request's body, else the body's text (cut short)."""
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body.decode("utf-8", "replace")[:300]
    if isinstance(parsed, dict) and "detail" in parsed:
        return str(parsed["detail"])[:2000]
    return body.decode("utf-8", "replace")[:300]


def failure_message(kind: str, reason: str) -> str:
    """An episode that failed, as the ``error`` event says it: its kind stays readable."""
    return f"rollout failed ({kind}): {reason}"


def parse_failure(message: str) -> tuple[str | None, str]:
    """``(kind, reason)`` of ``failure_message``'s text; ``(None, message)`` for another."""
    match = _FAILED.match(message.strip())
    if match is None:
        return None, message
    return match.group(1), match.group(2)


# --- splits, tasks and tools ----------------------------------------------------------------


def split_entry(name: str) -> JsonDict:
    """A split as ``GET /{env}/splits`` lists it."""
    return {"name": name, "type": name if name in SPLIT_TYPES else "validation"}


def split_names(listed: Any) -> list[str]:
    """The names of the splits a server listed (entries, or bare names as older servers)."""
    if not isinstance(listed, list):
        raise OrsProtocolError("splits: expected a list")
    names: list[str] = []
    for entry in listed:
        name = entry.get("name") if isinstance(entry, dict) else entry
        if not isinstance(name, str):
            raise OrsProtocolError(f"splits: {entry!r} has no name")
        names.append(name)
    return names


def ors_tool(function_tool: JsonDict) -> JsonDict:
    """A Responses function tool as an ORS ``ToolSpec``."""
    schema = function_tool.get("parameters") or {"type": "object", "properties": {}}
    return {
        "name": function_tool["name"],
        "description": function_tool.get("description") or "",
        "input_schema": schema,
    }


def function_tool(spec: Any) -> JsonDict:
    """An ORS ``ToolSpec`` as a Responses function tool (the schema as the server gave it)."""
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise OrsProtocolError(f"tools: {spec!r} is not a tool with a name")
    schema = spec.get("input_schema")
    if schema is None:
        schema = {"type": "object", "properties": {}}
    if not isinstance(schema, dict):
        raise OrsProtocolError(f"tools: '{spec['name']}' has an input_schema that is no object")
    return {
        "type": "function",
        "name": spec["name"],
        "description": str(spec.get("description") or ""),
        "parameters": schema,
        "strict": False,
    }


def tools_answer(tools: list[JsonDict], terminal: JsonDict | None) -> JsonDict:
    """``GET /{env}/tools``: the tools the model sees, and the terminal tool (hidden from them:
    a harness sends the model's final plain message through it)."""
    return {
        "tools": [ors_tool(tool) for tool in tools],
        "terminal_tool": terminal,
        "supports_score_group": False,
        "message_block_types": ["text"],
    }


# --- prompts ---------------------------------------------------------------------------------


def text_block(text: str) -> JsonDict:
    return {"type": "text", "text": text, "detail": None}


def blocks_text(blocks: Any) -> str:
    """The text of content blocks (an image stands as ``[image <mimeType>]``)."""
    if not isinstance(blocks, list):
        raise OrsProtocolError("blocks: expected a list")
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            raise OrsProtocolError(f"blocks: {block!r} is not a block")
        if block.get("type") == "image":
            parts.append(f"[image {block.get('mimeType') or 'of no type'}]")
        elif isinstance(block.get("text"), str):
            parts.append(block["text"])
        else:
            raise OrsProtocolError(f"blocks: a {block.get('type')!r} block has no text")
    return "\n".join(parts)


def _role(role: object) -> str:
    return "system" if role in ("system", "developer") else str(role or "user")


def prompt_messages(messages: list[JsonDict]) -> list[JsonDict]:
    """Chat messages (``role``, ``content``) as ORS ``Message`` objects (``/messages``)."""
    return [
        {"role": _role(m.get("role")), "blocks": [text_block(_content(m))], "detail": None}
        for m in messages
    ]


def prompt_blocks(messages: list[JsonDict]) -> list[JsonDict]:
    """Chat messages as ``/prompt`` blocks: one user message is its text; more are each
    headed by a ``[role]`` block (its role also under ``detail``), as ORS flattens them."""
    if len(messages) == 1 and _role(messages[0].get("role")) == "user":
        return [text_block(_content(messages[0]))]
    blocks: list[JsonDict] = []
    for message in messages:
        role = _role(message.get("role"))
        blocks.append({"type": "text", "text": f"[{role}]", "detail": {"role": role}})
        blocks.append(text_block(_content(message)))
    return blocks


def chat_messages(listed: Any) -> list[JsonDict]:
    """ORS ``Message`` objects (``/messages``) as chat messages (text only)."""
    if not isinstance(listed, list):
        raise OrsProtocolError("messages: expected a list")
    messages: list[JsonDict] = []
    for entry in listed:
        if not isinstance(entry, dict) or entry.get("role") not in ("system", "user", "assistant"):
            raise OrsProtocolError(f"messages: {entry!r} is not a message with a role")
        messages.append({"role": entry["role"], "content": blocks_text(entry.get("blocks"))})
    return messages


def _content(message: JsonDict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


# --- tool calls -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CallResult:
    """A tool call's answer: its text, reward and whether it finished the episode, or the
    error (and its ``reason``) of a refused call."""

    ok: bool
    text: str = ""
    reward: float | None = None
    finished: bool = False
    metadata: JsonDict | None = None
    error: str = ""
    reason: str | None = None


def call_success(
    text: str, *, reward: float | None = None, finished: bool = False, metadata: JsonDict | None
) -> JsonDict:
    """``RunToolSuccess``: the output the model reads, with its reward where there is one."""
    output = {"blocks": [text_block(text)], "metadata": metadata, "reward": reward}
    return {"ok": True, "output": {**output, "finished": finished}}


def call_refused(error: str, reason: str) -> JsonDict:
    """``RunToolError``: a call the caller got wrong (``reason`` is one of ``ERROR_REASONS``)."""
    return {"ok": False, "error": error, "reason": reason}


def call_result(answer: Any) -> CallResult:
    """Read a ``/call`` result; ``OrsProtocolError`` naming the field that is wrong."""
    if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool):
        raise OrsProtocolError("call: the result has no boolean 'ok'")
    if not answer["ok"]:
        reason = answer.get("reason")
        return CallResult(
            False,
            error=str(answer.get("error") or "the tool call was refused"),
            reason=reason if reason in ERROR_REASONS else None,
        )
    output = answer.get("output")
    if not isinstance(output, dict):
        raise OrsProtocolError("call: 'output' is not an object")
    reward = output.get("reward")
    if reward is not None:
        if isinstance(reward, bool) or not isinstance(reward, int | float):
            raise OrsProtocolError(f"call: output.reward {reward!r} is not a number")
        if not math.isfinite(reward):
            raise OrsProtocolError(f"call: output.reward {reward!r} is not finite")
    metadata = output.get("metadata")
    return CallResult(
        True,
        text=blocks_text(output.get("blocks", [])),
        reward=None if reward is None else float(reward),
        finished=bool(output.get("finished", False)),
        metadata=metadata if isinstance(metadata, dict) else None,
    )


# --- Server-Sent Events -----------------------------------------------------------------------


def sse_event(event: str, data: str) -> bytes:
    """One event of a stream (``data`` is one line: JSON from orjson has no newline)."""
    lines = "".join(f"data: {line}\n" for line in data.split("\n"))
    return f"event: {event}\n{lines}\n".encode()


SSE_PING = b": ping\n\n"


def sse_events(body: bytes) -> list[tuple[str, str]]:
    """The ``(event, data)`` pairs of a whole stream (comments skipped)."""
    events: list[tuple[str, str]] = []
    event: str | None = None
    data: list[str] = []
    for raw in [*body.decode("utf-8", "replace").splitlines(), ""]:
        if not raw:
            if event is not None:
                events.append((event, "\n".join(data)))
            event, data = None, []
            continue
        if raw.startswith(":"):
            continue
        field, _, value = raw.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
    return events


def stream_result(events: Iterable[tuple[str, str]]) -> tuple[str, str]:
    """What a stream ended with: ``("end", the joined chunks)`` or ``("error", message)``;
    ``OrsProtocolError`` when it ended with neither."""
    chunks: list[str] = []
    for event, data in events:
        if event == "chunk":
            chunks.append(data)
        elif event == "end":
            return "end", "".join([*chunks, data])
        elif event == "error":
            return "error", data or "the server reported an error"
    raise OrsProtocolError("the event stream ended without an 'end' or 'error' event")
