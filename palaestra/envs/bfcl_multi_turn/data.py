"""BFCL multi-turn tasks: the ``bfcl-eval`` package's data files as self-contained task rows.

Only data files are read here (located with ``importlib.util.find_spec``, nothing imported), so
listing or converting tasks works without BFCL's backends. A row carries everything a rollout
and its verification need: the turns the user will say, the backends' initial configuration,
the function documents offered as tools (and those revealed later, for ``miss_func``) and
BFCL's ground-truth call strings.

Ground-truth strings are never evaluated: ``parse_call`` reads one with ``ast`` and accepts
only a bare function name called with literal arguments.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from palaestra import ConfigError, JsonDict, read_objects
from palaestra.envs._shared.bfcl import bfcl_data_dir as data_dir
from palaestra.envs._shared.bfcl import convert_schema

CATEGORIES: tuple[str, ...] = ("base", "miss_func", "miss_param", "long_context")
"""BFCL's four multi-turn categories, 200 tasks each."""

FUNC_DOC_FILES: dict[str, str] = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}
"""The backends of the four categories and their function documents (BFCL's own mapping,
``MULTI_TURN_FUNC_DOC_FILE_MAPPING``, restricted to them)."""

PYTHON_HINT = " Note that the provided function is in Python 3 syntax."
"""What BFCL appends to every Python function's description before inference."""

ADDITIONAL_FUNCTION_PROMPT = (
    "I have updated some more functions you can choose from. What about now?"
)
"""BFCL's user message at a ``miss_func`` turn that reveals held-out functions
(``DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC``)."""


def bfcl_data_dir() -> Path:
    """The ``data`` directory of the installed ``bfcl-eval`` package."""
    return data_dir(
        "bfcl_multi_turn reads BFCL's multi-turn data and runs its backends from the bfcl-eval "
        "package: pip install --no-deps bfcl-eval==2026.3.23"
    )


def parse_categories(category: str | Iterable[str]) -> tuple[str, ...]:
    """``"all"``, one category or a comma-separated list, checked against ``CATEGORIES``."""
    names = category.split(",") if isinstance(category, str) else list(category)
    names = [n.strip().removeprefix("multi_turn_") for n in names if n.strip()]
    if names == ["all"]:
        return CATEGORIES
    unknown = [n for n in names if n not in CATEGORIES]
    if unknown or not names:
        raise ConfigError(
            f"bfcl_multi_turn: unknown category {', '.join(unknown) or '(none)'}; "
            f"choose all or one or more of {', '.join(CATEGORIES)}"
        )
    return tuple(dict.fromkeys(names))


def load_tasks(categories: Iterable[str] = CATEGORIES) -> Iterator[JsonDict]:
    """Every task of ``categories``, in the package's file order."""
    data = bfcl_data_dir()
    docs = {
        name: [row for _, row in read_objects(data / "multi_turn_func_doc" / file)]
        for name, file in FUNC_DOC_FILES.items()
    }
    for category in categories:
        name = f"BFCL_v4_multi_turn_{category}.json"
        answers = {
            row["id"]: row["ground_truth"]
            for _, row in read_objects(data / "possible_answer" / name)
        }
        for _, question in read_objects(data / name):
            yield to_task(question, answers[question["id"]], category, docs)


def to_task(
    question: JsonDict,
    ground_truth: list[list[str]],
    category: str,
    docs: dict[str, list[JsonDict]],
) -> JsonDict:
    """One BFCL multi-turn entry and its ground truth as a palaestra task row.

    The function documents are those of the entry's backends in BFCL's order; a ``miss_func``
    entry's held-out functions are left out and listed under the turn that reveals them, as
    BFCL's ``populate_test_cases_with_predefined_functions`` does.
    """
    classes = list(question["involved_classes"])
    functions = [dict(doc) for name in classes for doc in docs[name]]
    held_out: dict[str, list[JsonDict]] = {}
    for turn, names in (question.get("missed_function") or {}).items():
        for missed in names:
            found = next(f for f in functions if f["name"] == missed)
            functions.remove(found)
            held_out.setdefault(str(turn), []).append(found)
    turns: list[str] = []
    for index, messages in enumerate(question["question"]):
        if str(index) in held_out:
            turns.append(reveal_message(held_out[str(index)]))
        else:
            turns.append("\n".join(str(m["content"]) for m in messages))
    return {
        "responses_create_params": {
            "input": [dict(m) for m in question["question"][0]],
            "tools": [convert_function(f) for f in functions],
        },
        "bfcl_id": question["id"],
        "category": category,
        "user_turns": turns,
        "revealed_tools": {
            turn: [convert_function(f) for f in found] for turn, found in held_out.items()
        },
        "involved_classes": classes,
        "initial_config": question.get("initial_config", {}),
        "ground_truth": ground_truth,
    }


def reveal_message(functions: list[JsonDict]) -> str:
    """The user's message at a turn that reveals held-out functions: BFCL's own wording, after
    the functions' documents (its prompting form: a tool list fixed for the whole rollout
    cannot grow, so the documents travel in the message)."""
    documents = [_with_hint(f) for f in functions]
    return f"{orjson.dumps(documents).decode()}\n{ADDITIONAL_FUNCTION_PROMPT}"


def convert_function(function: JsonDict) -> JsonDict:
    """A BFCL function document as a Responses function tool."""
    parameters = convert_schema(
        function.get("parameters") or {"type": "dict"}, closed=False, typed_any=True
    )
    parameters["type"] = "object"
    parameters.setdefault("properties", {})
    parameters.setdefault("required", [])
    return {
        "type": "function",
        "name": str(function["name"]),
        "description": _with_hint(function)["description"],
        "parameters": parameters,
        "strict": False,
    }


def _with_hint(function: JsonDict) -> JsonDict:
    return {**function, "description": f"{function.get('description', '')}{PYTHON_HINT}"}


def parse_call(text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """A ground-truth call string (``mv(source='a', destination='b')``) as its function name,
    positional and keyword arguments, read with ``ast`` (never evaluated).

    Raises ``ValueError`` for anything but a bare name called with literal arguments.
    """
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as error:
        raise ValueError(f"not a call: {text[:120]!r}") from error
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain function call: {text[:120]!r}")
    try:
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
    except ValueError as error:
        raise ValueError(f"arguments are not literals: {text[:120]!r}") from error
    if len(kwargs) != len(node.keywords):
        raise ValueError(f"**arguments are not allowed: {text[:120]!r}")
    return node.func.id, args, kwargs
