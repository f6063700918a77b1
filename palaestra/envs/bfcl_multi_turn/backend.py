"""BFCL's executable backends and its per-turn checks, used through the ``bfcl-eval`` package.

Everything here imports ``bfcl_eval`` lazily (``import palaestra`` never does). The backends
are the package's classes (``GorillaFileSystem``, ``MathAPI``, ``MessageAPI``, ``TicketAPI``,
``TradingBot``, ``TravelAPI``, ``TwitterAPI``, ``VehicleControlAPI``), one fresh instance each
per rollout, loaded from the task's initial configuration as BFCL loads them. A call is
dispatched to the bound method by name, with its arguments as keywords: no call string is
built or evaluated. What a call returns is turned into the text the model reads exactly as
BFCL's ``execute_multi_turn_func_call`` does (strings as they are, dicts as ``json.dumps``,
anything else ``str``; an exception as ``Error during execution: ...``), because BFCL's
response check compares those texts.

``check_turns`` is BFCL's ``multi_turn_checker`` turn loop with direct dispatch in place of
``eval``: after each user turn it runs the turn's ground-truth calls on ground-truth instances
and asks BFCL's own ``state_checker`` and ``response_checker`` whether the model's instances
and results agree. The parity test runs ``multi_turn_checker`` itself on the same
trajectories and requires the same verdict.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
from dataclasses import dataclass, field
from typing import Any

from palaestra import ConfigError, JsonDict
from palaestra.envs.bfcl_multi_turn.data import parse_call

BLOCKED = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})
"""Names BFCL refuses to execute (its guard before ``eval``), refused here the same way."""

Call = tuple[str, list[Any], dict[str, Any]]
"""A call to dispatch: function name, positional and keyword arguments."""


def _bfcl() -> tuple[dict[str, str], list[str]]:
    config = _module("bfcl_eval.constants.executable_backend_config")
    return config.CLASS_FILE_PATH_MAPPING, config.STATELESS_CLASSES


def _module(name: str) -> Any:
    """A module of ``bfcl_eval`` (imported by name: the package ships no type information)."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise ConfigError(
            "bfcl_multi_turn runs BFCL's backends from the bfcl-eval package: "
            f"pip install --no-deps bfcl-eval==2026.3.23 ({error})"
        ) from error


def backend_class(name: str) -> type[Any]:
    """The BFCL backend class called ``name``."""
    modules, _ = _bfcl()
    if name not in modules:
        raise ConfigError(f"bfcl_multi_turn: BFCL has no backend class {name!r}")
    return getattr(importlib.import_module(modules[name]), name)  # type: ignore[no-any-return]


class Backends:
    """One rollout's backend instances, loaded from the task, and their methods by name."""

    def __init__(self, task: JsonDict) -> None:
        _, stateless = _bfcl()
        long_context = task.get("category") == "long_context"
        config = task.get("initial_config") or {}
        self.instances: dict[str, Any] = {}
        self.methods: dict[str, Any] = {}
        for name in task["involved_classes"]:
            instance = backend_class(name)()
            if name not in stateless:
                instance._load_scenario(
                    copy.deepcopy(config.get(name, {})), long_context=long_context
                )
            self.instances[name] = instance
            for method_name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not method_name.startswith("_"):
                    self.methods[method_name] = method

    def execute(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> str:
        """Run one call and return its result as BFCL's execution text."""
        try:
            if name in BLOCKED:
                raise Exception(f"Function call {name} is not allowed.")
            method = self.methods.get(name)
            if method is None:
                raise NameError(f"name '{name}' is not defined")
            return result_text(method(*args, **kwargs))
        except Exception as error:  # BFCL records every failure of a call as its result
            return f"Error during execution: {error}"


def result_text(result: Any) -> str:
    """A method's return value as BFCL's execution text."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except Exception:
            return str(result)
    return str(result)


def keyword_arguments(
    classes: list[str], name: str, args: list[Any], kwargs: dict[str, Any]
) -> JsonDict:
    """A call's positional arguments named by the backend method's signature (gold actions are
    tool calls, whose arguments are a JSON object)."""
    if not args:
        return dict(kwargs)
    for class_name in classes:
        method = getattr(backend_class(class_name), name, None)
        if method is not None:
            bound = inspect.signature(method).bind(None, *args, **kwargs)
            return {k: v for k, v in bound.arguments.items() if k != "self"}
    raise ValueError(f"no backend of {classes} has a method {name!r}")


@dataclass(slots=True)
class TurnCheck:
    """BFCL's verdict on one user turn."""

    valid: bool
    error_type: str = ""
    error_message: str = ""


@dataclass(slots=True)
class Checked:
    """The per-turn verdicts and whether the whole entry passes as BFCL scores it."""

    turns: list[TurnCheck] = field(default_factory=list)
    valid: bool = False
    error_type: str = ""
    error_message: str = ""


def check_turns(task: JsonDict, model_turns: list[list[list[Call]]]) -> Checked:
    """Score a trajectory's calls, grouped by user turn and then by model step, as BFCL does.

    ``model_turns[k]`` holds the model's steps (its answers that called functions) in user turn
    ``k``; a step is the calls of one answer. Turns the conversation never reached are missing
    (BFCL: force-terminated, the entry fails). Every turn reached is checked, also after one
    failed, so ``turns`` has one verdict per turn for ``step_rewards``; the entry passes only
    if every turn does, which is exactly when BFCL's checker (which stops at the first failure)
    says valid.
    """
    checker = _module("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker")
    utils = _module("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils")

    ground_truth: list[list[str]] = task["ground_truth"]
    model = Backends(task)
    gold = Backends(task)
    all_model_results: list[str] = []
    checked = Checked()
    for index, gold_strings in enumerate(ground_truth):
        reached = index < len(model_turns)
        steps = model_turns[index] if reached else []
        step_results = [[model.execute(*call) for call in step] for step in steps]
        for results in step_results:
            all_model_results.extend(results)
        gold_results = [gold.execute(*parse_call(text)) for text in gold_strings]
        if not reached:
            turn = TurnCheck(False, "multi_turn:force_terminated", "the turn was never reached")
        elif not gold_strings:
            turn = TurnCheck(True)  # BFCL checks nothing in a turn whose ground truth is empty
        elif not steps or utils.is_empty_execute_response(steps):
            turn = TurnCheck(
                False,
                "multi_turn:empty_turn_model_response",
                f"Model response list is empty for turn {index}",
            )
        else:
            result = checker.state_checker(model.instances, gold.instances)
            if result["valid"]:
                result = checker.response_checker(all_model_results, gold_results, index)
            turn = TurnCheck(
                bool(result["valid"]),
                str(result.get("error_type", "")),
                str(result.get("error_message", "")),
            )
        checked.turns.append(turn)
    first = next((t for t in checked.turns if not t.valid), None)
    checked.valid = first is None and len(model_turns) == len(ground_truth)
    if first is not None:
        checked.error_type, checked.error_message = first.error_type, first.error_message
    elif not checked.valid:
        checked.error_type = "multi_turn:force_terminated"
        checked.error_message = (
            f"the trajectory has {len(model_turns)} user turns, the task {len(ground_truth)}"
        )
    return checked
