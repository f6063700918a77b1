"""Checks of an environment's tools as a model sees them: valid schemas, unique names, docs.

Each check reads the tools of a built instance when it is given them (``specs``): an
environment whose tools come from elsewhere (an MCP server's, listed on the instance) is
checked with those, not only with its class's ``@tool`` methods.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from typing import Any

import orjson

from palaestra.authoring.report import Check, counted
from palaestra.environment.base import Environment
from palaestra.environment.tools import ToolSpec, tool_options
from palaestra.types import JsonDict

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What OpenAI-compatible servers accept as a function name."""


def check_tool_schemas(
    cls: type[Environment], specs: Mapping[str, ToolSpec] | None = None
) -> Check:
    """Every tool's schema is a JSON Schema object, its name unique and acceptable.
    ``specs``: the instance's tools (default the class's)."""
    name = "tool schemas"
    specs = cls.tool_specs if specs is None else specs
    problems = _duplicate_names(cls)
    for tool_name, spec in specs.items():
        try:
            entry = spec.schema()
            orjson.dumps(entry)
        except Exception as error:  # pydantic cannot describe a hint, or it is not JSON
            problems.append(f"{tool_name}: no JSON schema ({type(error).__name__}: {error})")
            continue
        if not TOOL_NAME.match(tool_name):
            problems.append(f"{tool_name!r}: a tool name must match {TOOL_NAME.pattern}")
        problems.extend(f"{tool_name}: {p}" for p in _schema_problems(entry["parameters"]))
    if problems:
        return Check.failed(name, "; ".join(problems), problems=problems)
    if not specs:
        return Check.passed(name, "no tools of its own", tools=0)
    return Check.passed(
        name,
        f"{counted(len(specs), 'tool')}{_served(cls, specs)}, valid JSON Schema objects, "
        "names unique",
        tools=len(specs),
    )


def check_tool_docs(cls: type[Environment], specs: Mapping[str, ToolSpec] | None = None) -> Check:
    """The environment, every tool and every tool parameter carry a description.

    A tool served from elsewhere (an MCP server's) is described by what its server lists; its
    undescribed parameters are said, not failed: the environment's author may not own the
    server, and the model still reads the parameter's name and type."""
    name = "tool docs"
    specs = cls.tool_specs if specs is None else specs
    problems: list[str] = []
    served: list[str] = []
    if not _described(cls):
        problems.append(f"class {cls.__name__} has no docstring (its one-line description)")
    parameters = 0
    for tool_name, spec in specs.items():
        own = tool_name in cls.tool_specs
        if own and not (inspect.getdoc(spec.function) or "").strip():
            problems.append(f"tool {tool_name} has no docstring (the model reads it)")
        if not own and spec.description.strip() in ("", tool_name):
            problems.append(f"tool {tool_name}: its server lists no description")
        try:
            properties = spec.schema()["parameters"].get("properties", {})
        except Exception:  # reported by check_tool_schemas
            continue
        for parameter, schema in properties.items():
            if isinstance(schema, dict) and str(schema.get("description") or "").strip():
                parameters += 1
                continue
            if own:
                problems.append(
                    f"tool {tool_name}: parameter '{parameter}' is not described "
                    f"(add it under Args: in the docstring)"
                )
            else:
                served.append(f"{tool_name}.{parameter}")
    if problems:
        return Check.failed(name, "; ".join(problems), problems=problems)
    message = (
        f"the environment, {counted(len(specs), 'tool')}{_served(cls, specs)} and "
        f"{counted(parameters, 'parameter')} described"
    )
    if served:
        message += f"; its server describes no {', '.join(served)}"
    return Check.passed(name, message)


def _served(cls: type[Environment], specs: Mapping[str, ToolSpec]) -> str:
    """`` (N from its server)`` when some of ``specs`` are not the class's own ``@tool``s."""
    others = len(set(specs) - set(cls.tool_specs))
    return f" ({others} from its server)" if others else ""


def _described(cls: type[Environment]) -> bool:
    """Whether the class has a docstring of its own or an explicit ``description`` (without
    either, ``description`` is the first line of a base class's docstring)."""
    if (cls.__doc__ or "").strip():
        return True
    inherited = (inspect.getdoc(cls) or "").strip().splitlines()
    return bool(cls.description) and cls.description != (inherited[0] if inherited else "")


def _duplicate_names(cls: type[Environment]) -> list[str]:
    """Tool names that two different methods claim (the later one silently wins otherwise)."""
    claims: dict[str, list[str]] = {}
    for attribute in dir(cls):
        options = tool_options(inspect.getattr_static(cls, attribute, None))
        if options is not None:
            claims.setdefault(str(options["name"]), []).append(attribute)
    return [
        f"tool name '{tool}' is claimed by {' and '.join(methods)}"
        for tool, methods in claims.items()
        if len(methods) > 1
    ]


def _schema_problems(parameters: Any) -> list[str]:
    """What is wrong with a tool's ``parameters`` as a JSON Schema object (empty: nothing)."""
    if not isinstance(parameters, dict) or parameters.get("type") != "object":
        return ["parameters must be a JSON Schema of type object"]
    properties = parameters.get("properties", {})
    if not isinstance(properties, dict):
        return ["parameters.properties must be an object"]
    problems = [
        f"parameter '{key}' has no schema object"
        for key, value in properties.items()
        if not isinstance(value, dict)
    ]
    required = parameters.get("required", [])
    if not isinstance(required, list) or not set(required) <= set(properties):
        problems.append("parameters.required names parameters that do not exist")
    problems.extend(_metaschema_problems(parameters))
    return problems


def _metaschema_problems(parameters: JsonDict) -> list[str]:
    """The schema checked against the JSON Schema metaschema, when jsonschema is installed
    (the ``envs`` extra); without it the structural checks above stand alone."""
    try:
        import jsonschema
    except ImportError:
        return []
    try:
        jsonschema.Draft202012Validator.check_schema(parameters)
    except jsonschema.SchemaError as error:
        return [f"not a valid JSON Schema: {error.message}"]
    return []
