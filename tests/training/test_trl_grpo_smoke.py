"""The real TRL (1.16) GRPOTrainer takes two steps through ``TrlEnvironment``: a tiny model and a
byte-level tokenizer made here (no download), a palaestra environment with tools, one of whose
tasks cannot be scored. Catches an API change in TRL's ``environment_factory`` contract.

Needs the training stack (``bash scripts/install_training.sh``). Outside CI it is skipped
without it; in CI (``CI=true``) its absence fails.
"""

from __future__ import annotations

import importlib.util
import math
import os
from pathlib import Path
from typing import Any

import pytest

from palaestra import Session, Verdict
from palaestra.training.trl import TrlEnvironment, use_chatml_tool_template
from palaestra.types import FailureKind, JsonDict
from tests.training.test_trl_environment import Shop, task

NEEDED = ("trl", "torch", "transformers", "datasets", "tokenizers")


def require_training_stack() -> None:
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if not missing:
        return
    message = f"{', '.join(missing)} not installed: run `bash scripts/install_training.sh`"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)


def byte_tokenizer() -> Any:
    """A byte-level BPE tokenizer without merges (any text encodes) and ChatML specials."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {symbol: index for index, symbol in enumerate(sorted(alphabet))}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.padding_side = "left"
    return tokenizer


def tiny_model(tokenizer: Any) -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return LlamaForCausalLM(config)


class PayingShop(Shop):
    """``Shop``'s tools; the tiny model calls none, so the reward is the task's (or a failure)."""

    name = "paying_shop"

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        if session.task.get("unscorable"):
            return Verdict.failed(FailureKind.VERIFIER_ERROR, "cannot score this one")
        return Verdict(reward=session.task["reward"])


def test_grpo_trainer_takes_two_steps_on_a_palaestra_environment_with_failures_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_training_stack()
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from transformers.utils import get_json_schema
    from trl import GRPOConfig, GRPOTrainer

    torch.manual_seed(0)
    tokenizer = byte_tokenizer()
    assert use_chatml_tool_template(tokenizer)  # TRL refuses a template without tools
    with TrlEnvironment(PayingShop) as env:
        scorable, unscorable = task(reward=0.5), task(unscorable=True)
        config = GRPOConfig(
            output_dir=str(tmp_path),
            per_device_train_batch_size=4,
            num_generations=2,
            max_completion_length=8,
            max_steps=2,
            learning_rate=1e-3,
            logging_steps=1,
            save_strategy="no",
            report_to="none",
            use_cpu=True,
            disable_tqdm=True,
        )
        trainer = GRPOTrainer(
            model=tiny_model(tokenizer),
            args=config,
            processing_class=tokenizer,
            train_dataset=env.dataset([scorable, unscorable]),
            environment_factory=env.factory,
            reward_funcs=env.reward,
        )
        # TRL's own tool extraction sees palaestra's tools with their parameters and docs.
        tools = {method.__name__: get_json_schema(method)["function"] for method in trainer.tools}
        assert sorted(tools) == ["buy", "count", "explode"]
        assert tools["buy"]["description"] == "Put an item in the cart."
        assert tools["buy"]["parameters"]["required"] == ["item"]
        assert tools["buy"]["parameters"]["properties"]["colour"]["enum"] == ["red", "blue"]
        trainer.train()
        failures = dict(env.failures)

    assert trainer.state.global_step == 2
    logged = [row for row in trainer.state.log_history if "reward" in row]
    assert len(logged) == 2
    for row in logged:
        # Each step: 2 rollouts of the scorable task (0.5 each) and 2 of the unscorable one,
        # masked: the mean is 0.5. Had a failure been scored 0, it would be 0.25.
        assert math.isclose(row["reward"], 0.5)
        assert math.isclose(row["palaestra/failed"], 0.5)
    assert failures == {"verifier_error": 4}
