"""What MCP tools cost: a server per rollout, a call through one, a call to `serve mcp`.

Three figures, each the median of ``--tries`` runs (wall time on this machine, idle or not):

- *start*: one rollout's own stdio server (``MCPServer.stdio``, ``per_session=True``): the
  ``seed`` that starts it and initialises the session, then the ``close`` that stops it;
- *call via MCP*: one ``add_note`` call of ``tests/support/mcp_notes_server.py`` through
  ``LocalEnvironmentClient`` (schema check, hop to the MCP loop, stdio round trip), against
  one call of a ``@tool`` doing the same in-process;
- *serve mcp*: one ``increment`` call of ``palaestra serve mcp counter`` from the ``mcp``
  package's ``ClientSession`` over stdio.

Run from the repository root: ``.venv/bin/python benchmarks/mcp_tools.py [--tries 5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CALLS = 200


async def start_and_stop(tries: int) -> list[float]:
    from palaestra import LocalEnvironmentClient
    from tests.support.mcp_notes_env import Notes

    client = LocalEnvironmentClient(Notes())
    seconds = []
    try:
        for _ in range(tries):
            began = time.perf_counter()
            session = await client.seed({"note": "n"})
            await client.close(session)
            seconds.append(time.perf_counter() - began)
    finally:
        await client.aclose()
    return seconds


async def calls(tries: int) -> tuple[list[float], list[float]]:
    from palaestra import LocalEnvironmentClient
    from tests.support.mcp_notes_env import Notes, SharedNotes

    mcp_times, local_times = [], []
    for env, name, out in (
        (SharedNotes(), "add_note", mcp_times),
        (Notes(), "word_count", local_times),
    ):
        client = LocalEnvironmentClient(env)  # type: ignore[arg-type]
        try:
            session = await client.seed({"note": "n"})
            argument = {"text": "a short note"}
            await client.call_tool(session, name, argument)  # warm
            for _ in range(tries):
                began = time.perf_counter()
                for _ in range(CALLS):
                    await client.call_tool(session, name, argument)
                out.append((time.perf_counter() - began) / CALLS)
        finally:
            await client.aclose()
    return mcp_times, local_times


async def served(tries: int) -> list[float]:
    import mcp

    parameters = mcp.StdioServerParameters(
        command=sys.executable,
        args=["-m", "palaestra", "serve", "mcp", "counter"],
        env={"PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT))},
    )
    seconds = []
    async with mcp.stdio_client(parameters) as (read, write), mcp.ClientSession(read, write) as s:
        await s.initialize()
        await s.call_tool("increment", {"amount": 1})
        for _ in range(tries):
            began = time.perf_counter()
            for _ in range(CALLS):
                await s.call_tool("increment", {"amount": 1})
            seconds.append((time.perf_counter() - began) / CALLS)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=5)
    tries = parser.parse_args().tries
    start = asyncio.run(start_and_stop(tries))
    via_mcp, local = asyncio.run(calls(tries))
    serve = asyncio.run(served(tries))
    print(f"start+stop a rollout's stdio server: {statistics.median(start) * 1000:.0f} ms")
    print(f"call via MCP (shared stdio server):  {statistics.median(via_mcp) * 1e6:.0f} us")
    print(f"call of a @tool (in-process):        {statistics.median(local) * 1e6:.0f} us")
    print(f"call of `palaestra serve mcp`:       {statistics.median(serve) * 1e6:.0f} us")


if __name__ == "__main__":
    main()
