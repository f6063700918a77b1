"""Answers: a chat completion <-> an OpenAI ``Response``."""

from __future__ import annotations

import time
from typing import Any

from palaestra.models.chat_format._common import (
    count,
    function_call_item,
    malformed,
    nested_count,
    new_id,
    part_text,
    reasoning_text,
    token_fields,
)
from palaestra.types import JsonDict, empty_usage

_ECHOED_FIELDS: JsonDict = {
    "tools": [],
    "tool_choice": "auto",
    "temperature": None,
    "top_p": None,
    "max_output_tokens": None,
    "parallel_tool_calls": True,
    "instructions": None,
    "metadata": None,
}
CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
_INCOMPLETE_REASONS = {"length": "max_output_tokens", "content_filter": "content_filter"}
_FINISH_REASONS = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
    CONTEXT_LENGTH_EXCEEDED: "length",
}


def _split_think(text: str) -> tuple[str | None, str]:
    """Separate a leading ``<think>...</think>`` block (models without a reasoning parser)."""
    stripped = text.lstrip()
    if not stripped.startswith("<think>"):
        return None, text
    thought, closed, rest = stripped[len("<think>") :].partition("</think>")
    if not closed:  # cut off while thinking: everything is reasoning
        return thought.strip(), ""
    return thought.strip(), rest.lstrip()


def _response_usage(usage: Any) -> JsonDict:
    if not isinstance(usage, dict):
        return empty_usage()
    prompt = count(usage.get("prompt_tokens"))
    completion = count(usage.get("completion_tokens"))
    return {
        "input_tokens": prompt,
        "output_tokens": completion,
        "total_tokens": count(usage.get("total_tokens")) or prompt + completion,
        "input_tokens_details": {
            "cached_tokens": nested_count(usage, "prompt_tokens_details", "cached_tokens")
        },
        "output_tokens_details": {
            "reasoning_tokens": nested_count(usage, "completion_tokens_details", "reasoning_tokens")
        },
    }


def _response(
    params: JsonDict,
    *,
    model: Any,
    created_at: Any,
    output: list[JsonDict],
    usage: JsonDict,
    incomplete_reason: str | None,
) -> JsonDict:
    response: JsonDict = {
        "id": new_id("resp"),
        "object": "response",
        "created_at": created_at if isinstance(created_at, int | float) else int(time.time()),
        "model": model if isinstance(model, str) else params.get("model", ""),
        "status": "incomplete" if incomplete_reason else "completed",
        "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
        "error": None,
        "output": output,
        "usage": usage,
    }
    for key, default in _ECHOED_FIELDS.items():
        response[key] = params.get(key, default)
    return response


def incomplete_response(
    params: JsonDict, *, model: str, reason: str = "max_output_tokens"
) -> JsonDict:
    """An empty incomplete Response: how a context-length error reaches the agent."""
    return _response(
        params,
        model=model,
        created_at=None,
        output=[],
        usage=empty_usage(),
        incomplete_reason=reason,
    )


def context_length_response(
    params: JsonDict, *, model: str, message: str, input_tokens: int = 0
) -> JsonDict:
    """An empty incomplete Response for a prompt that does not fit the model's context.

    The backend's own reason and message are kept as ``incomplete_details.code`` and
    ``.message``, so a trajectory that ran out of context is told apart from one cut off by
    ``max_output_tokens``. ``reason`` is null: OpenAI's ``Response`` type, which NeMo Gym
    validates every Response against (its agents, its ``/verify``), admits only its own reasons
    there, and extra fields.
    """
    usage = empty_usage()
    if input_tokens:
        usage["input_tokens"] = usage["total_tokens"] = input_tokens
    response = _response(
        params, model=model, created_at=None, output=[], usage=usage, incomplete_reason=None
    )
    response["status"] = "incomplete"
    response["incomplete_details"] = {
        "reason": None,
        "code": CONTEXT_LENGTH_EXCEEDED,
        "message": message,
    }
    return response


def _first_choice(completion: Any) -> JsonDict:
    if not isinstance(completion, dict):
        raise malformed(f"the completion is not a JSON object: {completion!r:.80}")
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices:
        raise malformed("the completion has no 'choices'")
    choice = choices[0]
    if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
        raise malformed("the first choice has no 'message' object")
    return choice


