"""palaestra: build RL environments for LLMs and collect verified rollouts from them.

The public names live here; everything else is an implementation detail. ``collect`` (and
``collect_async``, ``run_spec``, ``RunSummary``), ``eval`` (environments + model + repeats ->
runs and a report with intervals; ``eval_async``, ``Evaluation``), the run specification
(``RunSpec`` and its parts) and the row types load on first use, so ``import palaestra`` stays
light for code that only defines an environment.
"""

from typing import TYPE_CHECKING

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
from palaestra.lazy import lazy_exports
from palaestra.models.base import Model
from palaestra.sessions import Session
from palaestra.step_env import StepEnvironment, StepResult
from palaestra.tools import tool
from palaestra.types import Failure, FailureKind, JsonDict, Verdict, input_items, output_text

if TYPE_CHECKING:
    from palaestra.collection.api import collect, collect_async, run_spec
    from palaestra.collection.collector import RunSummary
    from palaestra.evaluate.evaluation import Evaluation, eval, eval_async
    from palaestra.rows import AggregateFile, FailureRow, RolloutRow, TaskRow
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
    "eval": "palaestra.evaluate.evaluation",
    "eval_async": "palaestra.evaluate.evaluation",
    "Evaluation": "palaestra.evaluate.evaluation",
    "AgentSpec": "palaestra.spec",
    "CollectOptions": "palaestra.spec",
    "EnvSpec": "palaestra.spec",
    "ModelConfig": "palaestra.spec",
    "RunSpec": "palaestra.spec",
    "ServeSpec": "palaestra.spec",
    "AggregateFile": "palaestra.rows",
    "FailureRow": "palaestra.rows",
    "RolloutRow": "palaestra.rows",
    "TaskRow": "palaestra.rows",
}
__getattr__ = lazy_exports("palaestra", _LAZY)


__all__ = [
    "Agent",
    "AgentResult",
    "AgentSpec",
    "AggregateFile",
    "CollectOptions",
    "ConfigError",
    "EnvSpec",
    "Environment",
    "EnvironmentClient",
    "Evaluation",
    "Failure",
    "FailureKind",
    "FailureRow",
    "InputError",
    "JsonDict",
    "LocalEnvironmentClient",
    "Model",
    "ModelConfig",
    "ModelError",
    "PalaestraError",
    "RolloutFailure",
    "RolloutRow",
    "RunSpec",
    "RunSummary",
    "ServeSpec",
    "Session",
    "SingleTurnAgent",
    "StepEnvironment",
    "StepResult",
    "TaskRow",
    "ToolCallingAgent",
    "ToolError",
    "ToolFailure",
    "Verdict",
    "collect",
    "collect_async",
    "eval",
    "eval_async",
    "input_items",
    "output_text",
    "run_spec",
    "tool",
]
