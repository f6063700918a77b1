"""Drive a palaestra OpenEnv server with OpenEnv's own clients (openenv-core 0.3 or openenv 0.10).

``argv[1]`` is a JSON spec ``{"url": str, "task": {...}, "token": str | null, "attach": bool}``.
Runs one episode with ``GenericEnvClient`` (reset with the task, a tool call, state, the
terminal verify action), one with ``MCPToolClient`` over ``/ws`` (tool discovery and a call)
and one in its production mode over ``POST /mcp``. With ``attach`` (OpenEnv 0.10), also one
production client whose socket attaches to its HTTP session (``/ws?session_id=``). With a
``token``, every client sends it as a bearer header (OpenEnv 0.10's ``headers=``). Prints one
JSON object with what each client saw.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

AUTH: dict[str, Any] = {}
"""Extra client arguments: ``headers`` with the bearer token when the spec has one."""


async def generic(url: str, task: dict[str, Any]) -> dict[str, Any]:
    from openenv.core.generic_client import GenericEnvClient

    async with GenericEnvClient(base_url=url, **AUTH) as env:
        reset = await env.reset(task=task, episode_id="peer-1")
        step = await env.step(
            {"type": "call_tool", "tool_name": "increment", "arguments": {"amount": 3}}
        )
        state = await env.state()
        done = await env.step({"type": "verify", "content": "The counter is 4."})
        try:
            await env.step({"type": "call_tool", "tool_name": "increment"})
            after = None
        except RuntimeError as error:  # the episode ended with verify
            after = str(error)
    return {
        "reset": reset.observation,
        "step": step.observation,
        "state": state,
        "verify": {"reward": done.reward, "done": done.done, "observation": done.observation},
        "after": after,
    }


async def mcp_simulation(url: str, task: dict[str, Any]) -> dict[str, Any]:
    from openenv.core.mcp_client import MCPToolClient

    async with MCPToolClient(base_url=url, **AUTH) as env:
        await env.reset(task=task)
        tools = await env.list_tools()
        value = await env.call_tool("increment", amount=2)
    return {"tools": [tool.name for tool in tools], "value": value}


async def mcp_production(url: str) -> dict[str, Any]:
    from openenv.core.mcp_client import MCPToolClient

    env = MCPToolClient(base_url=url, **AUTH)
    env.use_production_mode = True
    try:
        tools = await env.list_tools()
        value = await env.call_tool("increment", amount=5)
    finally:
        await env.close()
    return {"tools": [tool.name for tool in tools], "value": value}


async def mcp_attached(url: str) -> dict[str, Any]:
    """OpenEnv 0.10's production client: tools over HTTP, state over the socket it attached to
    the same session."""
    from openenv.core.mcp_client import MCPToolClient

    async with MCPToolClient(base_url=url, mode="production", **AUTH) as env:
        value = await env.call_tool("increment", amount=4)
        state = await env.state()
    return {
        "value": value,
        "state": {"episode_id": state.episode_id is not None, "step_count": state.step_count},
    }


async def main() -> None:
    spec = json.loads(sys.argv[1])
    if spec.get("token"):
        AUTH["headers"] = {"Authorization": f"Bearer {spec['token']}"}
    out = {
        "generic": await generic(spec["url"], spec["task"]),
        "mcp": await mcp_simulation(spec["url"], spec["task"]),
        "production": await mcp_production(spec["url"]),
    }
    if spec.get("attach"):
        out["attached"] = await mcp_attached(spec["url"])
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
