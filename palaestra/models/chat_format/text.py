"""The legacy Completions API (``/v1/completions``) <-> Responses, for a client that speaks it.

A completion request is one prompt string; it becomes Responses params whose input is that
prompt as one user message (a palaestra ``Model`` answers conversations, so the prompt goes
through the model's chat template), and the Response comes back as a ``text_completion``
whose text is the answer's message text. A prompt of token ids or several prompts at once
cannot be expressed as Responses params: ``ModelError`` says so.
"""

from __future__ import annotations

import time

from palaestra.errors import ModelError
from palaestra.models.chat_format._common import count, new_id, part_text
from palaestra.models.chat_format.completions import finish_reason
from palaestra.types import JsonDict

_PASSED = ("temperature", "top_p", "seed", "metadata")


def completion_request_to_responses_params(body: JsonDict) -> JsonDict:
    """A Completions request body -> Responses create params (one user message)."""
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise ModelError(
            "completion request: 'prompt' must be one string (token-id prompts and several "
            "prompts at once are not supported)"
        )
    params: JsonDict = {"input": [{"type": "message", "role": "user", "content": prompt}]}
    for key in _PASSED:
        if body.get(key) is not None:
            params[key] = body[key]
    if body.get("max_tokens") is not None:
        params["max_output_tokens"] = body["max_tokens"]
    return params


def response_text(response: JsonDict) -> str:
    """The text of a Response's assistant messages, joined."""
    texts: list[str] = []
    for item in response.get("output") or ():
        if isinstance(item, dict) and item.get("type") == "message":
            texts.extend(part_text(part) or "" for part in item.get("content") or ())
    return "".join(texts)


def response_to_text_completion(response: JsonDict) -> JsonDict:
    """An OpenAI ``Response`` dict -> a ``text_completion``."""
    usage = response.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    created = response.get("created_at")
    prompt, completion = count(usage.get("input_tokens")), count(usage.get("output_tokens"))
    return {
        "id": f"cmpl-{str(response.get('id') or new_id('resp')).removeprefix('resp_')}",
        "object": "text_completion",
        "created": int(created) if isinstance(created, int | float) else int(time.time()),
        "model": response.get("model", ""),
        "choices": [
            {
                "index": 0,
                "text": response_text(response),
                "logprobs": None,
                "finish_reason": finish_reason(response, tool_calls=False),
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": count(usage.get("total_tokens")) or prompt + completion,
        },
    }
