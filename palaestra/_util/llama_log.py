"""llama.cpp's log lines, through Python's logging (the ``palaestra.llama_cpp`` logger).

llama-cpp-python prints llama.cpp's log to stderr itself, reading its levels by an older
numbering of ggml's: with ``verbose=False`` a warning is printed as if it were an error, and
an error is taken for debug output and hidden. ``route_llama_log`` replaces that printer with
one that logs each line at its own level, so errors show (Python shows warnings and errors
when nothing configured logging) and debug and info lines do not.

``load_vocabulary`` loads a model's vocabulary only (to count or show tokens). llama-cpp-python
still builds a context for it, which llama.cpp compares with the training context length, a
hyperparameter a vocabulary-only load does not read (it is 0): the warning that the context
overflows it says nothing about the vocabulary, so what llama.cpp logs during such a load is
logged at debug.
"""

from __future__ import annotations

import ctypes
import importlib
import logging
import threading
from typing import Any

logger = logging.getLogger("palaestra.llama_cpp")

LEVELS = {1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING, 4: logging.ERROR}
"""ggml's ``ggml_log_level`` (as llama.cpp numbers it) to logging's; 5 continues a line."""
CONTINUE = 5

_lock = threading.Lock()
_routed: list[Any] = []
"""The installed callback: llama.cpp holds only a C pointer to it, so it is kept alive here."""
_local = threading.local()
_last_level = threading.local()


def route_llama_log(llama_cpp: Any) -> None:
    """Send llama.cpp's log (of the ``llama_cpp`` module given) to ``logger``; once per process."""
    with _lock:
        if _routed:
            return

        @llama_cpp.llama_log_callback  # type: ignore[untyped-decorator]
        def on_line(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
            _log(level, text)

        llama_cpp.llama_log_set(on_line, ctypes.c_void_p(0))
        _routed.append(on_line)


def _log(level: int, text: bytes) -> None:
    if level == CONTINUE:
        shown = getattr(_last_level, "value", logging.DEBUG)
    else:
        shown = LEVELS.get(level, logging.DEBUG)
        _last_level.value = shown
    if getattr(_local, "vocabulary_only", False):
        shown = logging.DEBUG
    message = text.decode("utf-8", errors="replace").rstrip("\n")
    if message and logger.isEnabledFor(shown):
        logger.log(shown, "%s", message)


def load_vocabulary(path: str) -> Any:
    """A ``llama_cpp.Llama`` of the model file at ``path``, its vocabulary only (no weights),
    llama.cpp's log during the load kept at debug (see the module docstring)."""
    llama_cpp = importlib.import_module("llama_cpp")
    route_llama_log(llama_cpp)
    _local.vocabulary_only = True
    try:
        return llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    finally:
        _local.vocabulary_only = False
