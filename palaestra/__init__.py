"""palaestra: build RL environments for LLMs and collect verified rollouts from them.

The public names live here; everything else is an implementation detail. ``collect`` (and
``collect_async``, ``run_spec``, ``RunSummary``) and the run specification (``RunSpec`` and its
parts) load on first use, so ``import palaestra`` stays light for code that only defines an
environment.
"""

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from palaestra.collection.api import collect, collect_async, run_spec
    from palaestra.collection.collector import RunSummary
    from palaestra.spec import (
        AgentSpec,
        CollectOptions,
        EnvSpec,
        ModelConfig,
        RunSpec,
        ServeSpec,
    )

_LAZY = {
    "collect": "palaestra.collection.api",
    "collect_async": "palaestra.collection.api",
    "run_spec": "palaestra.collection.api",
    "RunSummary": "palaestra.collection.collector",
    "AgentSpec": "palaestra.spec",
    "CollectOptions": "palaestra.spec",
    "EnvSpec": "palaestra.spec",
    "ModelConfig": "palaestra.spec",
    "RunSpec": "palaestra.spec",
    "ServeSpec": "palaestra.spec",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'palaestra' has no attribute {name!r}")


__all__ = [
    "Agent",
    "AgentResult",
    "AgentSpec",
    "CollectOptions",
    "ConfigError",
    "EnvSpec",
    "Environment",
    "EnvironmentClient",
    "Failure",
    "FailureKind",
    "InputError",
    "JsonDict",
    "LocalEnvironmentClient",
    "Model",
    "ModelConfig",
    "ModelError",
    "PalaestraError",
    "RolloutFailure",
    "RunSpec",
    "RunSummary",
    "ServeSpec",
    "Session",
    "SingleTurnAgent",
    "ToolCallingAgent",
    "ToolError",
    "ToolFailure",
    "Verdict",
    "collect",
    "collect_async",
    "input_items",
    "output_text",
    "run_spec",
    "tool",
]
