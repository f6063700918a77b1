"""The token-level view of a rollout: its token ids, which of them are trained on, and text.

The loss mask is ``palaestra.training.tokens``' own (``training_sequence``): 1 where the
policy generated the token, 0 for prompt, tool output, user and template tokens, so the page
shows exactly what a trainer would optimise. A rollout whose calls do not fit together (not
contiguous) cannot be one sequence: each call is then shown on its own (prompt 0, generation
1), with the break's reason.

Token text: ids are shown as numbers unless the rollout's model is the embedded one (its
Response names SmolLM2's model) and llama.cpp is installed, in which case its vocabulary is
loaded once (``vocab_only``: about 0.3 s, no weights) and each id is shown as its piece. Any
other tokenizer would mean loading a model the viewer does not know of, so it does not.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from palaestra.training.tokens import (
    ContiguityError,
    check_contiguity,
    model_calls,
    training_sequence,
)
from palaestra.types import JsonDict
from palaestra.wire.rows import FACTS, RESPONSE


def token_view(row: JsonDict, decoder: LocalVocabulary | None = None) -> JsonDict:
    """``{sequences: [{label, ids, mask, log_probs}], contiguous, reason, pieces}``.

    ``pieces`` maps each id (as a string) to its text when the decoder knows the model, else
    it is null. A rollout without token ids has no sequences and says why.
    """
    response = row.get(RESPONSE)
    response = response if isinstance(response, dict) else {}
    try:
        calls = model_calls(response)
    except ContiguityError as error:
        return _view([], False, error.reason, None)
    if not calls:
        reason = (
            "this rollout carries no token ids (collect with --model-option return_tokens=true)"
        )
        return _view([], True, reason, None)
    contiguity = check_contiguity(response)
    sequences: list[JsonDict] = []
    if contiguity.contiguous:
        facts = row.get(FACTS)
        recorded = facts.get("producers") if isinstance(facts, dict) else None
        try:  # the mask a trainer would use: the policy's tokens only (the row's producers)
            sequence = training_sequence(
                response, producers=recorded if isinstance(recorded, list) else None
            )
        except ContiguityError as error:
            return _view([], False, error.reason, None)
        sequences.append(
            {
                "label": f"the rollout as trained on ({len(calls)} model calls)",
                "ids": sequence.token_ids,
                "mask": sequence.loss_mask,
                "log_probs": sequence.log_probs,
                "prompt_length": sequence.prompt_length,
            }
        )
    else:
        for call in calls:
            prompt, generated = call.prompt_token_ids, call.generation_token_ids
            sequences.append(
                {
                    "label": f"model call {call.index}",
                    "ids": prompt + generated,
                    "mask": [0] * len(prompt) + [1] * len(generated),
                    "log_probs": [0.0] * len(prompt) + call.generation_log_probs,
                    "prompt_length": len(prompt),
                    # where this call's prompt stops extending the previous call's tokens
                    "break_at": contiguity.break_position
                    if call.index == contiguity.break_call
                    else None,
                }
            )
    pieces = None
    model = response.get("model")
    if decoder is not None and isinstance(model, str) and decoder.knows(model):
        pieces = decoder.pieces({i for s in sequences for i in s["ids"]})
    return _view(sequences, contiguity.contiguous, contiguity.reason, pieces)


def _view(
    sequences: list[JsonDict], contiguous: bool, reason: str | None, pieces: dict[str, str] | None
) -> JsonDict:
    trained = sum(sum(s["mask"]) for s in sequences)
    total = sum(len(s["ids"]) for s in sequences)
    return {
        "sequences": sequences,
        "contiguous": contiguous,
        "reason": reason,
        "pieces": pieces,
        "tokens": total,
        "trained": trained,
    }


class LocalVocabulary:
    """The embedded model's vocabulary, loaded on first use (never if no rollout needs it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded = False
        self._name: str | None = None
        self._llama: Any = None

    def _load(self) -> None:
        with self._lock:
            if self._loaded:
                return
            self._loaded = True
            try:
                from palaestra._util.llama_log import load_vocabulary
                from palaestra.models.local.model import default_model_path, model_name

                path = default_model_path()
                self._llama = load_vocabulary(path)
                self._name = model_name(path)
            except Exception:  # no llama.cpp or no model file: ids stay numbers
                self._llama = None

    def knows(self, model: str) -> bool:
        """Whether ``model`` (a Response's ``model``) is the embedded model."""
        if not model.startswith("SmolLM"):  # no load at all for other models
            return False
        self._load()
        return self._llama is not None and model == self._name

    def pieces(self, ids: Iterable[int]) -> dict[str, str]:
        """Each id's text (special tokens included; a piece that is part of a multi-byte
        character shows as the replacement character)."""
        self._load()
        with self._lock:
            return {
                str(i): self._llama.detokenize([i], special=True).decode("utf-8", "replace")
                for i in ids
                if 0 <= i < self._llama.n_vocab()
            }
