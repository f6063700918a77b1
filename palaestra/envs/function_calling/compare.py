"""Comparing a model's function calls with the expected ones: order-insensitive, type-aware.

An expected call is ``{"name": ..., "arguments": {param: [accepted values]}}``. Every argument
lists the values accepted for it; an empty string among them means the argument may be left
out. A dict among the accepted values is itself such a spec (for object arguments), and so is a
dict inside an accepted list (for arrays of objects).

Values are compared by the parameter's JSON Schema type, taken from the task's tools:
``integer`` takes only whole JSON numbers, ``number`` takes ints and floats, ``boolean`` only
true/false, ``string`` only strings, compared without regard to case, spaces and common
punctuation. A model value of the wrong type never matches, even when it prints the same.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from typing import Any

import orjson

from palaestra import JsonDict

MAX_ARGUMENTS_CHARS = 100_000
"""Longer ``arguments`` strings are not parsed: the call counts as malformed."""
MAX_DEPTH = 32
"""Values nested deeper than this never match (and cannot exhaust the stack)."""
_IGNORED = str.maketrans("", "", string.whitespace + ",.;:!?'\"-_/")


@dataclass(frozen=True, slots=True)
class CallCheck:
    """The outcome: ``ok`` or the first reason it is not."""

    ok: bool
    reason: str = ""


def first_turn_calls(response: JsonDict) -> list[JsonDict] | None:
    """The function calls of the model's first answer: every call before the first tool output.

    Under ``--agent single_turn`` that is the whole output; under ``tool_calling`` the agent
    may have answered the calls (with "unknown tool") and asked again, which is ignored.
    None when ``response`` has no output list at all.
    """
    output = response.get("output") if isinstance(response, dict) else None
    if not isinstance(output, list):
        return None
    calls = []
    for item in output:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call_output":
            break
        if item.get("type") == "function_call":
            calls.append(item)
    return calls


def check_calls(
    calls: list[JsonDict], expected: list[JsonDict], tools: list[JsonDict]
) -> CallCheck:
    """Whether ``calls`` are exactly the ``expected`` calls, in any order."""
    if len(calls) != len(expected):
        return CallCheck(False, f"made {len(calls)} call(s), expected {len(expected)}")
    schemas = {
        t.get("name"): t.get("parameters") or {}
        for t in tools
        if isinstance(t, dict) and t.get("type", "function") == "function"
    }
    parsed: list[tuple[str, JsonDict]] = []
    for call in calls:
        name, arguments = call.get("name"), parse_arguments(call.get("arguments"))
        if not isinstance(name, str) or arguments is None:
            return CallCheck(False, f"malformed call {str(name)[:80]!r}")
        if name not in schemas:
            return CallCheck(False, f"called unknown function {name[:80]!r}")
        parsed.append((name, arguments))
    fits = [
        [call_matches(name, args, want, schemas.get(name, {})) for want in expected]
        for name, args in parsed
    ]
    if not _perfect_matching(fits):
        return CallCheck(False, _first_mismatch(parsed, expected))
    return CallCheck(True)


def parse_arguments(raw: object) -> JsonDict | None:
    """A call's arguments as a dict; None when they are not a JSON object."""
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    if not isinstance(raw, str) or len(raw) > MAX_ARGUMENTS_CHARS:
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def call_matches(name: str, arguments: JsonDict, expected: JsonDict, schema: JsonDict) -> bool:
    if name != expected.get("name"):
        return False
    spec = expected.get("arguments")
    return isinstance(spec, dict) and fields_match(arguments, spec, schema, 0)


def fields_match(value: JsonDict, spec: JsonDict, schema: JsonDict, depth: int) -> bool:
    """An object against a spec of accepted values per field."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    properties = properties if isinstance(properties, dict) else {}
    if any(key not in spec for key in value):
        return False  # an argument the expected call does not have
    for key, accepted in spec.items():
        accepted = accepted if isinstance(accepted, list) else [accepted]
        if key not in value:
            if "" not in accepted:
                return False
            continue
        field_schema = properties.get(key, {})
        if not any(
            value_matches(value[key], a, field_schema, depth + 1) for a in accepted if a != ""
        ):
            return False
    return True


def value_matches(value: Any, accepted: Any, schema: JsonDict, depth: int) -> bool:
    """One model value against one accepted value, by the schema's type."""
    if depth > MAX_DEPTH:
        return False
    kind = schema.get("type") if isinstance(schema, dict) else None
    if accepted is None:  # null given as a value: the parameter's "no value"
        return value is None
    if isinstance(accepted, dict) and all(isinstance(v, list) for v in accepted.values()):
        return isinstance(value, dict) and fields_match(value, accepted, schema, depth)
    if kind == "integer":
        return _is_int(value) and _is_int(accepted) and value == accepted
    if kind == "number":
        return _is_number(value) and _is_number(accepted) and _close(value, accepted)
    if kind == "boolean":
        return isinstance(value, bool) and value is accepted
    if kind == "string":
        return isinstance(value, str) and _norm(value) == _norm(str(accepted))
    if kind == "array":
        items: JsonDict = schema["items"] if isinstance(schema.get("items"), dict) else {}
        return (
            isinstance(value, list)
            and isinstance(accepted, list)
            and len(value) == len(accepted)
            and all(
                value_matches(v, a, items, depth + 1) for v, a in zip(value, accepted, strict=True)
            )
        )
    if kind == "object" and isinstance(accepted, dict):
        return isinstance(value, dict) and _loose_equal(value, accepted, depth)
    return _loose_equal(value, accepted, depth)


