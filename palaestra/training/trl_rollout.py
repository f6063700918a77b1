"""TRL's ``rollout_func`` on palaestra: GRPO completions are whole multi-turn palaestra rollouts.

::

    from trl import GRPOConfig, GRPOTrainer
    from palaestra.training import TrlRolloutFunc

    rollouts = TrlRolloutFunc("weather", tasks="tasks.jsonl", policy="http://localhost:8000/v1")
    trainer = GRPOTrainer(
        model, args=GRPOConfig(num_generations=8, use_vllm=True, vllm_mode="server", ...),
        processing_class=tokenizer,
        train_dataset=rollouts.dataset(),     # one row per task: its prompt (and the task)
        rollout_func=rollouts,                # palaestra runs each rollout: agent, tools, verify
        reward_funcs=rollouts.reward,         # the environment's reward
    )

The contract (``trl`` 1.16, ``GRPOTrainer._generate``): TRL calls ``rollout_func(prompts,
trainer)`` with this process's slice of the generation batch, each prompt already repeated
``num_generations`` times in a row, and wants back a dict of lists, one entry per prompt in
the same order: ``prompt_ids``, ``completion_ids`` and ``logprobs`` (the sampled tokens'
log-probs, one per completion id). Every other key is passed to the reward functions as a
keyword argument, except ``env_mask``, which TRL takes as the mask of the completion's tokens
(1: the model's, 0: the environment's). TRL multiplies it into the loss mask, so tool outputs
and chat-template tokens between turns stay in the sequence the model reads but get no
gradient, and are not counted in the completion lengths it logs. (It reads ``env_mask`` only
when the trainer has no ``tools``: give the trainer none, palaestra runs the tools.)

Here ``prompt_ids`` is the rollout's first prompt (the task, in the policy's chat template)
and ``completion_ids`` everything after it up to the end of the last model call, with its
``logprobs`` (0.0 on environment tokens) and ``env_mask``. ``env_reward`` is the verdict's
reward, ``env_failure`` None or ``"kind: reason"``, ``env_producers`` who produced each item
of the rollout's output (``policy``, ``tool``, ``user``, ``environment``: the row's
``producers``), so a reward function can tell a simulated user's turns from the policy's;
``env_mask`` is 1 only inside the policy's items; ``env_policy_span`` how many policy updates
the rollout straddled (None when no version was recorded).

A rollout whose model calls form a tree (a harness that compacted its history, retried, ran a
sub-agent: ``palaestra.training.tree``) cannot be one completion: its leaves start from
different contexts, and TRL takes exactly one completion per prompt (it normalises rewards
over ``num_generations`` rows in a row). The completion is its last leaf, the branch the
harness ended on and the verdict scored, with every call on that branch trained; the sampled
tokens of its other leaves (an abandoned retry, the history before a compaction, a
sub-agent's calls) are context of nothing and are not trained here. They are counted, never
dropped silently: ``env_branches`` (the rollout's leaves) and ``env_untrained_tokens`` per
completion, and ``palaestra/untrained_tokens`` in TRL's logs. TRL's asynchronous GRPO takes
one sample per leaf (``palaestra.training.trl_async``): use it for harnesses that branch.

A failed rollout is never scored 0. TRL needs one completion per prompt, so it is masked
(``on_failure="mask"``, the default): reward None, which TRL leaves out of its group's mean
and gives advantage 0, and ``env_mask`` all 0; its completion is what it generated before it
failed, or one end-of-sequence token. ``on_failure="raise"`` stops training instead.

The policy samples, the trainer learns: ``policy`` must serve the weights TRL trains. TRL's
vLLM server mode does (``trl vllm-serve`` is vLLM's OpenAI-compatible server, and TRL pushes
the new weights into it before each call of the rollout function); for another endpoint,
``refresh`` is called with the trainer whenever its step advanced and may return the new
policy (a ``Model``, ``ModelConfig`` or URL), e.g. a local model re-exported with the new
weights. The policy's tokenizer must be the trainer's.

Nothing here imports trl: this module only speaks its data shapes.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Callable
from typing import Any, Literal

import orjson

from palaestra.errors import ConfigError
from palaestra.models.chat_format import responses_to_chat
from palaestra.training.rollouts import Group, Rollout
from palaestra.training.stream import Policy, RolloutSampler, Tasks
from palaestra.training.sync import SyncRolloutSampler
from palaestra.types import JsonDict, producers_of
from palaestra.wire.rows import PARAMS

__all__ = ["TASK_COLUMN", "TrlRolloutFunc", "prompt_key", "prompt_messages"]

TASK_COLUMN = "palaestra_task"
"""The dataset column holding the whole task row as JSON (as ``palaestra.training.trl`` does)."""

Refresh = Callable[[Any], Policy | None]


def prompt_messages(task: JsonDict) -> list[JsonDict]:
    """A task's input as the chat messages TRL's ``prompt`` column holds."""
    messages: list[JsonDict] = responses_to_chat({"input": task[PARAMS]["input"]})["messages"]
    return messages


def prompt_key(prompt: Any) -> bytes:
    """What identifies a prompt as TRL hands it back: its messages without null fields (a
    ``datasets`` column adds every key any row has, as None) or its text."""
    if isinstance(prompt, str):
        return orjson.dumps(prompt)
    if isinstance(prompt, list):
        cleaned = [
            {k: v for k, v in m.items() if v is not None} if isinstance(m, dict) else m
            for m in prompt
        ]
        return orjson.dumps(cleaned, option=orjson.OPT_SORT_KEYS)
    raise ConfigError(
        f"a TRL prompt is a string or a list of messages, not {type(prompt).__name__}"
    )


class TrlRolloutFunc:
    """A ``rollout_func`` for TRL's ``GRPOTrainer`` (see the module docstring).

    Takes the ``RolloutSampler``'s arguments (the run's ``RunSpec``, ``tasks``,
    ``concurrency``, ...) except ``group_size`` (TRL's ``num_generations`` decides) and
    ``on_failure``, which is ``"mask"`` or ``"raise"`` (TRL cannot take fewer completions than
    prompts). Call ``close`` (or use it as a context manager) when training is done.
    """

    def __init__(
        self,
        env: Any = None,
        *,
        tasks: Tasks = None,
        on_failure: Literal["mask", "raise"] = "mask",
        refresh: Refresh | None = None,
        **options: Any,
    ) -> None:
        if on_failure not in ("mask", "raise"):
            raise ConfigError(
                f"on_failure {on_failure!r}: TRL needs one completion per prompt, so a failed "
                "rollout is masked ('mask') or stops training ('raise')"
            )
        if "group_size" in options:
            raise ConfigError("group_size is TRL's num_generations: set it in GRPOConfig")
        sampler = RolloutSampler(env, tasks=tasks, on_failure=on_failure, **options)
        self.refresh = refresh
        self._step: int | None = None
        self._index: dict[bytes, int] = {}
        for index, task in enumerate(sampler.tasks):
            key = prompt_key(prompt_messages(task))
            first = self._index.setdefault(key, index)
            if first != index and sampler.tasks[first] != task:
                raise ConfigError(
                    f"tasks {first} and {index} have the same prompt but differ: TRL hands the "
                    "rollout function only the prompt, so it could not tell them apart"
                )
        self.sampler = SyncRolloutSampler.wrap(sampler)

    def rows(self) -> list[JsonDict]:
        """One TRL dataset row per task: ``prompt`` (chat messages) and the task as JSON."""
        return [
            {"prompt": prompt_messages(task), TASK_COLUMN: orjson.dumps(task).decode()}
            for task in self.sampler.tasks
        ]

    def dataset(self) -> Any:
        """``rows()`` as a ``datasets.Dataset`` (``datasets`` comes with trl)."""
        datasets = importlib.import_module("datasets")  # installed with trl, never by palaestra
        return datasets.Dataset.from_list(self.rows())

    def __call__(self, prompts: list[Any], trainer: Any = None) -> dict[str, list[Any]]:
        """Run one rollout per prompt; return TRL's fields, one entry per prompt, in order."""
        self._maybe_refresh(trainer)
        indices = [self._task_of(prompt) for prompt in prompts]
        # TRL repeats each prompt num_generations times in a row: each run is one group.
        runs = [(index, len(list(run))) for index, run in itertools.groupby(indices)]
        groups = self.sampler.batch([i for i, _ in runs], group_size=[n for _, n in runs])
        end = _end_token(trainer)
        out: dict[str, list[Any]] = {
            key: []
            for key in (
                "prompt_ids",
                "completion_ids",
                "logprobs",
                "env_mask",
                "env_reward",
                "env_failure",
                "env_producers",
                "env_branches",
                "env_untrained_tokens",
                "env_policy_span",
            )
        }
        for group in groups:
            fallback = _group_prompt(group) or [end]
            untrained: dict[int, int] = {}
            for rollout in group.rollouts:  # each rollout's leaves are next to each other
                if rollout.leaf < rollout.leaves - 1:
                    untrained[rollout.sample] = untrained.get(rollout.sample, 0) + sum(
                        rollout.loss_mask
                    )
                    continue
                _append(out, rollout, fallback, end)
                out["env_untrained_tokens"].append(untrained.pop(rollout.sample, 0))
        if len(out["prompt_ids"]) != len(prompts):  # a bug here must not misalign TRL's batch
            raise RuntimeError(f"{len(out['prompt_ids'])} rollouts for {len(prompts)} prompts")
        return out

    def reward(self, prompts: Any = None, completions: Any = None, **fields: Any) -> list[Any]:
        """The environment's reward of each completion (None for a failed rollout, which TRL
        masks); give it to the trainer as ``reward_funcs``."""
        rewards: list[Any] = list(fields.get("env_reward") or [])
        log_metric = fields.get("log_metric")
        if callable(log_metric) and rewards:
            log_metric("palaestra/failed", sum(r is None for r in rewards) / len(rewards))
            untrained = fields.get("env_untrained_tokens")
            if isinstance(untrained, list):  # tokens of leaves TRL cannot take (the module)
                log_metric("palaestra/untrained_tokens", float(sum(untrained)))
        return rewards

    def _task_of(self, prompt: Any) -> int:
        index = self._index.get(prompt_key(prompt))
        if index is None:
            shown = prompt_key(prompt).decode()[:120]
            raise ConfigError(
                f"prompt {shown} is not one of the rollout function's tasks: build the "
                "trainer's dataset with its dataset() (or from the same tasks)"
            )
        return index

    def _maybe_refresh(self, trainer: Any) -> None:
        state = getattr(trainer, "state", None)
        step = getattr(state, "global_step", None)
        if self.refresh is None or not isinstance(step, int):
            return
        if self._step is not None and step != self._step:
            policy = self.refresh(trainer)
            if policy is not None:
                self.sampler.set_policy(policy)
        self._step = step

    def close(self) -> None:
        self.sampler.close()

    def __enter__(self) -> TrlRolloutFunc:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _append(out: dict[str, list[Any]], rollout: Rollout, fallback: list[int], end: int) -> None:
    prompt = rollout.prompt_ids or fallback
    completion = rollout.completion_ids
    if rollout.failure is not None:
        completion = completion or [end]  # TRL reads completion[-1]: never empty
        out["env_mask"].append([0] * len(completion))
        out["logprobs"].append([0.0] * len(completion))
        out["env_failure"].append(f"{rollout.failure.kind}: {rollout.failure.reason}")
    else:
        out["env_mask"].append(rollout.completion_mask)
        out["logprobs"].append(rollout.completion_log_probs)
        out["env_failure"].append(None)
    out["prompt_ids"].append(prompt)
    out["completion_ids"].append(completion)
    out["env_reward"].append(rollout.reward if rollout.failure is None else None)
    output = (rollout.response or {}).get("output")
    items = output if isinstance(output, list) else []
    out["env_producers"].append(producers_of(items, rollout.producers))
    out["env_branches"].append(rollout.leaves)
    out["env_policy_span"].append(rollout.version_span)


def _group_prompt(group: Group) -> list[int] | None:
    """A prompt for a failed rollout that got no model call: a sibling's (same task)."""
    for rollout in group.rollouts:
        if rollout.prompt_length:
            return rollout.prompt_ids
    return None


def _end_token(trainer: Any) -> int:
    """The trainer's end-of-sequence id (its tokenizer's, or a processor's tokenizer's)."""
    processing = getattr(trainer, "processing_class", None)
    for holder in (processing, getattr(processing, "tokenizer", None)):
        token = getattr(holder, "eos_token_id", None)
        if isinstance(token, int):
            return token
    return 0
