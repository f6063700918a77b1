"""A toy tokenizer and ChatML/hermes chat template, for a scripted vLLM-compatible server.

Ids: four special tokens (``<|im_start|>`` 1, ``<|im_end|>`` 2, ``<tool_call>`` 3,
``</tool_call>`` 4), every other byte ``16 + byte``. ``generate`` (what the scripted "model"
samples) may merge the pair ``{"`` into one id, ``MERGED``, while ``encode`` (how the server
tokenises a prompt) never does: exactly the drift of a real BPE server, where text the model
generated as one id sequence comes back as another when the history is re-tokenised.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from palaestra.types import JsonDict

SPECIALS = {"<|im_start|>": 1, "<|im_end|>": 2, "<tool_call>": 3, "</tool_call>": 4}
IM_END = 2
MERGED = 300
_MERGED_TEXT = '{"'
_BYTE_BASE = 16
_SPLIT = re.compile("(" + "|".join(re.escape(s) for s in SPECIALS) + ")")
_NAMES = {value: key for key, value in SPECIALS.items()}


class ToyTokenizer:
    """Encode, decode and render chat turns; ``merges`` turns on the generation-only merge."""

    def __init__(self, *, merges: bool = True) -> None:
        self.merges = merges

    def encode(self, text: str, *, merge: bool = False) -> list[int]:
        ids: list[int] = []
        for piece in _SPLIT.split(text):
            if piece in SPECIALS:
                ids.append(SPECIALS[piece])
                continue
            data = piece.encode()
            index = 0
            while index < len(data):
                if merge and data[index : index + 2] == _MERGED_TEXT.encode():
                    ids.append(MERGED)
                    index += 2
                    continue
                ids.append(_BYTE_BASE + data[index])
                index += 1
        return ids

    def generate(self, text: str) -> list[int]:
        """The ids the scripted model "samples" for ``text`` (merged when ``merges``)."""
        return self.encode(text, merge=self.merges)

    def piece(self, token: int) -> str:
        if token in _NAMES:
            return _NAMES[token]
        if token == MERGED:
            return _MERGED_TEXT
        return bytes([token - _BYTE_BASE]).decode("latin-1")

    def decode(self, ids: list[int], *, skip_special: bool = False) -> str:
        data = bytearray()
        for token in ids:
            if token in _NAMES:
                if not skip_special:
                    data.extend(_NAMES[token].encode())
            elif token == MERGED:
                data.extend(_MERGED_TEXT.encode())
            else:
                data.append(token - _BYTE_BASE)
        return data.decode("utf-8", errors="replace")

    # --- the chat template (ChatML with hermes tool calls, as Qwen2.5's) ----------------------

    def render(
        self, messages: list[JsonDict], tools: Any = None, *, add_generation_prompt: bool = True
    ) -> str:
        text = ""
        if tools:
            listed = "\n".join(orjson.dumps(tool).decode() for tool in tools)
            text += f"<|im_start|>system\n# Tools\n<tools>\n{listed}\n</tools><|im_end|>\n"
        for message in messages:
            role = message.get("role")
            if role == "assistant":
                text += f"<|im_start|>assistant\n{assistant_body(message)}<|im_end|>\n"
            else:
                text += f"<|im_start|>{role}\n{message.get('content') or ''}<|im_end|>\n"
        if add_generation_prompt:
            text += "<|im_start|>assistant\n"
        return text


def assistant_body(message: JsonDict) -> str:
    """An assistant message's text in the template: its content, then hermes tool calls."""
    text = str(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments") or "{}"
        parsed = orjson.loads(arguments) if isinstance(arguments, str) else arguments
        payload = orjson.dumps({"name": function.get("name"), "arguments": parsed}).decode()
        text += f"<tool_call>\n{payload}\n</tool_call>"
    return text
