"""Aborted model calls are continued, never taken for answers.

Inference engines abort the generations in flight when a trainer updates their weights (vLLM's
``POST /pause`` with ``mode=abort``, SGLang's ``abort_all_requests``, NeMo RL's in-flight
refit). The call is answered at once, HTTP 200, with what was decoded so far and
``finish_reason: "abort"`` (Chat Completions and Completions alike; over the Responses API vLLM
answers ``status: "cancelled"`` for harmony models and, for the others, reports the abort as
``completed``, which no client can tell apart). Taken as an answer, the turn would end as if
the model had finished; ending the episode instead loses the rollout and its group.

Here the partial output is kept and the call resumed from it until a real finish (``stop``,
``length``, ``tool_calls``), on the endpoint that aborted it (the call waits there while the
engine is paused; a pool moves a call whose endpoint fails, from its start):

- token mode (``/v1/completions`` with token-id prompts) resumes from the prompt's ids followed
  by every id sampled so far, so the ids, the log-probs and the text of the segments join into
  one generation, exact: the prompt the next turn extends is the first segment's prompt, and
  every generated id is one the policy sampled (the loss mask covers exactly them);
- Chat Completions resumes with the partial text as the final assistant message and vLLM's
  ``continue_final_message: true, add_generation_prompt: false``; the server's tool parser
  reads only the last segment, so tool calls the abort split are read from the joined text
  (hermes, as token mode reads them); with ``return_tokens`` the
  continuation's prompt ids must be the first prompt's followed by the ids sampled so far,
  else the call fails naming where the server re-tokenised them;
- the Responses API has no continuation: a ``cancelled`` answer is asked again from its start.

Each resumption asks for the tokens still allowed (``max_tokens`` minus those decoded); a call
resumed more than ``MAX_RESUMPTIONS`` times fails (``ModelError`` naming why). A resumption is
not a retry: it spends none of the retry budget, and it is counted in ``ModelStats.resumptions``
(the aborted request, met by a pause, in ``ModelStats.paused_calls``: ``pauses``).
The check on the path where nothing aborts is one dictionary lookup per call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from palaestra.errors import ModelError
from palaestra.models.base import ModelStats
from palaestra.models.tokens import captured_tokens
from palaestra.models.tool_formats import ParsedTurn, parse_hermes
from palaestra.types import JsonDict

ABORT = "abort"
"""The ``finish_reason`` of a generation the engine aborted (vLLM, SGLang)."""

MAX_RESUMPTIONS = 64
"""Resumptions of one call before it fails: far more than the weight updates one generation
spans in a healthy run, few enough that an engine aborting everything forever is named."""

Post = Callable[[JsonDict], Awaitable[JsonDict]]


def _choice(answer: JsonDict) -> JsonDict | None:
    choices = answer.get("choices")
    choice = choices[0] if type(choices) is list and choices else None
    return choice if type(choice) is dict else None


def aborted(answer: JsonDict) -> bool:
    """Whether a chat or completion answer is an aborted generation."""
    choice = _choice(answer)
    return choice is not None and choice.get("finish_reason") == ABORT


def too_many_aborts(where: str, stats: ModelStats) -> ModelError:
    """The failure of a call aborted once more after ``MAX_RESUMPTIONS`` resumptions."""
    stats.failures += 1
    return ModelError(
        f"{where}: the engine aborted the same call {MAX_RESUMPTIONS + 1} times (each resumed "
        "from its partial output); an engine that aborts every generation is not serving"
    )


def _remaining(body: JsonDict, key: str, generated: int) -> int | None:
    """The tokens the call may still generate (None: no limit was asked)."""
    limit = body.get(key)
    return None if not isinstance(limit, int) else limit - generated


def _completion_tokens(answer: JsonDict, fallback: int) -> int:
    usage = answer.get("usage")
    count = usage.get("completion_tokens") if isinstance(usage, dict) else None
    return count if isinstance(count, int) and count >= 0 else fallback


def _sum_usage(first: JsonDict, last: JsonDict, generated: int) -> None:
    """``last``'s usage as the whole call's: the first prompt and every generated token."""
    usage = first.get("usage")
    prompt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if isinstance(prompt, int):
        last["usage"] = {
            **(last.get("usage") or {}),
            "prompt_tokens": prompt,
            "completion_tokens": generated,
            "total_tokens": prompt + generated,
        }


async def resume_completion(
    post: Post, body: JsonDict, answer: JsonDict, *, stats: ModelStats, where: str
) -> JsonDict:
    """``answer`` to the token-id ``body`` (``/v1/completions``), continued while it aborts.

    The answer returned reads as one generation: ``prompt_token_ids`` the first segment's,
    ``token_ids``, ``logprobs.token_logprobs`` and ``text`` every segment's joined, the
    ``finish_reason`` the last one's.
    """
    if not aborted(answer):
        return answer
    stats.paused_calls += 1
    prompt: list[int] = list(body["prompt"])
    ids: list[int] = []
    log_probs: list[float] = []
    text = ""
    first = answer
    for resumed_so_far in range(MAX_RESUMPTIONS + 1):
        choice = _choice(answer)
        assert choice is not None
        if choice.get("finish_reason") != ABORT:
            break
        if resumed_so_far == MAX_RESUMPTIONS:
            raise too_many_aborts(where, stats)
        fields = captured_tokens(answer, where)
        ids += fields["generation_token_ids"]
        log_probs += fields["generation_log_probs"]
        text += str(choice.get("text") or "")
        left = _remaining(body, "max_tokens", len(ids))
        if left is not None and left <= 0:  # the abort came on the last token allowed
            return _joined(first, answer, prompt, ids, log_probs, text, finish="length")
        stats.resumptions += 1
        resumed = {**body, "prompt": prompt + ids}
        if left is not None:
            resumed["max_tokens"] = left
        answer = await post(resumed)
    fields = captured_tokens(answer, where)
    if fields["prompt_token_ids"] != prompt + ids:
        raise ModelError(
            f"{where}: the resumed generation's prompt is not the ids sent (prompt and "
            "generation so far)"
        )
    choice = _choice(answer)
    assert choice is not None
    return _joined(
        first,
        answer,
        prompt,
        ids + fields["generation_token_ids"],
        log_probs + fields["generation_log_probs"],
        text + str(choice.get("text") or ""),
        finish=choice.get("finish_reason"),
    )


def _joined(
    first: JsonDict,
    last: JsonDict,
    prompt: list[int],
    ids: list[int],
    log_probs: list[float],
    text: str,
    *,
    finish: Any,
) -> JsonDict:
    choice = {
        **(_choice(last) or {}),
        "text": text,
        "token_ids": ids,
        "prompt_token_ids": prompt,
        "logprobs": {"token_logprobs": log_probs},
        "finish_reason": finish,
    }
    joined = {**last, "choices": [choice]}
    _sum_usage(first, joined, len(ids))
    return joined


async def resume_chat(
    post: Post,
    body: JsonDict,
    answer: JsonDict,
    *,
    capture: bool,
    stats: ModelStats,
    where: str,
    parse: Callable[[str], ParsedTurn] = parse_hermes,
) -> JsonDict:
    """``answer`` to the chat ``body``, continued while it aborts (see the module).

    The partial assistant text so far is sent as the final message with
    ``continue_final_message``; the answer returned carries the whole text, the last
    segment's tool calls and finish, and, with ``capture``, every segment's ids and log-probs
    after the first segment's prompt.
    """
    if not aborted(answer):
        return answer
    stats.paused_calls += 1
    text = ""
    ids: list[int] = []
    log_probs: list[float] = []
    prompt: list[int] | None = None
    generated = 0
    first = answer
    max_key = "max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"
    for resumed_so_far in range(MAX_RESUMPTIONS + 1):
        choice = _choice(answer)
        assert choice is not None
        if capture:
            fields = captured_tokens(answer, where)
            if prompt is None:
                prompt = fields["prompt_token_ids"]
            elif fields["prompt_token_ids"] != prompt + ids:
                raise _retokenised(where, prompt + ids, fields["prompt_token_ids"])
            ids += fields["generation_token_ids"]
            log_probs += fields["generation_log_probs"]
        if choice.get("finish_reason") != ABORT:
            break
        if resumed_so_far == MAX_RESUMPTIONS:
            raise too_many_aborts(where, stats)
        message = choice.get("message")
        text += str((message or {}).get("content") or "") if isinstance(message, dict) else ""
        generated += _completion_tokens(answer, len(ids))
        left = _remaining(body, max_key, generated)
        if left is not None and left <= 0:  # the abort came on the last token allowed
            choice = {**choice, "finish_reason": "length", "message": {"content": ""}}
            usage = {**(answer.get("usage") or {}), "completion_tokens": 0}  # counted above
            answer = {**answer, "choices": [choice], "usage": usage}
            break
        stats.resumptions += 1
        resumed = {
            **body,
            "messages": [*body["messages"], {"role": "assistant", "content": text}],
            "continue_final_message": True,
            "add_generation_prompt": False,
        }
        if left is not None:
            resumed[max_key] = left
        answer = await post(resumed)
    choice = _choice(answer)
    assert choice is not None
    message = dict(choice.get("message") or {})
    message["content"] = text + str(message.get("content") or "")
    joined_choice: JsonDict = {**choice, "message": message}
    if not message.get("tool_calls"):
        # The server's tool parser read only the last segment's text: a call the abort split
        # is in the joined text, read as token mode reads it (``tool_format``).
        turn = parse(message["content"])
        if turn.tool_calls:
            message["content"], message["tool_calls"] = turn.text or None, turn.tool_calls
            if joined_choice.get("finish_reason") == "stop":
                joined_choice["finish_reason"] = "tool_calls"
    joined = {**answer, "choices": [joined_choice]}
    if capture and prompt is not None:
        joined["prompt_token_ids"] = prompt
        joined_choice["token_ids"] = ids
        joined_choice["prompt_token_ids"] = prompt
        joined_choice["logprobs"] = {"content": [{"logprob": value} for value in log_probs]}
    _sum_usage(first, joined, generated + _completion_tokens(answer, 0))
    return joined


def _retokenised(where: str, expected: list[int], got: list[int]) -> ModelError:
    at = next(
        (i for i, (a, b) in enumerate(zip(expected, got, strict=False)) if a != b),
        min(len(expected), len(got)),
    )
    return ModelError(
        f"{where}: resuming an aborted generation, the server re-tokenised the text so far "
        f"differently (from token {at}), so the call's tokens would not be the ones sampled; "
        "use token_mode, which resumes from the ids themselves"
    )
