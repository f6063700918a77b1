"""A Chat Completions request read as llama.cpp arguments, and the chat completion written back.

Pure functions on dicts: the embedded model's request and answer shapes, testable without
llama.cpp.
"""

from __future__ import annotations

import time
import uuid

from palaestra.models.tool_formats import chat_tool_call
from palaestra.types import JsonDict


def _number(body: JsonDict, key: str, default: float) -> float:
    value = body.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return default


def sampling_of(body: JsonDict, *, seed: int, temperature: float, top_p: float) -> JsonDict:
    """llama.cpp sampling arguments with OpenAI semantics: no top-k, min-p or repetition penalty
    unless the request names them (as vLLM's extra parameters do). ``seed``, ``temperature``
    and ``top_p`` apply when the request sets none (the server's defaults, as vLLM takes them
    from a model's generation config)."""
    requested_seed = body.get("seed")
    return {
        "temperature": _number(body, "temperature", temperature),
        "top_p": _number(body, "top_p", top_p),
        "top_k": int(_number(body, "top_k", 0)),
        "min_p": _number(body, "min_p", 0.0),
        "repeat_penalty": _number(body, "repetition_penalty", _number(body, "repeat_penalty", 1.0)),
        "frequency_penalty": _number(body, "frequency_penalty", 0.0),
        "presence_penalty": _number(body, "presence_penalty", 0.0),
        "seed": requested_seed if isinstance(requested_seed, int) else seed,
    }


def max_tokens_of(body: JsonDict, default: int) -> int:
    """The request's token limit (``max_completion_tokens`` or ``max_tokens``), else ``default``."""
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return default


def stops_of(body: JsonDict) -> list[str]:
    stop = body.get("stop")
    if isinstance(stop, str):
        return [stop]
    return [s for s in stop if isinstance(s, str)] if isinstance(stop, list) else []


def chat_completion(
    model: str,
    text: str | None,
    call: JsonDict | None,
    finish: str,
    prompt_tokens: int,
    completion_tokens: int,
) -> JsonDict:
    """A chat completion with one choice: ``text``, or one tool ``call`` ({name, arguments})."""
    message: JsonDict = {"role": "assistant", "content": text}
    if call is not None:
        message["tool_calls"] = [chat_tool_call(call["name"], call["arguments"])]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
