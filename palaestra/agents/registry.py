"""Agents by the name ``--agent`` accepts."""

from __future__ import annotations

from palaestra.agents.base import Agent
from palaestra.agents.single_turn import SingleTurnAgent
from palaestra.agents.step import StepAgent
from palaestra.agents.tool_calling import ToolCallingAgent
from palaestra.errors import ConfigError

AGENT_NAMES = (ToolCallingAgent.name, SingleTurnAgent.name, StepAgent.name)


def make_agent(name: str, *, max_steps: int = 8, max_calls_per_turn: int = 64) -> Agent:
    """The agent called ``name``; ``max_steps`` bounds the multi-turn ones (model turns),
    ``max_calls_per_turn`` the function calls the tool-calling agent runs per model answer."""
    if name == ToolCallingAgent.name:
        return ToolCallingAgent(max_steps=max_steps, max_calls_per_turn=max_calls_per_turn)
    if name == StepAgent.name:
        return StepAgent(max_steps=max_steps)
    if name == SingleTurnAgent.name:
        return SingleTurnAgent()
    raise ConfigError(f"unknown agent '{name}'; known: {', '.join(AGENT_NAMES)}")