def chat_to_response(completion: JsonDict, params: JsonDict) -> JsonDict:
    """A chat completion -> an OpenAI ``Response`` dict echoing ``params``."""
    choice = _first_choice(completion)
    message: JsonDict = choice["message"]
    text = message.get("content")
    if isinstance(text, list):
        text = "".join(part_text(part) or "" for part in text)
    if text is not None and not isinstance(text, str):
        raise malformed(f"the message content is not a string: {text!r:.80}")
    tool_calls = message.get("tool_calls") or []
    if not isinstance(tool_calls, list):
        raise malformed("the message 'tool_calls' is not a list")

    reasoning = message.get("reasoning_content") or message.get("reasoning")
    thought, text = _split_think(text or "")
    reasoning = reasoning or thought
    incomplete_reason = _INCOMPLETE_REASONS.get(str(choice.get("finish_reason")))

    output: list[JsonDict] = []
    if reasoning:
        output.append(
            {
                "type": "reasoning",
                "id": new_id("rs"),
                "summary": [{"type": "summary_text", "text": str(reasoning)}],
            }
        )
    content: list[JsonDict] = []
    if text or (not tool_calls and not output):  # never answer an empty output list
        content.append({"type": "output_text", "text": text, "annotations": []})
    if message.get("refusal"):
        content.append({"type": "refusal", "refusal": str(message["refusal"])})
    if content:
        output.append(
            {
                "type": "message",
                "id": new_id("msg"),
                "role": "assistant",
                "status": "incomplete" if incomplete_reason else "completed",
                "content": content,
            }
        )
    output.extend(function_call_item(call) for call in tool_calls)
    output[-1].update(token_fields(message))
    return _response(
        params,
        model=completion.get("model"),
        created_at=completion.get("created"),
        output=output,
        usage=_response_usage(completion.get("usage")),
        incomplete_reason=incomplete_reason,
    )


def finish_reason(response: JsonDict, *, tool_calls: bool | None = None) -> str:
    """A Response's ending as Chat Completions names it: ``length``, ``content_filter``,
    ``tool_calls`` (its output calls a function) or ``stop``. ``tool_calls``: whether it
    does, when the caller knows already (else its output is read)."""
    details = response.get("incomplete_details") or {}
    incomplete = details.get("reason") or details.get("code")
    finish = _FINISH_REASONS.get(str(incomplete))
    if finish is not None:
        return finish
    if tool_calls is None:
        output = response.get("output")
        tool_calls = isinstance(output, list) and any(
            isinstance(item, dict) and item.get("type") == "function_call" for item in output
        )
    return "tool_calls" if tool_calls else "stop"


def response_to_chat_completion(response: JsonDict) -> JsonDict:
    """An OpenAI ``Response`` dict -> a chat completion."""
    if not isinstance(response, dict) or not isinstance(response.get("output"), list):
        raise malformed("the response has no 'output' list")
    output: list[JsonDict] = response["output"]
    if not all(isinstance(item, dict) for item in output):
        raise malformed("an output item is not a JSON object")
    texts: list[str] = []
    reasoning: list[str] = []
    tool_calls: list[JsonDict] = []
    for item in output:
        kind = item.get("type")
        if kind == "message":
            texts.extend(part_text(part) or "" for part in item.get("content") or [])
        elif kind == "reasoning":
            reasoning.append(reasoning_text(item))
        elif kind == "function_call":
            tool_calls.append(
                {
                    "id": item.get("call_id"),
                    "type": "function",
                    "function": {
                        "name": item.get("name"),
                        "arguments": item.get("arguments", "{}"),
                    },
                }
            )
    message: JsonDict = {"role": "assistant", "content": "".join(texts) if texts else None}
    if reasoning:
        message["reasoning_content"] = "\n".join(reasoning)
    if tool_calls:
        message["tool_calls"] = tool_calls
    if output:
        message.update(token_fields(output[-1]))
    finish = finish_reason(response, tool_calls=bool(tool_calls))
    usage = response.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    created = response.get("created_at")
    return {
        "id": f"chatcmpl-{str(response.get('id') or new_id('resp')).removeprefix('resp_')}",
        "object": "chat.completion",
        "created": int(created) if isinstance(created, int | float) else int(time.time()),
        "model": response.get("model", ""),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": count(usage.get("input_tokens")),
            "completion_tokens": count(usage.get("output_tokens")),
            "total_tokens": count(usage.get("total_tokens")),
            "prompt_tokens_details": {
                "cached_tokens": nested_count(usage, "input_tokens_details", "cached_tokens")
            },
            "completion_tokens_details": {
                "reasoning_tokens": nested_count(usage, "output_tokens_details", "reasoning_tokens")
            },
        },
    }
