"""What both directions of the Responses <-> Chat Completions conversion share."""

from __future__ import annotations

import uuid
from typing import Any

import orjson

from palaestra.errors import ModelError
from palaestra.types import JsonDict

TOKEN_FIELDS = ("prompt_token_ids", "generation_token_ids", "generation_log_probs")
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def token_fields(source: JsonDict) -> JsonDict:
    return {key: source[key] for key in TOKEN_FIELDS if key in source}


def malformed(what: str) -> ModelError:
    return ModelError(f"malformed model answer: {what}")


def count(value: Any) -> int:
    """A token count from a usage object; anything that is not a number counts as unknown (0)."""
    return int(value) if isinstance(value, int | float) else 0


def nested_count(usage: JsonDict, details: str, key: str) -> int:
    """A count inside a usage details object (``prompt_tokens_details.cached_tokens``...)."""
    inner = usage.get(details)
    return count(inner.get(key)) if isinstance(inner, dict) else 0


def part_text(part: Any) -> str | None:
    """The text of a content part, or None when the part is not text."""
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind in _TEXT_PARTS:
        return str(part.get("text", ""))
    if kind == "refusal":
        return str(part.get("refusal", ""))
    return None


def reasoning_text(item: JsonDict) -> str:
    parts = item.get("content") or item.get("summary") or []
    return "\n".join(str(part.get("text", "")) for part in parts if isinstance(part, dict))


def function_call_item(call: Any) -> JsonDict:
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        raise malformed(f"a tool call has no 'function' object: {call!r:.80}")
    function = call["function"]
    if not isinstance(function.get("name"), str):
        raise malformed(f"a tool call has no function name: {call!r:.80}")
    arguments = function.get("arguments")
    if not isinstance(arguments, str):  # some servers send the parsed object
        arguments = orjson.dumps(arguments if arguments is not None else {}).decode()
    return {
        "type": "function_call",
        "id": new_id("fc"),
        "call_id": call.get("id") or new_id("call"),
        "name": function["name"],
        "arguments": arguments,
        "status": "completed",
    }
