"""The author's kit: every name an environment is written with, in one place.

``palaestra`` re-exports every name here, and ``from palaestra import ...`` is the one way an
environment imports them (the built-ins and ``palaestra init``'s scaffold do); the modules
behind this face are where each piece lives, not a second way in: the kit's pieces here,
the ready-made kinds in ``kinds/``, the in-process runner in ``running/`` and the registry
and catalogue in ``finding/`` (docs/layout.md). What is here:

- the environment: ``Environment`` (tools, ``seed``, ``verify``), ``StepEnvironment``
  (``reset``/``step``), ``@tool`` and ``ToolSpec``, ``Session``, ``EnvironmentContext`` (what
  the runner lends: user model, pool), the ``Model`` protocol a judge or user is, and
  ``Baseline`` (its measured score, for the catalogue);
- what comes back: ``Verdict``, ``StepResult``, ``Failure`` and ``FailureKind``, and the
  errors an environment raises or catches (``ToolError``, ``InvalidTask``, ...);
- reading the model: ``output_text``, ``function_calls`` and the answer readers
  (``strip_reasoning``, ``last_boxed``, ``code_blocks``, ...), ``task_row`` to write a task;
- rewards: ``Rubric`` and its parts (docs/rewards.md), the judge (``JudgeModels``, ``judge``),
  pass@k estimators;
- simulated users (``ScriptedUser``, ``ModelUser``, ``UserTurn``);
- ready-made kinds: ``MachineTools`` (a shell and an editor in a box, docs/sandbox.md),
  ``HarborEnvironment`` (Harbor task folders, docs/harbor.md), ``MCPEnvironment`` (tools from
  an MCP server, docs/mcp.md);
- the in-process client (``LocalEnvironmentClient``) an environment's tests drive it with;
- the rows on the wire an environment reads (``TaskRow``, ``RolloutRow``, ``read_objects``).

The sandbox (``palaestra.sandbox``) is the other door an environment may use. Importing this
package stays as light as ``import palaestra``: the kinds, the rubric and the estimators load
on first use (``palaestra._util.lazy``).
"""

from typing import TYPE_CHECKING

from palaestra._util.lazy import lazy_exports
from palaestra.environment.answers import (
    PYTHON_TAGS,
    CodeBlock,
    code_blocks,
    first_command,
    last_boxed,
    last_code_block,
    last_labelled,
    last_tagged,
    strip_reasoning,
    task_row,
)
from palaestra.environment.base import Baseline, Environment, check_tool_names
from palaestra.environment.context import EnvironmentContext
from palaestra.environment.judge import JudgeFailure, Judgement, JudgeModels, judge, judge_metrics
from palaestra.environment.running.client import (
    EnvironmentClient,
    LocalEnvironmentClient,
    StepEnvironmentClient,
)
from palaestra.environment.sessions import Session
from palaestra.environment.step import StepEnvironment
from palaestra.environment.tools import SESSION_PARAMETER, ToolSpec, tool
from palaestra.environment.users import (
    ModelUser,
    ScriptedUser,
    SimulatedUser,
    UserTurn,
    as_seen_by_user,
    user_model_failed,
    user_model_named,
)
from palaestra.errors import (
    ConfigError,
    EnvironmentFailure,
    EnvironmentTimeout,
    InputError,
    InvalidTask,
    ModelError,
    PalaestraError,
    RolloutFailure,
    ToolCallRejected,
    ToolError,
    ToolFailure,
    UserModelFailure,
    VerifierFailure,
)
from palaestra.models.base import Model
from palaestra.types import (
    Failure,
    FailureKind,
    JsonDict,
    StepResult,
    Verdict,
    assistant_message,
    function_calls,
    input_items,
    message_text,
    output_text,
)
from palaestra.wire.rows import PARAMS, ROLLOUT_INDEX, TASK_INDEX, RolloutRow, TaskRow

