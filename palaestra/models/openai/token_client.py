"""Token-in/token-out against a vLLM-compatible server: multi-turn rollouts exact by construction.

Message mode sends the whole conversation as messages, and the server re-renders and
re-tokenises it every turn; text the model generated as one sequence of ids can come back as
another, and the trainer then optimises tokens the policy never produced. Token mode never lets
that happen:

1. The first turn is rendered by the server's own chat template: ``POST <root>/tokenize`` with
   ``messages`` and ``tools`` (vLLM's tokenize endpoint; ``root`` is the base URL without
   ``/v1``, or the ``tokenize_url`` option).
2. Generation is ``POST /v1/completions`` with the prompt as a list of token ids
   (``return_token_ids``, ``logprobs: 0``, ``skip_special_tokens: false``), so the server
   tokenises nothing.
3. The next turn's prompt is the previous call's ``prompt_token_ids + generation_token_ids``,
   kept as they were, followed by the ids of the new items only (tool outputs, user turns).
   Those are rendered with the same template as the difference between a fixed two-turn
   conversation with and without the new messages appended, plus whatever closing of the
   assistant turn (``<|im_end|>\\n``) the generation itself did not produce.

Tool calls are read from the generated text in ``tool_format`` (``hermes`` by default; see
``palaestra.models.tool_formats``). ``tool_choice`` is not enforced in this mode (the server
constrains nothing), and the system prompt of the first turn stays for the whole rollout.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import orjson

from palaestra.errors import ConfigError, ModelError
from palaestra.models.chat_format import chat_to_response, context_length_response
from palaestra.models.chat_format.requests import responses_to_chat
from palaestra.models.openai.endpoint import RemoteModel
from palaestra.models.openai.resume import aborted, resume_completion
from palaestra.models.openai.retry import ContextLengthExceeded, ModelHttpError
from palaestra.models.tokens import COMPLETION_CAPTURE_PARAMS, captured_tokens, token_history
from palaestra.models.tool_formats import tool_format
from palaestra.transport import shown_url
from palaestra.types import JsonDict, input_items

if TYPE_CHECKING:
    from palaestra.spec import ModelConfig
    from palaestra.transport import HttpClient

# The fixed conversation the continuation of a rollout is rendered against: its assistant turn
# stands for the rollout's last generation, whose ids are kept instead.
_BASE_USER: JsonDict = {"role": "user", "content": "ping"}
_BASE_REPLY = "pong"
_BASE: list[JsonDict] = [_BASE_USER, {"role": "assistant", "content": _BASE_REPLY}]
_CACHE_SIZE = 64
_NO_ROUTE = (404, 405)


@dataclass(frozen=True, slots=True)
class _Closing:
    """How the template ends an assistant turn (``closing`` ids, e.g. ``<|im_end|>`` and a
    newline, the first one's text) and the ids of the fixed conversation (``base``)."""

    closing: list[int]
    closing_text: str
    base: list[int]


def _tokens(answer: JsonDict, url: str) -> list[int]:
    tokens = answer.get("tokens")
    if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
        raise ModelError(f"POST {shown_url(url)} answered no 'tokens' list")
    return tokens


def _find_last(haystack: list[int], needle: list[int]) -> int:
    """The start of the last occurrence of ``needle`` in ``haystack``, or -1."""
    for start in range(len(haystack) - len(needle), -1, -1):
        if haystack[start : start + len(needle)] == needle:
            return start
    return -1


def glue(generated: list[int], closing: list[int]) -> list[int]:
    """What must follow a generation to close its turn: the part of ``closing`` it lacks.

    A model that stopped on its end-of-turn token produced ``closing[0]`` itself; one cut off
    by ``max_tokens`` produced none of it, and the whole closing is template, not policy.
    """
    for produced in range(min(len(closing), len(generated)), 0, -1):
        if generated[-produced:] == closing[:produced]:
            return closing[produced:]
    return list(closing)


class ServerTemplate:
    """The server's chat template, applied through its ``/tokenize`` endpoint."""

    def __init__(self, model: OpenAITokenModel, url: str) -> None:
        self._model = model
        self.url = url
        self._closings: dict[bytes, _Closing] = {}

    async def _tokenize(self, body: JsonDict) -> JsonDict:
        return await self._model.endpoint.post_to(self.url, body)

    async def render(self, messages: list[JsonDict], tools: list[JsonDict] | None) -> list[int]:
        """The whole prompt: ``messages`` with the generation prompt (the assistant header)."""
        body = await self._body(messages, tools, add_generation_prompt=True)
        return _tokens(await self._tokenize(body), self.url)

    async def continuation(
        self, generated: list[int], messages: list[JsonDict], tools: list[JsonDict] | None
    ) -> tuple[list[int], _Closing]:
        """The ids that follow a generation: its missing closing, then ``messages`` rendered,
        then the assistant header."""
        closing = await self.closing(tools)
        body = await self._body([*_BASE, *messages], tools, add_generation_prompt=True)
        full = _tokens(await self._tokenize(body), self.url)
        base = closing.base
        if full[: len(base)] != base:
            raise ModelError(
                f"POST {shown_url(self.url)}: the chat template renders earlier turns "
                "differently once new messages follow, so token_mode cannot extend a rollout "
                "with it"
            )
        return glue(generated, closing.closing) + full[len(base) :], closing

    async def closing(self, tools: list[JsonDict] | None) -> _Closing:
        key = orjson.dumps(tools or [], option=orjson.OPT_SORT_KEYS)
        found = self._closings.get(key)
        if found is None:
            found = await self._measure_closing(tools)
            if len(self._closings) >= _CACHE_SIZE:
                self._closings.clear()
            self._closings[key] = found
        return found

    async def _measure_closing(self, tools: list[JsonDict] | None) -> _Closing:
        body = await self._body(_BASE, tools, add_generation_prompt=False)
        answer = await self._tokenize({**body, "return_token_strs": True})
        base = _tokens(answer, self.url)
        model = await self._model.endpoint.model_name()
        plain = {"model": model, "prompt": _BASE_REPLY, "add_special_tokens": False}
        reply = _tokens(await self._tokenize(plain), self.url)
        start = _find_last(base, reply)
        if start < 0:
            raise ModelError(
                f"POST {shown_url(self.url)}: the chat template does not render an assistant "
                "reply as its own tokens, so token_mode cannot tell where a turn closes"
            )
        closing = base[start + len(reply) :]
        strings = answer.get("token_strs")
        text = ""
        if closing and isinstance(strings, list) and len(strings) == len(base):
            text = str(strings[start + len(reply)])
        return _Closing(closing, text, base)

    async def _body(
        self, messages: list[JsonDict], tools: list[JsonDict] | None, *, add_generation_prompt: bool
    ) -> JsonDict:
        body: JsonDict = {
            "model": await self._model.endpoint.model_name(),
            "messages": messages,
            "add_generation_prompt": add_generation_prompt,
        }
        if tools:
            body["tools"] = tools
        return body


def _server_root(base_url: str) -> str:
    return base_url.removesuffix("/v1")


class OpenAITokenModel(RemoteModel):
    """A vLLM-compatible server driven token-in/token-out (the ``token_mode`` option).

    Every answer carries the training fields on its last output item, and each prompt starts
    with the previous call's prompt and generation ids exactly.
    """

    def __init__(self, config: ModelConfig | str, *, http: HttpClient | None = None) -> None:
        super().__init__(config, http=http)
        options: dict[str, Any] = self.config.options
        self.parse = tool_format(str(options.get("tool_format", "hermes")))
        url = options.get("tokenize_url") or f"{_server_root(self.endpoint.base_url)}/tokenize"
        self.template = ServerTemplate(self, str(url))

    async def check(self) -> None:
        """Reach the server, then its ``/tokenize``: every prompt is rendered there, so a
        server without that route is refused now (``ConfigError``), not once per rollout."""
        await super().check()
        try:
            await self.template.render([_BASE_USER], None)
        except ModelHttpError as exc:
            if exc.status not in _NO_ROUTE:
                raise
            said = " ".join(exc.message.split())[:120]
            raise ConfigError(
                f"{shown_url(self.template.url)} answered HTTP {exc.status} ({said}): "
                "token_mode renders prompts with the server's /tokenize; serve the model with "
                "vLLM (which has it) or point the option tokenize_url at one, or set the option "
                "return_tokens instead of token_mode to take the server's own token ids"
            ) from None

    async def _respond(self, params: JsonDict) -> JsonDict:
        if params.get("stream"):
            raise ModelError("streaming is not supported: remove 'stream' from the request params")
        model = params.get("model") or await self.endpoint.model_name()
        chat = responses_to_chat({**params, "model": model})
        tools = chat.get("tools")
        history = token_history(input_items(params))
        if history.prefix is None:
            prompt = await self.template.render(chat["messages"], tools)
            closing = await self.template.closing(tools)
        else:
            new = responses_to_chat({"input": history.new_items})["messages"]
            suffix, closing = await self.template.continuation(history.generated, new, tools)
            prompt = history.prefix + suffix
        body: JsonDict = {"model": model, "prompt": prompt, **COMPLETION_CAPTURE_PARAMS}
        body["skip_special_tokens"] = False  # hermes' <tool_call> is a special token in Qwen
        for key in ("temperature", "top_p", "seed"):
            if params.get(key) is not None:
                body[key] = params[key]
        if params.get("max_output_tokens") is not None:
            body["max_tokens"] = params["max_output_tokens"]
        if closing.closing:
            body["stop_token_ids"] = closing.closing[:1]
        try:
            answer = await self.endpoint.post("completions", body)
            if aborted(answer):  # an engine paused for a weight update: continue the turn
                answer = await resume_completion(
                    partial(self.endpoint.post, "completions"),
                    body,
                    answer,
                    stats=self.endpoint.stats,
                    where=f"POST {self.endpoint.shown('completions')}",
                )
        except ContextLengthExceeded as exc:
            return context_length_response(
                params, model=model, message=exc.message, input_tokens=len(prompt)
            )
        try:
            return self._response(answer, params, prompt, closing)
        except ModelError as exc:
            self.endpoint.stats.failures += 1
            raise ModelError(f"POST {self.endpoint.shown('completions')}: {exc}") from None

    def _response(
        self, answer: JsonDict, params: JsonDict, prompt: list[int], closing: _Closing
    ) -> JsonDict:
        fields = captured_tokens(answer, "the server")
        fields["prompt_token_ids"] = prompt  # what was sent, exactly
        choice = answer["choices"][0]
        text = str(choice.get("text") or "")
        if closing.closing_text:
            text = text.removesuffix(closing.closing_text)
        turn = self.parse(text)
        finish = str(choice.get("finish_reason") or "stop")
        message: JsonDict = {"role": "assistant", "content": turn.text or None}
        if turn.tool_calls:
            message["tool_calls"] = turn.tool_calls
            finish = "tool_calls" if finish == "stop" else finish
        generated = len(fields["generation_token_ids"])
        completion = {
            "model": answer.get("model"),
            "created": answer.get("created"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": len(prompt),
                "completion_tokens": generated,
                "total_tokens": len(prompt) + generated,
            },
        }
        response = chat_to_response(completion, params)
        response["output"][-1].update(fields)
        return response
