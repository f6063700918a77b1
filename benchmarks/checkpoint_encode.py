"""Instructions per checkpoint encoded (``palaestra.agents.durable.encoded_checkpoint``).

Two trajectories: three turns of tool calls in a Responses answer's 30 fields (``short``), and
20 calls each carrying 2,000 prompt token ids (``tokens``). Each is encoded once (its items
cached), then ``CALLS`` more times; valgrind's cachegrind counts the process with 0 and with
``CALLS`` calls, and the difference over ``CALLS`` is the work of one checkpoint, whatever the
machine's load (``apt-get install valgrind``)::

    PYTHONPATH=. python benchmarks/checkpoint_encode.py            # both trajectories
    PYTHONPATH=. python benchmarks/checkpoint_encode.py short 1000 # one run (what is counted)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

CALLS = 1000


def trajectory(kind: str) -> dict[str, Any]:
    fields: dict[str, Any] = {
        key: None
        for key in [
            "error",
            "incomplete_details",
            "instructions",
            "background",
            "conversation",
            "max_output_tokens",
            "max_tool_calls",
            "previous_response_id",
            "prompt",
            "prompt_cache_key",
            "reasoning",
            "safety_identifier",
            "service_tier",
            "text",
            "top_logprobs",
            "truncation",
            "user",
        ]
    }
    fields.update(id="resp_1", created_at=1.0, metadata={}, model="m", object="response")
    fields.update(parallel_tool_calls=True, temperature=1.0, tool_choice="auto", tools=[])
    fields.update(top_p=1.0, status="completed", usage={"input_tokens": 9, "output_tokens": 3})
    output: list[dict[str, Any]] = []
    for call in range(3 if kind == "short" else 20):
        asked: dict[str, Any] = {"type": "function_call", "call_id": f"c{call}", "name": "bump"}
        asked["arguments"] = '{"by": 1}'
        if kind == "tokens":
            asked["prompt_token_ids"] = list(range(2000))
            asked["generation_token_ids"] = list(range(50))
        output += [asked, {"type": "function_call_output", "call_id": f"c{call}", "output": "1"}]
    return {**fields, "output": output}


def run(kind: str, calls: int) -> None:
    from palaestra.agents.durable import Durability, encoded_checkpoint
    from palaestra.types import AgentResult

    response = trajectory(kind)
    turns = len(response["output"]) // 2
    result = AgentResult(model_calls=turns, tool_calls=turns, response=response)
    result.producers = ["policy", "tool"] * turns
    durable, state = Durability(save=lambda checkpoint: True), {"count": turns}
    encoded_checkpoint(durable, result, state, None)
    for _ in range(calls):
        encoded_checkpoint(durable, result, state, None)


def count(kind: str, calls: int) -> int:
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    done = subprocess.run(
        [*command, sys.executable, __file__, kind, str(calls)],
        env=os.environ,
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"valgrind printed no count:\n{done.stderr[-1500:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    if len(sys.argv) == 3:
        run(sys.argv[1], int(sys.argv[2]))
        return
    for kind in ("short", "tokens"):
        per_call = (count(kind, CALLS) - count(kind, 0)) / CALLS
        print(f"{kind}: {per_call:,.0f} instructions per checkpoint", flush=True)


if __name__ == "__main__":
    main()