def reference_calls(expected: list[JsonDict], tools: list[JsonDict]) -> list[JsonDict]:
    """One set of calls that ``expected`` accepts: an argument that may be left out (``""``
    accepted) is, the others take their first accepted value in the type the tool's schema
    gives it (BFCL lists ``true`` for some string parameters: ``"True"``), nested specs built
    alike. The environment's gold actions, for ``palaestra test``'s oracle."""
    schemas = {t.get("name"): t.get("parameters") or {} for t in tools if isinstance(t, dict)}
    return [
        {
            "name": call.get("name"),
            "arguments": _reference_fields(
                call.get("arguments") or {}, schemas.get(call.get("name")) or {}
            ),
        }
        for call in expected
    ]


def _reference_fields(spec: JsonDict, schema: JsonDict) -> JsonDict:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    properties = properties if isinstance(properties, dict) else {}
    fields: JsonDict = {}
    for key, accepted in spec.items():
        values = accepted if isinstance(accepted, list) else [accepted]
        if values and "" not in values:
            fields[key] = _reference_value(values[0], properties.get(key) or {})
    return fields


def _reference_value(accepted: Any, schema: JsonDict) -> Any:
    if isinstance(accepted, dict) and all(isinstance(v, list) for v in accepted.values()):
        return _reference_fields(accepted, schema)
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind == "string" and accepted is not None and not isinstance(accepted, str):
        return str(accepted)
    if isinstance(accepted, list):
        items = schema.get("items") if isinstance(schema, dict) else None
        return [
            _reference_value(item, items if isinstance(items, dict) else {}) for item in accepted
        ]
    return accepted


def answerable(expected: list[JsonDict], tools: list[JsonDict]) -> bool:
    """Whether some calls could match ``expected`` under this comparison (the data can be wrong:
    an argument the schema lacks, no accepted value, or only values of the wrong type)."""
    schemas = {t.get("name"): t.get("parameters") or {} for t in tools}
    for call in expected:
        schema = schemas.get(call.get("name"))
        arguments = call.get("arguments")
        if schema is None or not isinstance(arguments, dict):
            return False
        if not _spec_answerable(arguments, schema):
            return False
    return True


def _spec_answerable(spec: JsonDict, schema: JsonDict) -> bool:
    properties = schema.get("properties") or {}
    for key, accepted in spec.items():
        if not isinstance(accepted, list):
            return False
        if "" in accepted:
            continue
        if properties and key not in properties:
            return False  # an object with no properties listed takes any keys
        if not any(_can_match(a, properties.get(key, {})) for a in accepted):
            return False
    return True


def _can_match(accepted: Any, schema: JsonDict) -> bool:
    kind = schema.get("type")
    if accepted is None or kind is None:
        return True
    if isinstance(accepted, dict) and all(isinstance(v, list) for v in accepted.values()):
        return kind == "object" and _spec_answerable(accepted, schema)
    if kind == "string":
        return not isinstance(accepted, list | dict)
    if kind == "array":
        items = schema.get("items") or {}
        return isinstance(accepted, list) and all(_can_match(a, items) for a in accepted)
    checks = {"integer": _is_int, "number": _is_number, "boolean": _is_bool, "object": _is_dict}
    return checks.get(str(kind), lambda _: True)(accepted)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _is_dict(value: Any) -> bool:
    return isinstance(value, dict)


def _loose_equal(value: Any, accepted: Any, depth: int) -> bool:
    """Structural equality for untyped values: numbers by value, strings normalised."""
    if depth > MAX_DEPTH:
        return False
    if isinstance(value, bool) or isinstance(accepted, bool):
        return value is accepted
    if _is_number(value) and _is_number(accepted):
        return _close(value, accepted)
    if isinstance(value, str) and isinstance(accepted, str):
        return _norm(value) == _norm(accepted)
    if isinstance(value, list) and isinstance(accepted, list):
        return len(value) == len(accepted) and all(
            _loose_equal(v, a, depth + 1) for v, a in zip(value, accepted, strict=True)
        )
    if isinstance(value, dict) and isinstance(accepted, dict):
        return value.keys() == accepted.keys() and all(
            _loose_equal(value[k], accepted[k], depth + 1) for k in value
        )
    return value is None and accepted is None


def _perfect_matching(fits: list[list[bool]]) -> bool:
    """Whether each call can be paired with a different expected call it fits (Kuhn's method)."""
    owner: dict[int, int] = {}

    def place(call: int, seen: set[int]) -> bool:
        for want, fit in enumerate(fits[call]):
            if fit and want not in seen:
                seen.add(want)
                if want not in owner or place(owner[want], seen):
                    owner[want] = call
                    return True
        return False

    return all(place(call, set()) for call in range(len(fits)))


def _first_mismatch(parsed: list[tuple[str, JsonDict]], expected: list[JsonDict]) -> str:
    wanted = sorted(str(e.get("name")) for e in expected)
    made = sorted(name for name, _ in parsed)
    if made != wanted:
        return f"called {made[:8]}, expected {wanted[:8]}"
    return "right function(s), wrong arguments"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _close(a: float, b: float) -> bool:
    try:
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    except OverflowError:  # an int too large for a float
        return a == b


def _norm(text: str) -> str:
    return text.casefold().translate(_IGNORED)
