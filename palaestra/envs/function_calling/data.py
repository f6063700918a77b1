"""BFCL tasks: read the data files the ``bfcl-eval`` package ships and turn them into task rows.

Only the package's data directory is read (located with ``importlib.util.find_spec``); none of
its code is imported, so ``pip install --no-deps bfcl-eval`` is enough.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from palaestra import ConfigError, JsonDict, read_objects
from palaestra.envs._shared.bfcl import bfcl_data_dir as data_dir
from palaestra.envs._shared.bfcl import convert_schema
from palaestra.envs.function_calling.compare import answerable

CATEGORIES: tuple[str, ...] = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "irrelevance",
)
"""Single-step categories with JSON-typed arguments. ``irrelevance``: no call is correct."""

NO_CALL_CATEGORIES = frozenset({"irrelevance", "live_irrelevance"})
ALLOWED_CATEGORIES: tuple[str, ...] = (*CATEGORIES, "live_irrelevance")
"""Every category the environment reads (``categories``): the defaults and ``live_irrelevance``."""

SYSTEM_PROMPT = (
    "You are a function-calling assistant. When the available functions can serve the "
    "request, call them with the right arguments, all in this one turn (several calls at once "
    "if several are needed). When none of them fits, answer in plain text and call nothing."
)

_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def bfcl_data_dir() -> Path:
    """The ``data`` directory of the installed ``bfcl-eval`` package."""
    return data_dir(
        "the function_calling task generator reads the Berkeley Function Calling Leaderboard "
        "data from the bfcl-eval package: pip install --no-deps bfcl-eval"
    )


def load_tasks(categories: Iterable[str] = CATEGORIES) -> Iterator[JsonDict]:
    """Every task of ``categories``, in file order."""
    data = bfcl_data_dir()
    for category in categories:
        questions = data / f"BFCL_v4_{category}.json"
        if not questions.is_file():
            raise ConfigError(f"bfcl-eval has no data file for category '{category}'")
        answers: dict[str, Any] = {}
        if category not in NO_CALL_CATEGORIES:
            for row in _json_lines(data / "possible_answer" / questions.name):
                answers[row["id"]] = row["ground_truth"]
        for row in _json_lines(questions):
            if category in NO_CALL_CATEGORIES:
                yield to_task(row, [], category)
            elif row["id"] in answers:
                task = to_task(row, answers[row["id"]], category)
                if answerable(task["expected_calls"], task["responses_create_params"]["tools"]):
                    yield task


def to_task(question: JsonDict, ground_truth: list[JsonDict], category: str) -> JsonDict:
    """One BFCL question and its possible answers as a palaestra task row."""
    names: dict[str, str] = {}
    tools = []
    for function in question["function"]:
        name = tool_name(function["name"], taken=set(names.values()))
        names[function["name"]] = name
        tools.append(convert_function(function, name))
    messages = [dict(m) for m in question["question"][0]]
    if not any(m.get("role") == "system" for m in messages):
        messages.insert(0, {"role": "system", "content": SYSTEM_PROMPT})
    expected = [
        {"name": names.get(name, tool_name(name)), "arguments": arguments}
        for call in ground_truth
        for name, arguments in call.items()
    ]
    return {
        "responses_create_params": {"input": messages, "tools": tools},
        "bfcl_id": question["id"],
        "category": category,
        "expected_calls": expected,
    }


def tool_name(name: str, taken: set[str] | None = None) -> str:
    """A function name the Responses API accepts (``[A-Za-z0-9_-]{1,64}``): dots become ``_``."""
    safe = _NAME_CHARS.sub("_", name)[:64] or "function"
    candidate, suffix = safe, 2
    while taken and candidate in taken:
        candidate = f"{safe[:60]}_{suffix}"
        suffix += 1
    return candidate


def convert_function(function: JsonDict, name: str) -> JsonDict:
    """A BFCL function document as a Responses function tool, with ``strict`` written."""
    parameters = convert_schema(
        function.get("parameters") or {"type": "dict", "properties": {}},
        closed=True,
        typed_any=False,
    )
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    parameters.setdefault("required", [])
    return {
        "type": "function",
        "name": name,
        "description": str(function.get("description", "")),
        "parameters": parameters,
        "strict": _strict_compatible(parameters),
    }


def _strict_compatible(schema: JsonDict) -> bool:
    """Whether the schema meets strict mode: every object closed with every property required."""
    kind = schema.get("type")
    if kind is None:
        return False
    if kind == "object":
        properties = schema.get("properties")
        if not isinstance(properties, dict) or set(schema.get("required", [])) != set(properties):
            return False
        return all(_strict_compatible(p) for p in properties.values())
    if kind == "array":
        return _strict_compatible(schema.get("items") or {})
    return "default" not in schema


def _json_lines(path: Path) -> Iterator[JsonDict]:
    for _, row in read_objects(path):
        yield row
