"""Run NeMo Evaluator 0.3's eval loop with its ``GymSolver`` against a palaestra stack.

Runs in the nemo-evaluator peer venv. ``argv[1]`` is a JSON spec: ``{"head": url, "env": url,
"agent": name or null, "trust_reward": bool}``. The environment (``gym://`` evaluator protocol)
seeds each problem; ``GymSolver`` finds the agent through the stack's head server
(``/server_instances``) and POSTs the problem to its ``/run``; NeMo Evaluator then verifies the
agent's answer with the environment (or, with ``trust_reward``, takes the agent's reward).
Prints one JSON object: per problem its reward, and the agent URL the solver found.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys

from nemo_evaluator.engine.eval_loop import run_evaluation
from nemo_evaluator.environments.gym import GymEnvironment
from nemo_evaluator.solvers.gym import GymSolver


async def main() -> None:
    spec = json.loads(sys.argv[1])
    environment = GymEnvironment(spec["env"], protocol="evaluator")
    solver = GymSolver(spec["head"], gym_agent=spec["agent"], trust_reward=spec["trust_reward"])
    try:
        bundle = await run_evaluation(environment, solver, max_system_retries=1)
        results = sorted(bundle["_results"], key=lambda r: r["problem_idx"])
        out = {
            "results": [
                {"idx": r["problem_idx"], "reward": r["reward"], "response": r.get("response")}
                for r in results
            ],
            "agent_url": solver._agent_url,
            "error": None,
        }
    except Exception as exc:
        out = {"results": None, "agent_url": None, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        await environment.close()
        await solver.close()
    print(json.dumps(out))


if __name__ == "__main__":
    logging.disable(logging.CRITICAL)
    asyncio.run(main())
