"""Agents: the harnesses that drive rollouts. ``AGENTS`` finds them by name (built-ins and
plug-ins of the ``palaestra.agents`` entry-point group); ``make_agent`` builds one.

The registry loads on first use of its names: it reads installed distributions' metadata,
which ``import palaestra`` should not pay for.
"""

import importlib
from typing import TYPE_CHECKING, Any

from palaestra.agents.base import Agent, AgentResult, BoundAgent, RolloutRunner
from palaestra.agents.single_turn import SingleTurnAgent
from palaestra.agents.step import StepAgent
from palaestra.agents.tool_calling import ToolCallingAgent

if TYPE_CHECKING:
    from palaestra.agents.registry import (
        AGENT_GROUP,
        AGENTS,
        AgentFactory,
        agent_options,
        make_agent,
    )

_REGISTRY = frozenset({"AGENT_GROUP", "AGENTS", "AgentFactory", "agent_options", "make_agent"})


def __getattr__(name: str) -> Any:
    if name in _REGISTRY:
        return getattr(importlib.import_module("palaestra.agents.registry"), name)
    raise AttributeError(f"module 'palaestra.agents' has no attribute {name!r}")


__all__ = [
    "AGENTS",
    "AGENT_GROUP",
    "Agent",
    "AgentFactory",
    "AgentResult",
    "BoundAgent",
    "RolloutRunner",
    "SingleTurnAgent",
    "StepAgent",
    "ToolCallingAgent",
    "agent_options",
    "make_agent",
]
