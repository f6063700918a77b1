"""The floor: the model calls of weather rollouts made by a bare HTTP client, no framework.

Per task: POST the task's create params (with the model name), parse the Response, append its
output and the tool's output to the input, POST again, parse. No sessions, no tool dispatch, no
verification, no output files: the least work any framework could do for the same rollouts.
One ``aiohttp.ClientSession`` with keep-alive, orjson, uvloop when installed, ``concurrency``
workers, and the same garbage-collector threshold as ``palaestra collect`` (without it, the
GC costs this client half its CPU at 10,000 in flight). It prints ``FLOOR <json>`` with its
own count and wall time.

``--client transport`` makes the same calls with ``palaestra.transport.HttpClient`` (the client
palaestra's model calls use) instead of aiohttp: what the framework costs above its own client.

Run: ``python benchmarks/floor.py URL TASKS.jsonl --concurrency 32 [--client transport]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import time
from collections.abc import Awaitable, Callable

import aiohttp
import orjson

from palaestra.transport import HttpClient

Post = Callable[[str, bytes], Awaitable[bytes]]

TOOL_OUTPUT = '{"city": "San Francisco", "weather_description": "The weather is cold."}'


async def rollout(post: Post, url: str, params: dict[str, object]) -> None:
    first = orjson.loads(await post(url, orjson.dumps(params)))
    call = first["output"][0]
    tool_output = {
        "type": "function_call_output",
        "call_id": call["call_id"],
        "output": TOOL_OUTPUT,
    }
    history = params["input"]
    assert isinstance(history, list)
    second_params = {**params, "input": [*history, call, tool_output]}
    second = orjson.loads(await post(url, orjson.dumps(second_params)))
    assert second["output"][0]["type"] == "message"


JSON = {"Content-Type": "application/json"}


async def main(base_url: str, tasks_path: str, concurrency: int, model: str, client: str) -> None:
    url = base_url.rstrip("/") + "/responses"
    lines = open(tasks_path, "rb")  # noqa: SIM115 - read lazily by the workers below
    started = time.perf_counter()
    done = 0

    async def work(post: Post) -> None:
        async def worker() -> None:
            nonlocal done
            for raw in lines:
                params = orjson.loads(raw)["responses_create_params"]
                params["model"] = model
                await rollout(post, url, params)
                done += 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))

    if client == "transport":
        transport = HttpClient()

        async def post_transport(to: str, body: bytes) -> bytes:
            return (await transport.request("POST", to, body=body, headers=JSON)).body

        await work(post_transport)
        await transport.aclose()
    else:
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as http:

            async def post_aiohttp(to: str, body: bytes) -> bytes:
                async with http.post(to, data=body, headers=JSON) as answer:
                    return await answer.read()

            await work(post_aiohttp)
    lines.close()
    elapsed = time.perf_counter() - started
    print("FLOOR " + orjson.dumps({"rollouts": done, "seconds": elapsed}).decode(), flush=True)


def entry() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("url")
    parser.add_argument("tasks")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--model", default="mock-weather")
    parser.add_argument("--client", choices=("aiohttp", "transport"), default="aiohttp")
    options = parser.parse_args()
    gc.set_threshold(1_000_000, *gc.get_threshold()[1:])
    factory = asyncio.new_event_loop
    with contextlib.suppress(ImportError):
        import uvloop

        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(
            main(options.url, options.tasks, options.concurrency, options.model, options.client)
        )


if __name__ == "__main__":
    entry()
