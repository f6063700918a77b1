"""Drive a resources server with verifiers 0.4's NeMo Gym taskset (in the verifiers peer venv).

``argv[1]`` is a JSON spec ``{"workdir", "url", "token", "rows", "calls", "answer",
"headers"?}``. The
taskset loads ``rows`` from a JSONL file as it would a dataset; for each task this script does
what a verifiers rollout does around the model: the task's ``setup`` (``/seed_session``), the
taskset's MCP toolset listing and calling the tools (``calls``: ``[name, arguments]`` pairs,
each POSTed to ``/<tool>`` with the session's cookies), a trace of the conversation, then the
task's ``nemo_gym`` reward function (``/verify``). The model is the script; everything else is
verifiers' own code. Prints one JSON object per task: tools, tool outputs, reward or error.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any


async def main() -> None:
    spec = json.loads(sys.argv[1])
    from verifiers.v1.graph import MessageNode
    from verifiers.v1.mcp import SharedToolsetConfig
    from verifiers.v1.mcp.server import _call_state
    from verifiers.v1.tasksets.nemo_gym import (
        NeMoGymConfig,
        NeMoGymTaskConfig,
        NeMoGymTaskset,
    )
    from verifiers.v1.tasksets.nemo_gym.toolset import NeMoGymState, NeMoGymToolset
    from verifiers.v1.trace import AgentInfo, Trace, TraceTask
    from verifiers.v1.types import AssistantMessage, ToolCall, ToolMessage, UserMessage

    dataset = Path(spec["workdir"]) / "dataset.jsonl"
    dataset.write_text("".join(json.dumps(row) + "\n" for row in spec["rows"]))
    headers = {"Authorization": f"Bearer {spec['token']}"} if spec.get("token") else {}
    headers.update(spec.get("headers") or {})
    config = NeMoGymConfig(
        dataset=dataset,
        task=NeMoGymTaskConfig(resources_url=spec["url"], headers=headers),
    )
    results: list[dict[str, Any]] = []
    for task in NeMoGymTaskset(config).load():
        trace = Trace(
            task=TraceTask(type=type(task).__name__, data=task.data),
            agent=AgentInfo(config={}),
            state=NeMoGymState(),
        )
        await task.setup(trace, None)  # the runtime is not used by this taskset's setup
        _call_state.set(trace.state)  # what the toolset's MCP wrapper does around each call
        toolset = NeMoGymToolset(SharedToolsetConfig())
        tools = await toolset.list_tools()
        nodes = [MessageNode(message=UserMessage(content=str(task.data.prompt)))]
        outputs = []
        for index, (name, arguments) in enumerate(spec["calls"]):
            result = await toolset.call_tool(name, arguments)
            text = result.content[0].text
            outputs.append({"text": text, "is_error": result.is_error})
            call = ToolCall(id=f"call_{index}", name=name, arguments=json.dumps(arguments))
            nodes.append(
                MessageNode(
                    parent=len(nodes) - 1,
                    message=AssistantMessage(tool_calls=[call]),
                    sampled=True,
                )
            )
            nodes.append(
                MessageNode(
                    parent=len(nodes) - 1,
                    message=ToolMessage(tool_call_id=call.id, content=text),
                )
            )
        nodes.append(
            MessageNode(
                parent=len(nodes) - 1,
                message=AssistantMessage(content=spec["answer"]),
                sampled=True,
            )
        )
        trace.nodes = nodes
        try:
            reward: float | None = await task.nemo_gym(trace)
            error = None
        except Exception as exc:  # verifiers records this as the trace's error: no reward
            reward, error = None, f"{type(exc).__name__}: {exc}"
        results.append(
            {
                "tools": [tool.name for tool in tools],
                "outputs": outputs,
                "reward": reward,
                "error": error,
                "info": trace.info.get("nemo_gym"),
                "metrics": dict(trace.metrics),
            }
        )
    print(json.dumps(results))


if __name__ == "__main__":
    asyncio.run(main())
