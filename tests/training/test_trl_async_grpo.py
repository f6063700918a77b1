"""TRL's asynchronous GRPO (the real ``AsyncGRPOTrainer`` of trl 1.16) trains on palaestra's
rollouts through ``AsyncGrpoRolloutWorker``: two optimizer steps of a tiny model made here, the
rollouts sampled by the embedded SmolLM2 in token mode (its tokenizer, read from its GGUF file),
one task of which always fails.

``AsyncGRPOTrainer`` is written for CUDA. Two pieces of it have no CPU path, and this test puts
a CPU stand-in in their place, nothing else: its attention kernel (``tree_fa3``, FlashAttention
3 fetched from the Hub) is registered again, after the trainer registered it, as the same
computation in PyTorch (``tree_attention_on_cpu``: each packed segment attends causally to
its keys, bottom-right aligned as ``flash_attn_varlen_func(causal=True)``), and its peak-FLOPS
lookup (a CUDA device-name query, used for its MFU metric only) answers 1. Weight sync goes
to a recorder instead of a vLLM server: the embedded model does not see the updates.

Needs the training stack (``bash scripts/install_training.sh``) and the ``local`` extra;
skipped without them outside CI, failed in CI.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from palaestra.training import RolloutSampler
from palaestra.training.rollouts import Group
from palaestra.training.trl_async import AsyncGrpoRolloutWorker
from tests.training.test_rollouts_local import task
from tests.training.test_trl_rollout_real import (
    Graded,
    require_training_stack,
    tiny_model_and_tokenizer,
)


def tree_attention_on_cpu(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    *,
    tree_kv_index: Any,
    tree_cu_seqlens_q: Any,
    tree_cu_seqlens_k: Any,
    tree_max_seqlen_q: Any = None,
    tree_max_seqlen_k: Any = None,
    scaling: float | None = None,
    sliding_window: int | None = None,
    softcap: float | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """TRL's ``tree_attention`` computed with PyTorch instead of the FA3 kernel."""
    torch = importlib.import_module("torch")
    q, k, v = (x.transpose(1, 2)[0] for x in (query, key, value))  # (tokens, heads, dim)
    k, v = k.index_select(0, tree_kv_index), v.index_select(0, tree_kv_index)
    if k.shape[1] != q.shape[1]:  # grouped-query attention
        k = k.repeat_interleave(q.shape[1] // k.shape[1], 1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], 1)
    out = []
    for i in range(len(tree_cu_seqlens_q) - 1):
        qs = q[tree_cu_seqlens_q[i] : tree_cu_seqlens_q[i + 1]].transpose(0, 1)
        ks = k[tree_cu_seqlens_k[i] : tree_cu_seqlens_k[i + 1]].transpose(0, 1)
        vs = v[tree_cu_seqlens_k[i] : tree_cu_seqlens_k[i + 1]].transpose(0, 1)
        allowed = torch.ones(qs.shape[1], ks.shape[1], dtype=torch.bool)
        allowed = allowed.tril(ks.shape[1] - qs.shape[1])
        attended = torch.nn.functional.scaled_dot_product_attention(
            qs, ks, vs, attn_mask=allowed, scale=scaling
        )
        out.append(attended.transpose(0, 1))
    return torch.cat(out).unsqueeze(0), None


class RecordedWeights:
    """TRL's ``WeightTransferProtocol``, counting the parameters each sync would push."""

    def __init__(self) -> None:
        self.syncs: list[int] = []

    def init_weight_transfer(self) -> None:
        pass

    def pause(self) -> None:
        pass

    def send_weights(self, iterator: Iterator[tuple[str, Any]]) -> None:
        self.syncs.append(sum(1 for _ in iterator))

    def resume(self) -> None:
        pass

    def destroy(self) -> None:
        pass


class Recording(AsyncGrpoRolloutWorker):
    """The worker, keeping every group and the samples it made of it."""

    def __init__(self, sampler: RolloutSampler) -> None:
        super().__init__(sampler)
        self.made: list[tuple[Group, list[Any]]] = []

    def samples_of(self, group: Group, version: int) -> list[Any]:
        samples = super().samples_of(group, version)
        self.made.append((group, samples))
        return samples


def test_async_grpo_trainer_takes_two_steps_on_palaestra_rollouts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_training_stack()
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    torch = importlib.import_module("torch")
    transformers = importlib.import_module("transformers")
    async_grpo = importlib.import_module("trl.experimental.async_grpo")
    trainer_module = importlib.import_module("trl.experimental.async_grpo.async_grpo_trainer")
    packing = importlib.import_module("trl.experimental.async_grpo.packing")
    monkeypatch.setattr(trainer_module, "get_peak_flops_per_device", lambda *args: 1.0)

    torch.manual_seed(0)
    model, tokenizer = tiny_model_and_tokenizer()
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    before = model.lm_head.weight.detach().clone()

    tasks = [task("What is 2+3?"), task("What is 1+1?", checkable=False)]
    sampler = RolloutSampler(
        Graded(),
        tasks=tasks,
        group_size=2,
        policy="local",
        sampling={"max_output_tokens": 24, "temperature": 0.7},
        agent_options={"max_steps": 2},
    )
    worker = Recording(sampler)
    weights = RecordedWeights()
    args = async_grpo.AsyncGRPOConfig(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=2,
        num_generations=2,
        max_steps=2,
        learning_rate=1e-2,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        bf16=False,
        dtype="float32",
        token_budget=0,  # a fixed number of samples per micro-batch (no vLLM to ask its length)
        seed=0,
    )
    trainer = async_grpo.AsyncGRPOTrainer(
        model=str(tmp_path / "model"),
        args=args,
        processing_class=tokenizer,
        train_dataset=worker.dataset(),
        rollout_worker=worker,
        weight_transfer=weights,
    )
    transformers.AttentionInterface.register(packing.TREE_ATTENTION, tree_attention_on_cpu)
    trainer.train()

    assert trainer.state.global_step == 2
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logged) == 2 and all(math.isfinite(entry["loss"]) for entry in logged)
    assert any(entry["grad_norm"] > 0 for entry in logged)
    after = trainer.model.lm_head.weight.detach()
    assert not torch.equal(before, after)  # it trained
    # TRL synced the weights at the start and after each step, and told the worker each time:
    # the rollouts record the version that served them
    assert len(weights.syncs) == 3 and weights.syncs[0] > 0
    assert worker.model_version == 3 and sampler.policy_version == 3
    assert worker.made
    samples = [sample for _, made in worker.made for sample in made]
    assert len(samples) >= 4  # two steps of two
    for group, made in worker.made:
        if group.task_index == 1:  # cannot be scored: never a sample, never a 0
            assert made == [] and len(group.failures) == group.size
            continue
        assert len(made) == len(group.rollouts) == group.size
        if len(made) == 2 and made[0].metrics["reward"] != made[1].metrics["reward"]:
            assert made[0].advantage == pytest.approx(-made[1].advantage)
        for sample, rollout in zip(made, group.rollouts, strict=True):
            # palaestra's token-exact rollout, as it was sampled
            assert sample.input_ids.tolist() == rollout.token_ids
            assert sample.completion_mask.tolist() == rollout.loss_mask
            assert len(sample.old_log_probs) == len(sample.input_ids)
            trained = sample.completion_mask.astype(bool)
            assert trained.any() and not trained[: rollout.prompt_length].any()
            assert (sample.old_log_probs[trained] < 0).any()
            assert sample.model_version == min(rollout.policy_versions or [0])
            assert sample.model_version >= 1  # the version TRL published before the worker started
            assert sample.metrics["reward"] == rollout.reward
    failed = sum(entry.get("palaestra/failed_total", 0) for entry in trainer.state.log_history)
    assert failed >= 2  # the failed task's group was counted where TRL logs
