"""palaestra: build RL environments for LLMs and collect verified rollouts from them.

The public names live here; everything else is an implementation detail. ``collect`` (and
``collect_async``, ``run_spec``, ``RunSummary``), ``eval`` (environments + model + repeats ->
runs and a report with intervals; ``eval_async``, ``Evaluation``), the run specification
(``RunSpec`` and its parts) and the row types load on first use, so ``import palaestra`` stays
light for code that only defines an environment.
"""

from typing import TYPE_CHECKING

from palaestra._util.lazy import lazy_exports
from palaestra._util.moved import install as _install_moved_modules
from palaestra.agents import Agent, AgentResult, SingleTurnAgent, ToolCallingAgent
from palaestra.environment.answers import last_boxed, strip_reasoning, task_row
from palaestra.environment.base import Environment
from palaestra.environment.client import EnvironmentClient, LocalEnvironmentClient
from palaestra.environment.sessions import Session
from palaestra.environment.step import StepEnvironment
from palaestra.environment.tools import tool
from palaestra.errors import (
    CallbackError,
    ConfigError,
    InputError,
    InvalidTask,
    ModelError,
    PalaestraError,
    RolloutFailure,
    ToolError,
    ToolFailure,
)
from palaestra.models.base import Model
from palaestra.types import (
    Failure,
    FailureKind,
    JsonDict,
    StepResult,
    Verdict,
    function_calls,
    input_items,
    output_text,
)

if TYPE_CHECKING:
    from palaestra.collection.collector import RunSummary
    from palaestra.environment.rubric import Criterion, Gate, Rubric, Scored, Submission
    from palaestra.run.collect import collect, collect_async, run_spec
    from palaestra.run.eval import Evaluation, eval, eval_async
    from palaestra.spec import (
        AgentSpec,
        CollectOptions,
        EnvSpec,
        ModelConfig,
        RunSpec,
        ServeSpec,
    )
    from palaestra.wire.rows import AggregateFile, FailureRow, RolloutRow, TaskRow

_LAZY = {
    "collect": "palaestra.run.collect",
    "collect_async": "palaestra.run.collect",
    "run_spec": "palaestra.run.collect",
    "RunSummary": "palaestra.collection.collector",
    "Rubric": "palaestra.environment.rubric",
    "Criterion": "palaestra.environment.rubric",
    "Gate": "palaestra.environment.rubric",
    "Scored": "palaestra.environment.rubric",
    "Submission": "palaestra.environment.rubric",
    "eval": "palaestra.run.eval",
    "eval_async": "palaestra.run.eval",
    "Evaluation": "palaestra.run.eval",
    "AgentSpec": "palaestra.spec",
    "CollectOptions": "palaestra.spec",
    "EnvSpec": "palaestra.spec",
    "ModelConfig": "palaestra.spec",
    "RunSpec": "palaestra.spec",
    "ServeSpec": "palaestra.spec",
    "AggregateFile": "palaestra.wire.rows",
    "FailureRow": "palaestra.wire.rows",
    "RolloutRow": "palaestra.wire.rows",
    "TaskRow": "palaestra.wire.rows",
}
__getattr__ = lazy_exports("palaestra", _LAZY)
_install_moved_modules()  # old import paths (palaestra.env_client, ...) for one release


__all__ = [
    "Agent",
    "AgentResult",
    "AgentSpec",
    "AggregateFile",
    "CallbackError",
    "CollectOptions",
    "ConfigError",
    "Criterion",
    "EnvSpec",
    "Environment",
    "EnvironmentClient",
    "Evaluation",
    "Failure",
    "FailureKind",
    "FailureRow",
    "Gate",
    "InputError",
    "InvalidTask",
    "JsonDict",
    "LocalEnvironmentClient",
    "Model",
    "ModelConfig",
    "ModelError",
    "PalaestraError",
    "RolloutFailure",
    "RolloutRow",
    "Rubric",
    "RunSpec",
    "RunSummary",
    "Scored",
    "ServeSpec",
    "Session",
    "SingleTurnAgent",
    "StepEnvironment",
    "StepResult",
    "Submission",
    "TaskRow",
    "ToolCallingAgent",
    "ToolError",
    "ToolFailure",
    "Verdict",
    "collect",
    "collect_async",
    "eval",
    "eval_async",
    "function_calls",
    "input_items",
    "last_boxed",
    "output_text",
    "run_spec",
    "strip_reasoning",
    "task_row",
    "tool",
]
