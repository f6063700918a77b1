"""The embedded model in token ids: generation that keeps every sampled id and its log-prob.

llama.cpp knows both natively: ``Llama.generate`` yields each sampled id, and the logits it was
sampled from are still in the context when it is yielded. The log-prob recorded is the model's
raw one (log-softmax of the logits, before temperature, top-p and grammar), as vLLM reports by
default (``logprobs_mode: raw_logprobs``), so a trainer's recomputed log-probs compare with it.
Computing the log-prob costs little next to decoding the token (measured on SmolLM2-135M, a
49,152-token vocabulary: benchmarks/results/micro.md).

Runs on the model's llama.cpp thread only (see ``engine``). ``llama_cpp`` is imported by the
caller and passed in, and numpy (which llama-cpp-python requires) on first use, never at
import time here.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from palaestra.errors import ModelError
from palaestra.types import JsonDict


@dataclass(frozen=True, slots=True)
class Generated:
    """One generation: the sampled ids, their log-probs, and whether the model ended it (an
    end-of-generation token, a finished grammar or a stop string) rather than the limit."""

    ids: list[int]
    log_probs: list[float]
    finished: bool


class TokenSampler:
    """Generates from token ids on one loaded ``llama_cpp.Llama``."""

    def __init__(self, llama: Any, llama_cpp: ModuleType, grammars: ModuleType) -> None:
        self._llama = llama
        self._lib = llama_cpp
        self._grammars = grammars
        self._vocab = llama_cpp.llama_model_get_vocab(llama.model)
        self._n_vocab = int(llama.n_vocab())
        self._np: Any = importlib.import_module("numpy")

    def tokenize(self, text: str, *, first: bool) -> list[int]:
        """``text`` as ids, special tokens (``<|im_start|>``) read as such; ``first`` lets the
        model add its BOS where its metadata asks for one."""
        return list(self._llama.tokenize(text.encode(), add_bos=first, special=True))

    def detokenize(self, ids: list[int]) -> str:
        return bytes(self._llama.detokenize(ids)).decode("utf-8", errors="replace")

    def _log_prob(self, token: int) -> float:
        np = self._np
        pointer = self._lib.llama_get_logits_ith(self._llama.ctx, -1)
        logits = np.ctypeslib.as_array(pointer, shape=(self._n_vocab,))
        top = float(logits.max())
        total = float(np.exp(logits - top, dtype=np.float64).sum())
        return float(logits[token]) - top - math.log(total)

    def generate(
        self,
        prompt: list[int],
        *,
        limit: int,
        sampling: JsonDict,
        grammar: str | None = None,
        stops: list[str] | None = None,
        keep_end: int | None = None,
    ) -> Generated:
        """Sample up to ``limit`` ids after ``prompt``.

        An end-of-generation token ends it; it is kept (with its log-prob) only when it is
        ``keep_end``, the token that closes a turn. Earlier prompts sharing a prefix with this
        one reuse llama.cpp's cache.
        """
        llama = self._llama
        llama.set_seed(int(sampling["seed"]))
        grammar_object = self._grammars.LlamaGrammar.from_string(grammar) if grammar else None
        steps = llama.generate(
            prompt,
            temp=float(sampling["temperature"]),
            top_p=float(sampling["top_p"]),
            top_k=int(sampling["top_k"]),
            min_p=float(sampling["min_p"]),
            repeat_penalty=float(sampling["repeat_penalty"]),
            frequency_penalty=float(sampling["frequency_penalty"]),
            presence_penalty=float(sampling["presence_penalty"]),
            grammar=grammar_object,
            reset=True,
        )
        ids: list[int] = []
        log_probs: list[float] = []
        finished = False
        try:
            for token in steps:
                token = int(token)
                if self._lib.llama_vocab_is_eog(self._vocab, token):
                    if token == keep_end:
                        ids.append(token)
                        log_probs.append(self._log_prob(token))
                    finished = True
                    break
                ids.append(token)
                log_probs.append(self._log_prob(token))
                if stops and any(stop in self.detokenize(ids) for stop in stops):
                    finished = True
                    break
                if len(ids) >= limit:
                    break
        finally:
            steps.close()
        if not all(math.isfinite(value) for value in log_probs):
            raise ModelError("llama.cpp produced a non-finite log-probability")
        return Generated(ids, log_probs, finished)
