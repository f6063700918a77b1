"""Reading tool calls out of generated text, in the chat format the model was trained on.

In token mode a server generates raw text from token ids (``/v1/completions``), so nothing on
the server parses tool calls: the client does, in the format of the model's chat template, as
vLLM's ``--tool-call-parser`` would. ``hermes`` is the format of Qwen2.5/Qwen3, Hermes and the
many templates that copied it::

    some text<tool_call>
    {"name": "add", "arguments": {"a": 2, "b": 2}}
    </tool_call>

A block whose JSON is not a ``{name, arguments}`` object stays in the text (as vLLM's hermes
parser leaves it), so the agent sees what the model wrote.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from palaestra.errors import ConfigError
from palaestra.types import JsonDict


@dataclass(frozen=True, slots=True)
class ParsedTurn:
    """An assistant turn read from its text: the reply and the chat tool calls it made."""

    text: str
    tool_calls: list[JsonDict]


_HERMES_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


def chat_tool_call(name: str, arguments: object) -> JsonDict:
    """A Chat Completions tool call with a fresh id (``arguments`` as a JSON string)."""
    if not isinstance(arguments, str):
        arguments = orjson.dumps(arguments if arguments is not None else {}).decode()
    return {
        "id": f"call_{uuid.uuid4().hex[:24]}",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def parse_hermes(text: str) -> ParsedTurn:
    """Hermes-style ``<tool_call>{json}</tool_call>`` blocks; the rest is the reply."""
    calls: list[JsonDict] = []
    kept: list[str] = []
    position = 0
    for block in _HERMES_BLOCK.finditer(text):
        try:
            call = orjson.loads(block.group(1))
        except orjson.JSONDecodeError:
            call = None
        name = call.get("name") if isinstance(call, dict) else None
        if not isinstance(name, str):
            continue  # not a call: the block stays in the text
        assert isinstance(call, dict)
        kept.append(text[position : block.start()])
        position = block.end()
        calls.append(chat_tool_call(name, call.get("arguments", {})))
    kept.append(text[position:])
    return ParsedTurn("".join(kept).strip() if calls else text, calls)


def parse_none(text: str) -> ParsedTurn:
    """No tool calls: the whole text is the reply."""
    return ParsedTurn(text, [])


TOOL_FORMATS: dict[str, Callable[[str], ParsedTurn]] = {
    "hermes": parse_hermes,
    "none": parse_none,
}
"""Every tool-call format by name."""


def tool_format(name: str) -> Callable[[str], ParsedTurn]:
    """The parser of the format ``name``; an unknown name is a one-line ``ConfigError``."""
    try:
        return TOOL_FORMATS[name]
    except KeyError:
        known = ", ".join(sorted(TOOL_FORMATS))
        raise ConfigError(
            f"model backend 'openai': unknown tool_format '{name}' (known: {known})"
        ) from None
