"""Agents: the harnesses that drive rollouts."""

from palaestra.agents.base import Agent, AgentResult, BoundAgent, RolloutRunner
from palaestra.agents.single_turn import SingleTurnAgent
from palaestra.agents.tool_calling import ToolCallingAgent

AGENTS: dict[str, type[ToolCallingAgent] | type[SingleTurnAgent]] = {
    ToolCallingAgent.name: ToolCallingAgent,
    SingleTurnAgent.name: SingleTurnAgent,
}
"""Agents by the name ``--agent`` accepts."""

__all__ = [
    "AGENTS",
    "Agent",
    "AgentResult",
    "BoundAgent",
    "RolloutRunner",
    "SingleTurnAgent",
    "ToolCallingAgent",
]
