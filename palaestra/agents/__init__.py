"""Agents: the harnesses that drive rollouts."""

from palaestra.agents.base import Agent, AgentResult, BoundAgent, RolloutRunner
from palaestra.agents.registry import AGENT_NAMES, make_agent
from palaestra.agents.single_turn import SingleTurnAgent
from palaestra.agents.step import StepAgent
from palaestra.agents.tool_calling import ToolCallingAgent

__all__ = [
    "AGENT_NAMES",
    "Agent",
    "AgentResult",
    "BoundAgent",
    "RolloutRunner",
    "SingleTurnAgent",
    "StepAgent",
    "ToolCallingAgent",
    "make_agent",
]
