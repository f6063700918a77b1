"""Write a transformers Llama model's current weights as a GGUF file llama.cpp can load.

The multi-turn learning run samples its rollouts with palaestra's embedded model (llama.cpp, in
token mode) while TRL trains the same weights in PyTorch; after each optimizer step the new
weights go back to llama.cpp through this file. The template GGUF (the one the model was loaded
from) gives every metadata key (architecture, tokenizer, chat template) unchanged; only the
tensors are new. transformers' GGUF loader un-permutes the query and key projections of a Llama
(llama.cpp stores them with the two rotary halves interleaved per head), so they are permuted
back here; everything else maps one to one by the gguf package's own name table.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_TYPES = {"F32": 0, "F16": 1, "Q8_0": 8}
"""The GGML tensor types this writes (``GGMLQuantizationType`` values) by name."""
_FILE_TYPES = {"F32": 0, "F16": 1, "Q8_0": 7}
"""``general.file_type`` (``LlamaFileType``) of a file whose matrices are of that type."""


def interleave_heads(weights: Any, heads: int) -> Any:
    """The inverse of transformers' ``_reverse_permute_weights``: rows of each head go from
    [first halves, second halves] to alternating pairs, as llama.cpp's rotary code reads them."""
    dim = weights.shape[0] // heads // 2
    return weights.reshape(heads, 2, dim, *weights.shape[1:]).swapaxes(1, 2).reshape(weights.shape)


def gguf_tensors(model: Any, arch: str, wanted: set[str]) -> Iterator[tuple[str, Any]]:
    """``model``'s weights as (GGUF tensor name, float32 array in llama.cpp's layout), for the
    names in ``wanted`` (a tied ``lm_head`` has none: the file holds only the embedding)."""
    import gguf
    import numpy as np

    config = model.config
    arch_id = next(key for key, value in gguf.MODEL_ARCH_NAMES.items() if value == arch)
    names = gguf.get_tensor_name_map(arch_id, int(config.num_hidden_layers))
    seen: set[str] = set()
    for hf_name, tensor in model.state_dict().items():
        stem, _, suffix = hf_name.rpartition(".")
        base = names.get_name(stem)
        name = f"{base}.{suffix}"
        if base is None or name not in wanted or name in seen:
            continue
        seen.add(name)
        array = tensor.detach().float().cpu().numpy()
        if ".attn_q." in name:
            array = interleave_heads(array, int(config.num_attention_heads))
        elif ".attn_k." in name:
            array = interleave_heads(array, int(config.num_key_value_heads))
        yield name, np.ascontiguousarray(array, dtype=np.float32)


def update_gguf(model: Any, path: str | Path) -> None:
    """Overwrite the tensors of ``path`` (written by ``export_gguf`` for this model, F32 or
    F16) with ``model``'s current weights, in place: no metadata, no new file."""
    import gguf
    import numpy as np

    reader = gguf.GGUFReader(str(path), "r+")
    arch = str(reader.fields["general.architecture"].contents())
    tensors = {tensor.name: tensor for tensor in reader.tensors}
    done = 0
    for name, array in gguf_tensors(model, arch, set(tensors)):
        target = tensors[name].data
        if target.dtype not in (np.float32, np.float16):
            raise ValueError(f"{path}: tensor {name} is {target.dtype}; update needs F32 or F16")
        target[...] = array.reshape(target.shape)
        done += 1
    if done != len(tensors):
        raise ValueError(f"{path}: updated {done} of {len(tensors)} tensors")
    reader.data.flush()


@functools.lru_cache(maxsize=4)
def _template(
    path: str, size: int, mtime_ns: int
) -> tuple[str, list[tuple[str, Any, Any, Any]], set[str]]:
    """A template GGUF's architecture, metadata (key, value, type, array item type) and tensor
    names, read once per file version (``size`` and ``mtime_ns`` name it): the gguf package
    parses a vocabulary's tens of thousands of strings one by one, seconds of CPU per read."""
    import gguf

    reader = gguf.GGUFReader(path)
    arch = str(reader.fields["general.architecture"].contents())
    keys = []
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        sub_type = field.types[1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        keys.append((key, field.contents(), field.types[0], sub_type))
    return arch, keys, {tensor.name for tensor in reader.tensors}


def export_gguf(model: Any, template: str | Path, path: str | Path, kind: str = "F16") -> Path:
    """Write ``model``'s weights to ``path`` with ``template``'s metadata; matrices as ``kind``
    (``F32``, ``F16`` or ``Q8_0``), norms in F32. Written to a temporary name, then renamed."""
    import gguf
    import numpy as np

    stat = os.stat(template)
    arch, keys, wanted = _template(str(template), stat.st_size, stat.st_mtime_ns)

    target = Path(path)
    partial = target.with_suffix(".partial")
    writer = gguf.GGUFWriter(str(partial), arch=arch)
    for key, value, value_type, sub_type in keys:
        if key == "general.file_type":
            value = _FILE_TYPES[kind]
        writer.add_key_value(key, value, value_type, sub_type)
    written: set[str] = set()
    for name, array in gguf_tensors(model, arch, wanted):
        if array.ndim == 1 or kind == "F32":
            writer.add_tensor(name, array)
        elif kind == "F16":
            writer.add_tensor(name, array.astype(np.float16))
        else:
            quantized = gguf.quants.quantize(array, gguf.GGMLQuantizationType(_TYPES[kind]))
            writer.add_tensor(
                name,
                quantized,
                raw_shape=quantized.shape,
                raw_dtype=gguf.GGMLQuantizationType(_TYPES[kind]),
            )
        written.add(name)
    missing = wanted - written
    if missing:
        raise ValueError(
            f"no weights for {len(missing)} tensors of {template}, e.g. {sorted(missing)[:3]}"
        )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    partial.replace(target)
    return target
