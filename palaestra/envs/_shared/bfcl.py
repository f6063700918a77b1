"""What the two BFCL built-ins share (``function_calling``, ``bfcl_multi_turn``): where the
``bfcl-eval`` package keeps its data, BFCL's types as JSON Schema, and drawing tasks by seed.

It is the BFCL family's shared piece: it moves into that family's package when built-ins are
grouped into families.
"""

from __future__ import annotations

import importlib.util
import random
from collections.abc import Iterator, Sequence
from pathlib import Path

from palaestra import ConfigError, JsonDict

TYPES = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "dict": "object",
    "object": "object",
    "tuple": "array",
    "any": "string",
}
"""BFCL's Python-flavoured types as JSON Schema (BFCL's ``GORILLA_TO_OPENAPI`` for them)."""
_KEPT_KEYS = ("description", "enum", "default", "minimum", "maximum")


def bfcl_data_dir(missing: str) -> Path:
    """The ``data`` directory of the installed ``bfcl-eval`` package; ``missing`` is the
    ``ConfigError``'s line when it is not installed (what needs it, and how to install it)."""
    spec = importlib.util.find_spec("bfcl_eval")
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        data = Path(root) / "data"
        if data.is_dir():
            return data
    raise ConfigError(missing)


def convert_schema(schema: JsonDict, *, closed: bool, typed_any: bool) -> JsonDict:
    """A BFCL parameter schema as JSON Schema. ``closed``: every object with properties gets
    ``additionalProperties: false``, as strict mode asks; ``typed_any``: BFCL's ``any`` is a
    string, as BFCL's own conversion has it, else it stays untyped so any value matches
    (single-step calls are scored, never run)."""
    converted: JsonDict = {}
    name = str(schema.get("type", ""))
    kind = TYPES.get(name) if typed_any or name != "any" else None
    if kind is not None:
        converted["type"] = kind
    for key in _KEPT_KEYS:
        if key in schema:
            converted[key] = schema[key]
    if isinstance(schema.get("items"), dict):
        converted["items"] = convert_schema(schema["items"], closed=closed, typed_any=typed_any)
    elif kind == "array":
        converted["items"] = {}
    properties = schema.get("properties")
    if isinstance(properties, dict):
        converted["properties"] = {
            k: convert_schema(v, closed=closed, typed_any=typed_any) for k, v in properties.items()
        }
        converted["required"] = [r for r in schema.get("required", []) if r in properties]
        if closed:
            converted["additionalProperties"] = False
    return converted


def draw(
    tasks: list[JsonDict],
    count: int,
    seed: int,
    name: str,
    categories: Sequence[str],
    kind: str = "tasks",
) -> Iterator[JsonDict]:
    """``count`` of ``tasks`` drawn without replacement, shuffled by ``seed``; more than there
    are is a ``ConfigError`` naming the environment ``name``, the ``kind`` of its tasks and
    their ``categories``."""
    if count > len(tasks):
        raise ConfigError(
            f"{name} has {len(tasks)} {kind} in {', '.join(categories)}; asked for {count}"
        )
    random.Random(seed).shuffle(tasks)
    yield from tasks[:count]