if TYPE_CHECKING:
    from palaestra.environment.estimators import (
        PASS_THRESHOLD,
        majority_vote,
        mean_pass_at_k,
        pass_at_k,
        pass_hat_k,
    )
    from palaestra.environment.kinds.harbor import HarborEnvironment, HarborState
    from palaestra.environment.kinds.machine import (
        Editor,
        Machine,
        MachineState,
        MachineTools,
        ShellEnded,
        ShellResult,
    )
    from palaestra.environment.kinds.mcp import (
        MCPEnvironment,
        MCPServer,
        MCPServerFailure,
        MCPServerUnreachable,
        MCPState,
    )
    from palaestra.environment.rubric import (
        EXPECTED_ANSWER,
        QUESTION,
        Criterion,
        Gate,
        Rubric,
        Scored,
        Submission,
        criterion,
        equivalence,
        gate,
        task_field,
    )
    from palaestra.wire.jsonl import read_objects

_LAZY = {
    **dict.fromkeys(
        ("PASS_THRESHOLD", "majority_vote", "mean_pass_at_k", "pass_at_k", "pass_hat_k"),
        "palaestra.environment.estimators",
    ),
    **dict.fromkeys(("HarborEnvironment", "HarborState"), "palaestra.environment.kinds.harbor"),
    **dict.fromkeys(
        ("Editor", "Machine", "MachineState", "MachineTools", "ShellEnded", "ShellResult"),
        "palaestra.environment.kinds.machine",
    ),
    **dict.fromkeys(
        ("MCPEnvironment", "MCPServer", "MCPServerFailure", "MCPServerUnreachable", "MCPState"),
        "palaestra.environment.kinds.mcp",
    ),
    **dict.fromkeys(
        (
            "EXPECTED_ANSWER",
            "QUESTION",
            "Criterion",
            "Gate",
            "Rubric",
            "Scored",
            "Submission",
            "criterion",
            "equivalence",
            "gate",
            "task_field",
        ),
        "palaestra.environment.rubric",
    ),
    "read_objects": "palaestra.wire.jsonl",
}
__getattr__ = lazy_exports("palaestra.environment", _LAZY)

__all__ = [
    "EXPECTED_ANSWER",
    "PARAMS",
    "PASS_THRESHOLD",
    "PYTHON_TAGS",
    "QUESTION",
    "ROLLOUT_INDEX",
    "SESSION_PARAMETER",
    "TASK_INDEX",
    "Baseline",
    "CodeBlock",
    "ConfigError",
    "Criterion",
    "Editor",
    "Environment",
    "EnvironmentClient",
    "EnvironmentContext",
    "EnvironmentFailure",
    "EnvironmentTimeout",
    "Failure",
    "FailureKind",
    "Gate",
    "HarborEnvironment",
    "HarborState",
    "InputError",
    "InvalidTask",
    "JsonDict",
    "JudgeFailure",
    "JudgeModels",
    "Judgement",
    "LocalEnvironmentClient",
    "MCPEnvironment",
    "MCPServer",
    "MCPServerFailure",
    "MCPServerUnreachable",
    "MCPState",
    "Machine",
    "MachineState",
    "MachineTools",
    "Model",
    "ModelError",
    "ModelUser",
    "PalaestraError",
    "RolloutFailure",
    "RolloutRow",
    "Rubric",
    "Scored",
    "ScriptedUser",
    "Session",
    "ShellEnded",
    "ShellResult",
    "SimulatedUser",
    "StepEnvironment",
    "StepEnvironmentClient",
    "StepResult",
    "Submission",
    "TaskRow",
    "ToolCallRejected",
    "ToolError",
    "ToolFailure",
    "ToolSpec",
    "UserModelFailure",
    "UserTurn",
    "Verdict",
    "VerifierFailure",
    "as_seen_by_user",
    "assistant_message",
    "check_tool_names",
    "code_blocks",
    "criterion",
    "equivalence",
    "first_command",
    "function_calls",
    "gate",
    "input_items",
    "judge",
    "judge_metrics",
    "last_boxed",
    "last_code_block",
    "last_labelled",
    "last_tagged",
    "majority_vote",
    "mean_pass_at_k",
    "message_text",
    "output_text",
    "pass_at_k",
    "pass_hat_k",
    "read_objects",
    "strip_reasoning",
    "task_field",
    "task_row",
    "tool",
    "user_model_failed",
    "user_model_named",
]
