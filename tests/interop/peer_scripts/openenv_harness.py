"""Run OpenEnv's harness (CollectRunner, build_harness_rollout_func) on a palaestra env.

Runs in an OpenEnv peer venv (openenv-core 0.3 or openenv 0.10) that also holds palaestra's
runtime dependencies; palaestra itself is imported from the source tree (``palaestra_root``).
``argv[1]`` is a JSON spec::

    {"palaestra_root": str, "env": name | url, "token": str | null, "tasks": [...],
     "out": dir}

The policy is a script (OpenEnv's ``ModelStep``): each rollout it first calls ``increment``
with arguments the tool rejects, then ``increment(amount=2)``, then answers. Prints one JSON
object: the collector's summary and records, and what the TRL rollout function returned.
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any


def main() -> None:
    spec = json.loads(sys.argv[1])
    sys.path.insert(0, spec["palaestra_root"])
    warnings.simplefilter("ignore")

    from openenv.core.harness import (
        HarnessRunLimits,
        MCPHarnessAdapter,
        ModelStepResult,
        build_harness_rollout_func,
    )
    from openenv.core.harness.collect import CollectRunner, RolloutSerializer
    from openenv.core.llm_client import LLMResponse, ToolCall

    from palaestra.training.openenv import PalaestraSessionFactory

    seen_tools: list[list[str]] = []

    def model_step(messages: list[dict[str, Any]], tools: list[Any], sampling: dict) -> Any:
        seen_tools.append([tool.name for tool in tools])
        turn = sum(1 for m in messages if m["role"] == "assistant")
        calls = {
            0: [ToolCall(id="c0", name="increment", args={"amount": "lots"})],
            1: [ToolCall(id="c1", name="increment", args={"amount": 2})],
        }.get(turn, [])
        return ModelStepResult(
            response=LLMResponse(content="" if calls else "done", tool_calls=calls),
            prompt_ids=[turn, turn + 1],
            completion_ids=[100 + turn],
            logprobs=[-0.5],
        )

    with PalaestraSessionFactory(spec["env"], token=spec.get("token")) as factory:
        runner = CollectRunner(
            session_factory=factory,
            harness_adapter=MCPHarnessAdapter(),
            serializer=RolloutSerializer(spec["out"]),
            tasks=spec["tasks"],
            limits=HarnessRunLimits(max_turns=4),
        )
        summary = runner.run(model_step=model_step, num_episodes=len(spec["tasks"]))
        with open(f"{spec['out']}/results.jsonl") as lines:
            records = [json.loads(line) for line in lines]

        rollout_func = build_harness_rollout_func(
            session_factory=factory,
            harness_adapter=MCPHarnessAdapter(),
            model_step_builder=lambda trainer, session: model_step,
            limits=HarnessRunLimits(max_turns=4),
        )
        scored = [task for task in spec["tasks"] if "target_value" in task]
        trl = rollout_func(scored, None)
        try:
            rollout_func([t for t in spec["tasks"] if "target_value" not in t], None)
            trl_failure = None
        except Exception as exc:  # a failed rollout must stop the step, not score 0
            trl_failure = f"{type(exc).__name__}: {exc}"

    # TRL's asynchronous GRPO (HarnessRolloutWorker._run_session): create() gets the dataset
    # row's prompt, the adapter runs the turns, verify() gets the harness's messages
    with PalaestraSessionFactory(spec["env"], token=spec.get("token"), tasks=spec["tasks"]) as f:
        prompt = f.prompts()[1]
        session = f.create(prompt, seed=7, episode_id="trl-async-1")
        try:
            result = MCPHarnessAdapter().run_white_box(
                model_step, session, HarnessRunLimits(max_turns=4)
            )
            verified = session.verify(result.messages)
            initial = session.initial_messages()
        finally:
            session.close()
        try:
            f.create([{"role": "user", "content": "Subtract 1."}], seed=0)
            unknown = None
        except Exception as exc:
            unknown = f"{type(exc).__name__}: {exc}"
        try:
            f.create(999, seed=0)
            past_end = None
        except Exception as exc:
            past_end = f"{type(exc).__name__}: {exc}"
    trl_async = {
        "prompt": prompt,
        "initial": initial,
        "reward": verified.env_reward,
        "unknown": unknown,
        "past_end": past_end,
    }

    print(
        json.dumps(
            {
                "trl_async": trl_async,
                "summary": {
                    "collected": summary.num_collected,
                    "failed": summary.num_failed,
                    "avg_reward": summary.avg_reward,
                },
                "records": records,
                "trl": trl,
                "trl_failure": trl_failure,
                "tools": seen_tools[0],
            }
        )
    )


if __name__ == "__main__":
    main()
