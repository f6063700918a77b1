"""An ORS server made with the ``openreward`` SDK's own ``Environment`` and ``Server``.

``argv[1]`` is a JSON spec ``{"port": int}``. Serves ``adder`` on 127.0.0.1: splits ``train``
and ``test``, a task is two numbers; ``add`` answers their sum with a reward of 0.25, ``broken``
raises (the stream's ``error`` event), and the terminal tool ``answer`` ends the episode with
reward 1 for the right sum (0 else).
"""

from __future__ import annotations

import json
import os
import sys

os.environ["OPENREWARD_DISABLE_UPDATE_CHECK"] = "1"  # no packet to PyPI

from openreward.environments import Environment, Server, TextBlock, ToolOutput, terminal, tool
from pydantic import BaseModel

TASKS = {
    "train": [{"a": 1, "b": 2}],
    "test": [{"a": 2, "b": 3}, {"a": 10, "b": -4}],
}


class AddInput(BaseModel):
    a: int
    b: int


class Nothing(BaseModel):
    pass


class Answer(BaseModel):
    answer: str


class Adder(Environment):
    @classmethod
    def list_splits(cls) -> list[str]:
        return list(TASKS)

    @classmethod
    def list_tasks(cls, split: str) -> list[dict[str, int]]:
        return TASKS[split]

    def get_prompt(self) -> list[TextBlock]:
        spec = self.task_spec
        return [TextBlock(text=f"What is {spec['a']} + {spec['b']}? Use add, then answer.")]

    @tool
    async def add(self, params: AddInput) -> ToolOutput:
        """Add two whole numbers."""
        return ToolOutput(blocks=[TextBlock(text=str(params.a + params.b))], reward=0.25)

    @tool
    async def broken(self, params: Nothing) -> ToolOutput:
        """A tool that always breaks."""
        raise RuntimeError("the tool broke")

    @terminal
    @tool
    async def answer(self, params: Answer) -> ToolOutput:
        """Give the final answer."""
        right = params.answer.strip() == str(self.task_spec["a"] + self.task_spec["b"])
        return ToolOutput(
            blocks=[TextBlock(text="right" if right else "wrong")],
            reward=1.0 if right else 0.0,
            finished=True,
        )


if __name__ == "__main__":
    Server([Adder]).run(host="127.0.0.1", port=json.loads(sys.argv[1])["port"])
