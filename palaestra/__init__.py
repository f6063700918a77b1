"""palaestra: build RL environments for LLMs and collect verified rollouts from them.

The public names live here; everything else is an implementation detail.
"""

from palaestra.agents import Agent, AgentResult, SingleTurnAgent, ToolCallingAgent
from palaestra.env_client import EnvironmentClient, LocalEnvironmentClient
from palaestra.environment import Environment
from palaestra.errors import (
    ConfigError,
    InputError,
    ModelError,
    PalaestraError,
    RolloutFailure,
    ToolError,
    ToolFailure,
)
from palaestra.models.base import Model
from palaestra.sessions import Session
from palaestra.tools import tool
from palaestra.types import Failure, FailureKind, JsonDict, Verdict, input_items, output_text

__all__ = [
    "Agent",
    "AgentResult",
    "ConfigError",
    "Environment",
    "EnvironmentClient",
    "Failure",
    "FailureKind",
    "InputError",
    "JsonDict",
    "LocalEnvironmentClient",
    "Model",
    "ModelError",
    "PalaestraError",
    "RolloutFailure",
    "Session",
    "SingleTurnAgent",
    "ToolCallingAgent",
    "ToolError",
    "ToolFailure",
    "Verdict",
    "input_items",
    "output_text",
    "tool",
]
