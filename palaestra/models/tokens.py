"""Token capture: what a model call's training fields are, where servers put them, and history.

Every model call can leave, on its last output item, the three training fields NeMo Gym names
(``TOKEN_FIELDS``): ``prompt_token_ids``, ``generation_token_ids`` and ``generation_log_probs``.
Capture is opt-in per model (``options: {return_tokens: true}``, or ``token_mode: true`` for the
token-in/token-out mode that keeps multi-turn rollouts exact by construction).

Servers answer them in three shapes, all read by ``captured_tokens``:

- vLLM (0.10.2 and later) Chat Completions with ``logprobs: true, return_token_ids: true``:
  ``prompt_token_ids`` at the top level, ``choices[0].token_ids`` and
  ``choices[0].logprobs.content[i].logprob``; with ``return_tokens_as_token_ids`` each
  ``logprobs.content[i].token`` is also ``"token_id:<id>"`` (read when ``token_ids`` is missing).
- SGLang Chat Completions with ``logprobs, return_token_ids, return_prompt_token_ids``:
  ``choices[0].prompt_token_ids`` and ``choices[0].token_ids``, log-probs as vLLM's.
- vLLM and SGLang ``/v1/completions`` with ``logprobs: 0, return_token_ids: true``:
  ``choices[0].prompt_token_ids``, ``choices[0].token_ids`` and
  ``choices[0].logprobs.token_logprobs``.

A server that was asked and answers none of them fails the call (``ModelError`` naming what is
missing): a rollout that silently lacks its tokens would train on nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from palaestra.errors import ModelError
from palaestra.types import JsonDict

CHAT_CAPTURE_PARAMS: JsonDict = {
    "logprobs": True,
    "return_token_ids": True,  # vLLM >= 0.10.2 and SGLang: choices[0].token_ids
    "return_prompt_token_ids": True,  # SGLang: choices[0].prompt_token_ids
    "return_tokens_as_token_ids": True,  # vLLM: logprobs tokens as "token_id:<id>"
}
"""What a Chat Completions request adds to get the training fields back (vLLM and SGLang each
ignore the other's names)."""

COMPLETION_CAPTURE_PARAMS: JsonDict = {"logprobs": 0, "return_token_ids": True}
"""What a ``/v1/completions`` request adds: the sampled token's log-prob (no alternatives) and
the token ids of prompt and generation."""

_TOKEN_ID_PREFIX = "token_id:"


@dataclass(frozen=True, slots=True)
class TokenOptions:
    """A model's token settings, read from ``config.options``.

    ``return_tokens`` captures the training fields of every call; ``token_mode`` also renders
    each turn as token ids appended to the ids of the turns before (implies capture).
    """

    return_tokens: bool = False
    token_mode: bool = False

    @property
    def capture(self) -> bool:
        return self.return_tokens or self.token_mode

    @classmethod
    def of(cls, options: JsonDict) -> TokenOptions:
        return cls(
            return_tokens=bool(options.get("return_tokens", False)),
            token_mode=bool(options.get("token_mode", False)),
        )


_INT = frozenset({int})
_NUMBER = frozenset({int, float})


def _int_list(value: Any) -> list[int] | None:
    # set(map(type, ...)) runs in C: far faster than an isinstance loop over a prompt's ids
    # (measured: benchmarks/results/micro.md), and it refuses bools (their type is bool, not int).
    if type(value) is list and set(map(type, value)) <= _INT:
        return value
    return None


def _ids_from_logprob_tokens(content: Any) -> list[int] | None:
    """Token ids from vLLM's ``"token_id:<id>"`` log-prob tokens, when every entry is one."""
    if not isinstance(content, list) or not content:
        return None
    try:
        tokens = [entry["token"] for entry in content]
        if not all(token.startswith(_TOKEN_ID_PREFIX) for token in tokens):
            return None
        return [int(token[len(_TOKEN_ID_PREFIX) :]) for token in tokens]
    except (KeyError, TypeError, AttributeError, ValueError):
        return None


def _log_probs(choice: JsonDict) -> tuple[list[float] | None, Any]:
    """The sampled tokens' log-probs of a choice (chat or completion shape), and the chat
    ``content`` list (which may also carry the ids)."""
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, dict):
        return None, None
    content = logprobs.get("content")
    values: Any
    if isinstance(content, list):  # Chat Completions
        try:
            values = [entry["logprob"] for entry in content]
        except (KeyError, TypeError):
            return None, content
    else:  # Completions
        values = logprobs.get("token_logprobs")
    if type(values) is not list:
        return None, content
    kinds = set(map(type, values))
    if not kinds <= _NUMBER:
        return None, content
    return (values if kinds <= {float} else [float(v) for v in values]), content


def captured_tokens(answer: JsonDict, where: str) -> JsonDict:
    """The training fields of a chat or completion answer, from whichever shape the server used.

    Raises ``ModelError`` naming ``where`` when a field is missing or the generated ids and
    log-probs differ in length.
    """
    choices = answer.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(choice, dict):
        raise ModelError(f"{where}: the answer has no choice to read token ids from")
    log_probs, content = _log_probs(choice)
    # ``is None``, not ``or``: an empty generation (an abort before the first token) is ids.
    generated = _int_list(choice.get("token_ids"))
    if generated is None:
        generated = _ids_from_logprob_tokens(content)
    prompt = _int_list(answer.get("prompt_token_ids"))
    if prompt is None:
        prompt = _int_list(choice.get("prompt_token_ids"))
    missing = [
        name
        for name, value in (
            ("prompt token ids", prompt),
            ("generated token ids", generated),
            ("log-probs", log_probs),
        )
        if value is None
    ]
    if missing:
        raise ModelError(
            f"{where} answered no {' and no '.join(missing)} although asked "
            "(return_tokens needs vLLM >= 0.10.2 or SGLang with return_token_ids)"
        )
    assert prompt is not None and generated is not None and log_probs is not None
    if len(generated) != len(log_probs):
        raise ModelError(
            f"{where} answered {len(generated)} generated token ids but {len(log_probs)} log-probs"
        )
    return {
        "prompt_token_ids": prompt,
        "generation_token_ids": generated,
        "generation_log_probs": log_probs,
    }


@dataclass(frozen=True, slots=True)
class TokenHistory:
    """Where a request's input stands in token terms.

    ``prompt_token_ids + generation_token_ids`` of the last model call found in the input (on
    the last item that carries both) are the exact prefix of the next prompt; ``new_items``
    are the items after it (tool outputs, user turns) that still have to be rendered.
    Without any earlier call, ``prefix`` is None and every item is new.
    """

    prefix: list[int] | None
    generated: list[int]
    new_items: list[JsonDict]


def token_history(items: list[JsonDict]) -> TokenHistory:
    """Split input items at the last one that carries a model call's token ids."""
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        prompt = _int_list(item.get("prompt_token_ids")) if isinstance(item, dict) else None
        generated = _int_list(item.get("generation_token_ids")) if prompt is not None else None
        if prompt is not None and generated is not None:
            return TokenHistory(prompt + generated, generated, items[index + 1 :])
    return TokenHistory(None, [], items)
