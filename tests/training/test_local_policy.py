"""The embedded model as a trainable transformers model: converted from its GGUF file once per
machine, then loaded from the cache, with the tokenizer llama.cpp reads from the same file."""

from __future__ import annotations

from pathlib import Path

from palaestra._util.llama_log import load_vocabulary
from palaestra.models.local import default_model_path
from palaestra.training import local_policy_model, local_policy_tokenizer
from palaestra.training.local_policy import cache_dir, converted
from tests.training.test_trl_rollout_real import require_training_stack

TEXT = "The weather in Paris: 21 °C, light rain. <|im_end|>"


def test_the_embedded_model_is_converted_once_and_then_loaded_from_the_cache() -> None:
    require_training_stack()
    import torch

    gguf = Path(default_model_path())
    folder = converted(gguf, cache_dir())  # converts on a machine's first call, else finds it
    weights = folder / "model.safetensors"
    before = weights.stat()
    model, tokenizer = local_policy_model()
    after = weights.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert converted(gguf, cache_dir()) == folder
    assert not list(cache_dir().glob(".*.partial"))
    assert {parameter.dtype for parameter in model.parameters()} == {torch.float32}
    assert getattr(model.config, "quantization_config", None) is None  # a Trainer takes it
    vocabulary = load_vocabulary(str(gguf))
    expected = vocabulary.tokenize(TEXT.encode(), add_bos=False, special=True)
    assert tokenizer(TEXT, add_special_tokens=False)["input_ids"] == expected


def test_the_tokenizer_alone_is_the_cached_conversions_and_tokenizes_as_llama_cpp() -> None:
    require_training_stack()
    gguf = Path(default_model_path())
    folder = converted(gguf, cache_dir())
    tokenizer = local_policy_tokenizer()
    assert Path(tokenizer.name_or_path) == folder  # read from the cache, not rebuilt from GGUF
    vocabulary = load_vocabulary(str(gguf))
    expected = vocabulary.tokenize(TEXT.encode(), add_bos=False, special=True)
    assert tokenizer(TEXT, add_special_tokens=False)["input_ids"] == expected
    assert tokenizer.eos_token == tokenizer.pad_token == "<|im_end|>"
