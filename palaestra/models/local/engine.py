"""The synchronous half of the embedded model: one loaded llama.cpp model answering chat bodies.

An engine is not thread-safe (llama.cpp is not re-entrant); ``LocalModel`` runs every call on
one dedicated thread. ``llama_cpp`` is imported here, on first load, never at import time.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import orjson

from palaestra._util.llama_log import route_llama_log
from palaestra.errors import ConfigError, ModelError
from palaestra.models.local.prompt import (
    CALL_PREFIX,
    IM_END,
    ToolPlan,
    choice_grammar,
    chosen_function,
    plan_tools,
    render_continuation,
    render_prompt,
)
from palaestra.models.local.request import (
    chat_completion,
    max_tokens_of,
    sampling_of,
    stops_of,
)
from palaestra.models.local.tokens import TokenSampler
from palaestra.models.tool_formats import chat_tool_call
from palaestra.types import JsonDict

INSTALL_HINT = (
    'the local model needs the "local" extra: run pip install -e ".[local]" '
    "(scripts/install.sh builds the llama-cpp-python wheel once per machine)"
)
_HEAD_TOKENS = 48  # enough for "functions.<a long name>:"
_GRAMMAR_CACHE_SIZE = 256


def import_llama_cpp() -> ModuleType:
    """Import llama_cpp, with OpenMP told not to spin (spinning made decoding many times
    slower on a busy machine: benchmarks/results/micro.md). The variable must be set before the
    OpenMP runtime loads, so here."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        llama_cpp = importlib.import_module("llama_cpp")
    except ImportError as exc:
        raise ConfigError(INSTALL_HINT) from exc
    route_llama_log(llama_cpp)  # its errors shown, its info not (``palaestra._util.llama_log``)
    return llama_cpp


class ContextWindowExceeded(ModelError):
    """The prompt does not fit the context window; ``reason`` is llama.cpp's own message."""

    def __init__(self, reason: str, prompt_tokens: int) -> None:
        super().__init__(reason)
        self.prompt_tokens = prompt_tokens


@dataclass(frozen=True, slots=True)
class _Piece:
    """One raw completion call: its text, why it stopped, and its token counts."""

    text: str
    finished: bool
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True, slots=True)
class LocalSettings:
    """How a GGUF model is loaded and what a request gets when it leaves a setting out.

    ``temperature`` and ``top_p`` default to the settings of SmolLM2's model-card example
    (0.2, 0.9): at OpenAI's 1.0 the 135M model fills tool arguments with noise.
    """

    model_path: str
    name: str
    n_ctx: int = 4096
    n_threads: int = 1
    seed: int = 0
    max_output_tokens: int = 256
    chat_format: str | None = None
    temperature: float = 0.2
    top_p: float = 0.9
    flash_attn: bool = True


