"""The kit's one face: ``palaestra.environment`` exports the author API, ``palaestra`` all of it.

The set of names is written out here, so adding a name to the kit or dropping one is a
decision a reviewer sees in this file.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys

import palaestra
import palaestra.environment as kit

AUTHOR_API = {
    # the environment
    "Environment",
    "StepEnvironment",
    "tool",
    "ToolSpec",
    "SESSION_PARAMETER",
    "check_tool_names",
    "Session",
    "EnvironmentContext",
    "Model",
    # what comes back
    "JsonDict",
    "Verdict",
    "StepResult",
    "Failure",
    "FailureKind",
    # errors an environment raises or catches
    "PalaestraError",
    "ConfigError",
    "InputError",
    "InvalidTask",
    "ToolError",
    "ToolCallRejected",
    "RolloutFailure",
    "EnvironmentFailure",
    "EnvironmentTimeout",
    "ToolFailure",
    "UserModelFailure",
    "VerifierFailure",
    "ModelError",
    # reading the model, writing a task
    "output_text",
    "function_calls",
    "input_items",
    "message_text",
    "assistant_message",
    "strip_reasoning",
    "last_boxed",
    "last_tagged",
    "last_labelled",
    "first_command",
    "code_blocks",
    "last_code_block",
    "CodeBlock",
    "PYTHON_TAGS",
    "task_row",
    # rows on the wire
    "TaskRow",
    "RolloutRow",
    "PARAMS",
    "TASK_INDEX",
    "ROLLOUT_INDEX",
    "read_objects",
    # rewards
    "Rubric",
    "Criterion",
    "Gate",
    "Scored",
    "Submission",
    "criterion",
    "gate",
    "equivalence",
    "task_field",
    "QUESTION",
    "EXPECTED_ANSWER",
    "JudgeModels",
    "Judgement",
    "JudgeFailure",
    "judge",
    "judge_metrics",
    "PASS_THRESHOLD",
    "pass_at_k",
    "pass_hat_k",
    "majority_vote",
    "mean_pass_at_k",
    # simulated users
    "UserTurn",
    "SimulatedUser",
    "ScriptedUser",
    "ModelUser",
    "as_seen_by_user",
    "user_model_failed",
    "user_model_named",
    # ready-made kinds
    "Machine",
    "MachineTools",
    "MachineState",
    "Editor",
    "ShellResult",
    "ShellEnded",
    "HarborEnvironment",
    "HarborState",
    "MCPEnvironment",
    "MCPServer",
    "MCPState",
    "MCPServerFailure",
    "MCPServerUnreachable",
    "Baseline",
    # the in-process client
    "EnvironmentClient",
    "LocalEnvironmentClient",
    "StepEnvironmentClient",
}

LOADED_ON_FIRST_USE = [
    "palaestra.environment.finding.catalogue",
    "palaestra.environment.estimators",
    "palaestra.environment.kinds.harbor",
    "palaestra.environment.kinds.machine",
    "palaestra.environment.kinds.mcp",
    "palaestra.environment.rubric",
    "palaestra.wire.jsonl",
]

ENGINE = ["collection", "run", "serve", "stack", "training", "cli", "remote", "evaluate"]


def test_the_kit_exports_exactly_the_author_api() -> None:
    assert len(kit.__all__) == len(set(kit.__all__))
    assert set(kit.__all__) - AUTHOR_API == set(), "a name joined the kit: add it here"
    assert AUTHOR_API - set(kit.__all__) == set(), "a name left the kit: drop it here"


def test_palaestra_exports_every_kit_name_as_the_same_object() -> None:
    for name in kit.__all__:
        assert name in palaestra.__all__
        assert getattr(palaestra, name) is getattr(kit, name), name


def test_a_kit_name_stays_itself_once_every_module_of_the_kit_is_loaded() -> None:
    # Loading ``palaestra.environment.judge`` binds the package's ``judge`` to the module
    # unless the face bound the function first.
    for module in pkgutil.walk_packages(kit.__path__, "palaestra.environment."):
        if not module.name.endswith(("install_report", "shell_program")):  # programs
            importlib.import_module(module.name)
    modules = [name for name in kit.__all__ if inspect.ismodule(getattr(kit, name))]
    assert modules == []


def test_the_names_palaestra_exported_before_the_kit_had_a_face_are_still_there() -> None:
    before = {
        "Agent", "AgentResult", "AgentSpec", "AggregateFile", "CallbackError", "CollectOptions",
        "ConfigError", "Criterion", "EnvSpec", "Environment", "EnvironmentClient",
        "Evaluation", "Failure", "FailureKind", "FailureRow", "Gate", "InputError",
        "InvalidTask", "JsonDict", "LocalEnvironmentClient", "Model", "ModelConfig",
        "ModelError", "PalaestraError", "RolloutFailure", "RolloutRow", "Rubric", "RunSpec",
        "RunSummary", "Scored", "ServeSpec", "Session", "SingleTurnAgent", "StepEnvironment",
        "StepResult", "Submission", "TaskRow", "ToolCallingAgent", "ToolError", "ToolFailure",
        "Verdict", "collect", "collect_async", "eval", "eval_async", "function_calls",
        "input_items", "last_boxed", "output_text", "run_spec", "strip_reasoning",
        "task_row", "tool",
    }  # fmt: skip
    assert before - set(palaestra.__all__) == set()


def test_importing_the_kit_loads_neither_its_heavy_pieces_nor_the_engine() -> None:
    probe = (
        "import sys, palaestra.environment\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('palaestra'))))"
    )
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    assert "palaestra.environment.judge" in loaded  # the probe sees the kit's modules
    assert [m for m in LOADED_ON_FIRST_USE if m in loaded] == []
    engine = [m for m in loaded if m.split(".")[1:2] and m.split(".")[1] in ENGINE]
    assert engine == []
