"""Drive an ORS server with the ``openreward`` SDK's own client (``EnvironmentsAPI``).

``argv[1]`` is a JSON spec ``{"url": str, "env": str, "split": str, "index": int, "calls":
[[tool, input], ...], "final": str | null, "refusals": bool, "api_key": str | null}``. Lists
the environment's splits, tasks and tools, runs one session on ``split``/``index``: its
prompt, messages and tools, each call of ``calls`` (what it answered, or the error's reason),
then, given ``final``, the terminal tool with it (as a harness sends the model's last plain
message). With ``refusals``, also asks for an unknown split, an index out of range and a
session of an unknown environment. Prints one JSON object with what the client saw.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

os.environ["OPENREWARD_DISABLE_UPDATE_CHECK"] = "1"  # no packet to PyPI


def output(result: Any) -> dict[str, Any]:
    return {
        "text": "\n".join(getattr(b, "text", "") for b in result.blocks),
        "reward": result.reward,
        "finished": result.finished,
        "metadata": result.metadata,
    }


def failure(error: Exception) -> dict[str, Any]:
    return {
        "error": type(error).__name__,
        "reason": getattr(error, "reason", None),
        "text": str(error),
    }


def main(spec: dict[str, Any]) -> dict[str, Any]:
    from openreward.api.environments.client import EnvironmentsAPI

    api = EnvironmentsAPI(base_url=spec["url"], api_key=spec.get("api_key") or "")
    try:
        env = api.get(spec["env"], base_url=spec["url"])
        split = spec["split"]
        seen: dict[str, Any] = {
            "splits": env.list_splits(),
            "num_tasks": env.num_tasks(split),
            "tasks": [t.task_spec for t in env.list_tasks(split)],
            "task": env.get_task(split, spec["index"]).task_spec,
            "range": [t.task_spec for t in env.get_task_range(split, 0, 2)],
            "tools": [t.name for t in env.list_tools()],
            "openai_tools": env.list_tools(format="openai"),
            "terminal": None,
            "calls": [],
        }
        with env.session(split=split, index=spec["index"]) as session:
            seen["prompt"] = [b.text for b in session.get_prompt()]
            seen["messages"] = [
                {"role": m.role, "text": [b.text for b in m.blocks]} for m in session.get_messages()
            ]
            seen["session_tools"] = [t.name for t in session.list_tools()]
            terminal = session.terminal_tool()
            seen["terminal"] = (
                None if terminal is None else {"name": terminal.name, "arg": terminal.arg}
            )
            for name, arguments in spec["calls"]:
                try:
                    seen["calls"].append(output(session.call_tool(name, arguments)))
                except Exception as error:  # ToolCallError (refused) or ToolFailed (broke)
                    seen["calls"].append(failure(error))
            if spec.get("final") is not None:
                try:
                    seen["final"] = output(session.call_terminal_tool(spec["final"]))
                except Exception as error:
                    seen["final"] = failure(error)
        if spec.get("refusals"):
            seen["refusals"] = refusals(api, env, spec)
        return seen
    finally:
        api.close()


def refusals(api: Any, env: Any, spec: dict[str, Any]) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    asks = {
        "unknown_split": lambda: env.list_tasks("no-such-split"),
        "index_out_of_range": lambda: env.get_task(spec["split"], 10_000),
        "unknown_environment": lambda: api.get(
            spec["env"], variant="no-such-env", base_url=spec["url"]
        ).num_tasks(spec["split"]),
    }
    for what, ask in asks.items():
        try:
            ask()
            answers[what] = None
        except Exception as error:
            answers[what] = {
                "status": getattr(error, "status", None),
                "message": getattr(error, "message", str(error)),
            }
    return answers


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