class LlamaEngine:
    """A llama.cpp model plus palaestra's ChatML tool-calling handler (see ``prompt``).

    With ``settings.chat_format`` set, llama.cpp's own handler of that name answers instead
    (useful for other GGUF files, and for comparing with ``llama_cpp.server``).
    """

    def __init__(self, llama: Any, settings: LocalSettings) -> None:
        self._llama = llama
        self._grammars: Any = importlib.import_module("llama_cpp.llama_grammar")
        self.settings = settings
        self._schema_grammars: dict[bytes, str] = {}
        self._sampler: TokenSampler | None = None

    @classmethod
    def load(cls, settings: LocalSettings) -> LlamaEngine:
        llama_cpp = import_llama_cpp()
        if not os.path.isfile(settings.model_path):
            raise ConfigError(f"model file not found: {settings.model_path}")
        llama = llama_cpp.Llama(
            model_path=settings.model_path,
            n_ctx=settings.n_ctx,
            n_threads=settings.n_threads,
            n_threads_batch=settings.n_threads,
            seed=settings.seed,
            flash_attn=settings.flash_attn,
            chat_format=settings.chat_format or "chatml",
            verbose=False,
        )
        return cls(llama, settings)

    def close(self) -> None:
        self._llama.close()

    # --- one request ------------------------------------------------------------------------

    def chat(self, body: JsonDict) -> JsonDict:
        """Answer a Chat Completions body with a chat completion dict.

        Raises ``ContextWindowExceeded`` when the prompt does not fit the context window.
        """
        settings = self.settings
        sampling = sampling_of(
            body, seed=settings.seed, temperature=settings.temperature, top_p=settings.top_p
        )
        limit = max_tokens_of(body, settings.max_output_tokens)
        if settings.chat_format is not None:
            return self._delegate(body, limit, sampling)
        plan = plan_tools(body.get("tools"), body.get("tool_choice"))
        prompt = render_prompt(body.get("messages"), body.get("tools"), plan)
        try:
            text_grammar = self._text_grammar(body.get("response_format"))
            return self._generate(prompt, plan, limit, sampling, stops_of(body), text_grammar)
        except ValueError as exc:
            if "exceed context window" not in str(exc):
                raise
            tokens = len(self._llama.tokenize(prompt.encode(), add_bos=False, special=True))
            raise ContextWindowExceeded(str(exc), tokens) from None

    def chat_tokens(
        self, body: JsonDict, prefix: list[int] | None, new_messages: list[JsonDict]
    ) -> JsonDict:
        """Answer a Chat Completions body in token ids; the message gets the training fields.

        Without ``prefix`` the whole conversation is rendered (message mode with capture).
        With one (token mode), ``prefix`` is the previous call's prompt and generation ids,
        kept as they are, and only ``new_messages`` are rendered after it. The answer's first
        line (``message:`` or ``functions.<name>:``) is sampled under a grammar like the text
        path's, but as part of the generation; a single forced function's line is template
        (in the prompt). Raises ``ContextWindowExceeded`` for a prompt that does not fit.
        """
        settings = self.settings
        if settings.chat_format is not None:
            raise ConfigError("return_tokens and token_mode need chat_format: null (the default)")
        sampler = self._token_sampler()
        sampling = sampling_of(
            body, seed=settings.seed, temperature=settings.temperature, top_p=settings.top_p
        )
        limit = max_tokens_of(body, settings.max_output_tokens)
        plan = plan_tools(body.get("tools"), body.get("tool_choice"))
        end = sampler.tokenize(IM_END, first=False)[-1]
        if prefix is None:
            text = render_prompt(body.get("messages"), body.get("tools"), plan)
            prompt = sampler.tokenize(text, first=True)
        else:
            closed = bool(prefix) and prefix[-1] == end
            text = render_continuation(new_messages, plan, closed=closed)
            prompt = prefix + sampler.tokenize(text, first=False)
        name: str | None = None
        generated: list[int] = []
        log_probs: list[float] = []
        finished = True
        if plan.uses_tools and (plan.allow_text or len(plan.names) > 1):
            head = self._within(
                sampler,
                prompt,
                min(limit, _HEAD_TOKENS),
                sampling,
                grammar=choice_grammar(plan, newline=True),
            )
            generated, log_probs, finished = head.ids, head.log_probs, head.finished
            name = chosen_function(sampler.detokenize(head.ids), plan)
        elif plan.uses_tools:
            name = plan.names[0]
            prompt = prompt + sampler.tokenize(f"{CALL_PREFIX}{name}:\n", first=False)
        head_length = len(generated)
        if finished and head_length < limit:
            grammar = (
                self._schema_grammar(plan.schema_of(name))
                if name is not None
                else self._text_grammar(body.get("response_format"))
            )
            rest = self._within(
                sampler,
                prompt + generated,
                limit - head_length,
                sampling,
                grammar=grammar,
                stops=[] if name is not None else stops_of(body),
                keep_end=end,
            )
            generated, log_probs = generated + rest.ids, log_probs + rest.log_probs
            finished = rest.finished
        reply = generated[head_length:]
        text = sampler.detokenize(reply[:-1] if reply and reply[-1] == end else reply)
        call = {"name": name, "arguments": text.strip()} if name is not None else None
        answer = chat_completion(
            settings.name,
            None if call else text.strip(),
            call,
            ("tool_calls" if call else "stop") if finished else "length",
            len(prompt),
            len(generated),
        )
        answer["choices"][0]["message"].update(
            prompt_token_ids=prompt,
            generation_token_ids=generated,
            generation_log_probs=log_probs,
        )
        return answer

    def _within(
        self, sampler: TokenSampler, prompt: list[int], limit: int, sampling: JsonDict, **how: Any
    ) -> Any:
        room = self.settings.n_ctx - len(prompt)
        if room < 1:
            raise ContextWindowExceeded(
                f"Requested tokens ({len(prompt)}) exceed context window of {self.settings.n_ctx}",
                len(prompt),
            )
        return sampler.generate(prompt, limit=min(limit, room), sampling=sampling, **how)

    def _token_sampler(self) -> TokenSampler:
        if self._sampler is None:
            self._sampler = TokenSampler(self._llama, import_llama_cpp(), self._grammars)
        return self._sampler

    def _generate(
        self,
        prompt: str,
        plan: ToolPlan,
        limit: int,
        sampling: JsonDict,
        stops: list[str],
        text_grammar: str | None,
    ) -> JsonDict:
        if not plan.uses_tools:
            piece = self._complete(prompt, limit, text_grammar, stops, sampling)
            finish = "stop" if piece.finished else "length"
            return chat_completion(
                self.settings.name,
                piece.text,
                None,
                finish,
                piece.prompt_tokens,
                piece.completion_tokens,
            )
        prompt_tokens = used = 0
        if plan.allow_text or len(plan.names) > 1:
            head = self._complete(
                prompt, min(limit, _HEAD_TOKENS), choice_grammar(plan), [], sampling
            )
            prompt_tokens, used = head.prompt_tokens, head.completion_tokens
            if not head.finished:
                return chat_completion(
                    self.settings.name, None, None, "length", prompt_tokens, used
                )
            name = chosen_function(head.text, plan)
            prompt += head.text.strip() + "\n"
        else:
            name = plan.names[0]
            prompt += f"{CALL_PREFIX}{name}:\n"
        if used >= limit:
            return chat_completion(self.settings.name, None, None, "length", prompt_tokens, used)
        if name is None:
            piece = self._complete(prompt, limit - used, text_grammar, stops, sampling)
            finish = "stop" if piece.finished else "length"
            return chat_completion(
                self.settings.name,
                piece.text.lstrip(),
                None,
                finish,
                prompt_tokens or piece.prompt_tokens,
                used + piece.completion_tokens,
            )
        grammar = self._schema_grammar(plan.schema_of(name))
        piece = self._complete(prompt, limit - used, grammar, [], sampling)
        call = {"name": name, "arguments": piece.text.strip()}
        finish = "tool_calls" if piece.finished else "length"
        return chat_completion(
            self.settings.name,
            None,
            call,
            finish,
            prompt_tokens or piece.prompt_tokens,
            used + piece.completion_tokens,
        )

    def _complete(
        self,
        prompt: str,
        max_tokens: int,
        grammar: str | None,
        stops: list[str],
        sampling: JsonDict,
    ) -> _Piece:
        out = self._llama.create_completion(
            prompt=prompt,
            max_tokens=max(1, max_tokens),  # 0 or None would mean "until the context is full"
            stop=[IM_END, *stops],
            grammar=self._grammars.LlamaGrammar.from_string(grammar) if grammar else None,
            **sampling,
        )
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return _Piece(
            text=str(choice.get("text") or ""),
            finished=choice.get("finish_reason") != "length",
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )

    def _schema_grammar(self, schema: Any) -> str:
        """A grammar that only admits JSON matching ``schema`` (cached); a schema llama.cpp
        cannot translate falls back to any JSON object."""
        key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
        grammar = self._schema_grammars.get(key)
        if grammar is None:
            try:
                grammar = str(self._grammars.json_schema_to_gbnf(key.decode()))
            except Exception:
                grammar = str(self._grammars.JSON_GBNF)
            if len(self._schema_grammars) >= _GRAMMAR_CACHE_SIZE:
                self._schema_grammars.clear()
            self._schema_grammars[key] = grammar
        return str(grammar)

    def _text_grammar(self, response_format: Any) -> str | None:
        """The grammar a ``response_format`` asks of a text answer (JSON, or a JSON schema)."""
        kind = response_format.get("type") if isinstance(response_format, dict) else None
        if kind == "json_object":
            return str(self._grammars.JSON_GBNF)
        if kind == "json_schema":
            spec = response_format.get("json_schema") or {}
            return self._schema_grammar(spec.get("schema") if isinstance(spec, dict) else None)
        return None

    def _delegate(self, body: JsonDict, limit: int, sampling: JsonDict) -> JsonDict:
        kwargs: JsonDict = {"messages": body.get("messages"), "max_tokens": limit, **sampling}
        for key in ("tools", "tool_choice", "response_format"):
            if body.get(key) is not None:
                kwargs[key] = body[key]
        if stops_of(body):
            kwargs["stop"] = stops_of(body)
        try:
            out = self._llama.create_chat_completion(**kwargs)
        except ValueError as exc:
            if "exceed context window" not in str(exc):
                raise
            raise ContextWindowExceeded(str(exc), 0) from None
        choice = out["choices"][0]
        message = choice.get("message") or {}
        calls = message.get("tool_calls") or []
        usage = out.get("usage") or {}
        answer = chat_completion(
            self.settings.name,
            message.get("content"),
            None,
            str(choice.get("finish_reason") or "stop"),
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
        )
        if calls:
            answer["choices"][0]["message"]["tool_calls"] = [
                chat_tool_call(str(call["function"]["name"]), call["function"].get("arguments"))
                for call in calls
            ]
        return answer
