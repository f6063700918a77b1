"""The floor: the model calls of weather rollouts made by a bare aiohttp client, no framework.

Per task: POST the task's create params (with the model name), parse the Response, append its
output and the tool's output to the input, POST again, parse. No sessions, no tool dispatch, no
verification, no output files: the least work any framework could do for the same rollouts.
One ``aiohttp.ClientSession`` with keep-alive, orjson, uvloop when installed, ``concurrency``
workers, and the same garbage-collector threshold as ``palaestra collect`` (without it, the
GC costs this client half its CPU at 10,000 in flight). It prints ``FLOOR <json>`` with its
own count and wall time.

Run: ``python benchmarks/floor.py URL TASKS.jsonl --concurrency 32``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import time

import aiohttp
import orjson

TOOL_OUTPUT = '{"city": "San Francisco", "weather_description": "The weather is cold."}'


async def rollout(http: aiohttp.ClientSession, url: str, params: dict[str, object]) -> None:
    async with http.post(url, data=orjson.dumps(params), headers=JSON) as answer:
        first = orjson.loads(await answer.read())
    call = first["output"][0]
    tool_output = {
        "type": "function_call_output",
        "call_id": call["call_id"],
        "output": TOOL_OUTPUT,
    }
    history = params["input"]
    assert isinstance(history, list)
    second_params = {**params, "input": [*history, call, tool_output]}
    async with http.post(url, data=orjson.dumps(second_params), headers=JSON) as answer:
        second = orjson.loads(await answer.read())
    assert second["output"][0]["type"] == "message"


JSON = {"Content-Type": "application/json"}


async def main(base_url: str, tasks_path: str, concurrency: int, model: str) -> None:
    url = base_url.rstrip("/") + "/responses"
    lines = open(tasks_path, "rb")  # noqa: SIM115 - read lazily by the workers below
    started = time.perf_counter()
    done = 0
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def worker() -> None:
            nonlocal done
            for raw in lines:
                params = orjson.loads(raw)["responses_create_params"]
                params["model"] = model
                await rollout(http, url, params)
                done += 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    lines.close()
    elapsed = time.perf_counter() - started
    print("FLOOR " + orjson.dumps({"rollouts": done, "seconds": elapsed}).decode(), flush=True)


def entry() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("url")
    parser.add_argument("tasks")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--model", default="mock-weather")
    options = parser.parse_args()
    gc.set_threshold(1_000_000, *gc.get_threshold()[1:])
    factory = asyncio.new_event_loop
    with contextlib.suppress(ImportError):
        import uvloop

        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main(options.url, options.tasks, options.concurrency, options.model))


if __name__ == "__main__":
    entry()
