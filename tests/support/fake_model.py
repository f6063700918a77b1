"""An in-process model for testing the framework's own logic without HTTP.

The real HTTP path is covered by ``scripted_model`` (a real server) and the local model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from palaestra.models.base import ModelStats
from palaestra.types import JsonDict, assistant_message

Script = Callable[[JsonDict], JsonDict]


def response(*items: JsonDict, status: str = "completed", tokens: int = 5) -> JsonDict:
    return {
        "id": "resp_fake",
        "object": "response",
        "model": "fake",
        "status": status,
        "output": list(items),
        "usage": {"input_tokens": tokens, "output_tokens": tokens, "total_tokens": 2 * tokens},
    }


def say(text: str, **extra: Any) -> JsonDict:
    return response(assistant_message(text), **extra)


def call(name: str, arguments: str, call_id: str = "call_1") -> JsonDict:
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "id": f"fc_{call_id}",
        "status": "completed",
    }


class FakeModel:
    """Answers each request with ``script(params)``; records what it was asked."""

    name = "fake"

    def __init__(self, script: Script) -> None:
        self.script = script
        self.stats = ModelStats()
        self.requests: list[JsonDict] = []

    async def respond(self, params: JsonDict) -> JsonDict:
        self.requests.append(params)
        self.stats.requests += 1
        return self.script(params)

    async def check(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


def outputs_so_far(params: JsonDict) -> list[JsonDict]:
    """The function_call_output items a request carries (what the tools answered)."""
    return [i for i in params["input"] if i.get("type") == "function_call_output"]
