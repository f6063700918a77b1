"""The gateway's own CPU per model call: its handler beside the model call it wraps.

Calls the gateway's request handler (``GatewayApp.answer``: parse, authenticate, convert,
find the parent call, record, answer) in process against an instant model, and subtracts the
model call alone. HTTP parsing by palaestra's protocol is not included (the same for any
server). ``turns``: the conversation's length, since a harness sends its whole history on
every call.

    python benchmarks/gateway.py
"""

from __future__ import annotations

import asyncio
import time

import orjson

from palaestra.gateway import Gateway
from palaestra.gateway.app import GatewayApp
from palaestra.models.base import ModelStats
from palaestra.types import JsonDict, assistant_message

REPLY = "It is sunny in Paris today."
CALLS = 5000


class InstantModel:
    name = "instant"

    def __init__(self) -> None:
        self.stats = ModelStats()

    async def respond(self, params: JsonDict) -> JsonDict:
        return {"id": "resp_1", "object": "response", "status": "completed",
                "output": [assistant_message(REPLY)], "usage": {}}  # fmt: skip

    async def check(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


def _messages(turns: int) -> list[JsonDict]:
    messages: list[JsonDict] = [
        {"role": "system", "content": "You are a helpful agent. " * 5},
        {"role": "user", "content": "Do the task."},
    ]
    for turn in range(turns - 1):
        messages.append({"role": "assistant", "content": REPLY})
        messages.append({"role": "user", "content": f"observation {turn} " * 20})
    return messages


async def measure(turns: int) -> float:
    """Microseconds of gateway CPU per call for a conversation of ``turns`` turns."""
    model = InstantModel()
    gateway = Gateway(model)
    gateway.url = "http://127.0.0.1:0"  # the handler alone: nothing listens
    app = GatewayApp(gateway)
    body = orjson.dumps({"model": "m", "messages": _messages(turns)})
    started = time.process_time()
    for _ in range(CALLS):
        await model.respond({"input": []})
    direct = time.process_time() - started
    started = time.process_time()
    for index in range(CALLS):
        if index % 500 == 0:  # a fresh rollout now and then: each call's lookup stays small
            rollout = gateway.open()
            scope = {
                "path": f"/r/{rollout.id}/v1/chat/completions",
                "method": "POST",
                "headers": [(b"authorization", b"Bearer " + rollout.api_key.encode())],
            }
        status, _, _ = await app.answer(scope, body)
        assert status == 200
    return 1e6 * (time.process_time() - started - direct) / CALLS


def main() -> None:
    for turns in (1, 5, 10, 25):
        print(f"{turns:>3} turns: {asyncio.run(measure(turns)):6.1f} us of gateway CPU per call")


if __name__ == "__main__":
    main()
