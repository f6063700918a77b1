"""Agents: the harnesses that drive rollouts. ``AGENTS`` finds them by name (built-ins and
plug-ins of the ``palaestra.agents`` entry-point group); ``make_agent`` builds one.

The registry loads on first use of its names: it reads installed distributions' metadata,
which ``import palaestra`` should not pay for.
"""

from typing import TYPE_CHECKING

from palaestra._util.lazy import lazy_exports
from palaestra.agents.base import Agent, BoundAgent, RolloutRunner
from palaestra.agents.context import RolloutContext
from palaestra.agents.oracle import NullAgent, OracleAgent
from palaestra.agents.single_turn import SingleTurnAgent
from palaestra.agents.step import StepAgent
from palaestra.agents.tool_calling import ToolCallingAgent
from palaestra.types import AgentResult

if TYPE_CHECKING:
    from palaestra.agents.registry import (
        AGENT_GROUP,
        AGENTS,
        AgentFactory,
        agent_options,
        make_agent,
    )

__getattr__ = lazy_exports(
    "palaestra.agents",
    dict.fromkeys(
        ("AGENT_GROUP", "AGENTS", "AgentFactory", "agent_options", "make_agent"),
        "palaestra.agents.registry",
    ),
)


__all__ = [
    "AGENTS",
    "AGENT_GROUP",
    "Agent",
    "AgentFactory",
    "AgentResult",
    "BoundAgent",
    "NullAgent",
    "OracleAgent",
    "RolloutContext",
    "RolloutRunner",
    "SingleTurnAgent",
    "StepAgent",
    "ToolCallingAgent",
    "agent_options",
    "make_agent",
]
