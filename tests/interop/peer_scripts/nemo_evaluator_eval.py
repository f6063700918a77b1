"""Run NeMo Evaluator 0.3's own eval loop and ``gym://`` client against a palaestra server.

Runs in the nemo-evaluator peer venv, never in palaestra's. ``argv[1]`` is a JSON spec:
``{"endpoint": url, "answers": {idx: text}, "skip_failed": bool, "solve_seconds": float,
"data": path}``; with ``data`` (a tasks JSONL, NeMo Evaluator's ``GymDataset``) the problems
are seeded from that file instead of the server's ``/seed_session``.
The solver answers each problem with ``answers[idx]`` after ``solve_seconds`` (a model's
latency: every seed then comes before the verifies, as in a real run) and no model: the
server's scoring is what is under test. Prints
one JSON object: per problem, its reward and scoring details, or the error that stopped the run.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys

from nemo_evaluator.engine.eval_loop import run_evaluation
from nemo_evaluator.environments.gym import GymDataset, GymEnvironment
from nemo_evaluator.solvers.base import SolveResult


class Answers:
    def __init__(self, answers: dict[str, str], seconds: float) -> None:
        self.answers = answers
        self.seconds = seconds

    async def solve(self, task):  # a SeedResult: metadata carries the server's idx
        await asyncio.sleep(self.seconds)
        return SolveResult(response=self.answers[str(task.metadata["idx"])])


async def main() -> None:
    spec = json.loads(sys.argv[1])
    dataset = GymDataset(spec["data"]) if spec.get("data") else None
    environment = GymEnvironment(spec["endpoint"], protocol="evaluator", dataset=dataset)
    try:
        bundle = await run_evaluation(
            environment,
            Answers(spec["answers"], spec.get("solve_seconds", 0.0)),
            skip_failed=spec.get("skip_failed", False),
            max_system_retries=1,  # no backoff sleeps in a test
        )
        results = sorted(bundle["_results"], key=lambda r: r["problem_idx"])
        out = {
            "results": [
                {
                    "idx": r["problem_idx"],
                    "reward": r["reward"],
                    "scoring_details": r.get("scoring_details", {}),
                }
                for r in results
            ],
            "error": None,
        }
    except Exception as exc:
        out = {"results": None, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        await environment.close()
    print(json.dumps(out))


if __name__ == "__main__":
    logging.disable(logging.CRITICAL)
    asyncio.run(main())
