"""``@tool``: turn a typed, documented method into a function tool the model can call.

The JSON schema comes from the type hints (through pydantic) and the descriptions from the
docstring (its first paragraph for the tool, its ``Args:`` section for the parameters).
Arguments are validated against the same model before the tool runs.
"""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast, get_type_hints, overload

import pydantic
from pydantic_core import PydanticCustomError

from palaestra.types import JsonDict

F = TypeVar("F", bound=Callable[..., Any])

_TOOL_MARK = "__palaestra_tool__"
SESSION_PARAMETER = "session"
"""A tool parameter with this name receives the rollout's ``Session`` and is not in the schema."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """Everything palaestra knows about one tool."""

    name: str
    description: str
    function: Callable[..., Any]
    arguments: type[pydantic.BaseModel]
    wants_session: bool
    blocking: bool
    """Kept for compatibility: every synchronous tool runs in a worker thread."""
    ends_episode: bool = False
    """A call of it that runs ends the episode: the agent asks the model no more
    (``tool(ends_episode=True)``)."""

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.function)

    def schema(self) -> JsonDict:
        """The function tool as Responses ``tools`` entry (``strict`` always written)."""
        parameters = self.arguments.model_json_schema()
        parameters.pop("title", None)
        for prop in parameters.get("properties", {}).values():
            prop.pop("title", None)
        parameters["additionalProperties"] = False
        parameters.setdefault("required", [])
        strict = set(parameters["required"]) == set(parameters.get("properties", {}))
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": parameters,
            "strict": strict,
        }


@overload
def tool(function: F, /) -> F: ...
@overload
def tool(
    *, name: str | None = None, blocking: bool = False, ends_episode: bool = False
) -> Callable[[F], F]: ...


def tool(
    function: F | None = None,
    /,
    *,
    name: str | None = None,
    blocking: bool = False,
    ends_episode: bool = False,
) -> F | Callable[[F], F]:
    """Declare an environment method as a tool.

    A plain (synchronous) tool runs in a worker thread and an ``async def`` tool on the event
    loop, both within the environment's ``tool_timeout``: a slow tool stalls only its own
    rollout. ``blocking`` is accepted for compatibility and changes nothing (every
    synchronous tool runs in a thread now). ``ends_episode``: a call of it that runs (not one
    refused: wrong arguments, a ``ToolError``) ends the episode, and the tool-calling agent
    asks the model no more (the machine tools' ``submit``); the verdict follows. With a
    simulated user it ends the policy's turn: the user speaks next (a multi-step task's next
    step), as after an answer without a tool.

    A tool is served at ``POST /<name>``: a name the environment server answers itself
    (``seed_session``, ``verify``, ``close_session``, ``tools``, ``reset``, ``step``, ...; see
    ``palaestra.wire.protocol.RESERVED_ROUTES``) is refused, in one line, when the class is defined.
    """

    def mark(fn: F) -> F:
        options = {"name": name or fn.__name__, "blocking": blocking, "ends_episode": ends_episode}
        setattr(fn, _TOOL_MARK, options)
        return fn

    return mark(function) if function is not None else mark


def tool_options(attribute: object) -> dict[str, Any] | None:
    """The options ``@tool`` recorded on a function, or None if it is not a tool."""
    return cast(dict[str, Any] | None, getattr(attribute, _TOOL_MARK, None))


def build_tool_spec(
    function: Callable[..., Any], *, name: str, blocking: bool, ends_episode: bool = False
) -> ToolSpec:
    summary, arg_docs = parse_docstring(inspect.getdoc(function) or "")
    hints = get_type_hints(function)
    fields: dict[str, Any] = {}
    wants_session = False
    for index, parameter in enumerate(inspect.signature(function).parameters.values()):
        if index == 0 and parameter.name == "self":
            continue
        if parameter.name == SESSION_PARAMETER:
            wants_session = True
            continue
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"tool {name}: *args/**kwargs cannot be described to a model")
        if parameter.name not in hints:
            raise TypeError(f"tool {name}: parameter '{parameter.name}' needs a type hint")
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (
            hints[parameter.name],
            pydantic.Field(default, description=arg_docs.get(parameter.name)),
        )
    model = pydantic.create_model(
        f"{name}_arguments", __config__=pydantic.ConfigDict(extra="forbid"), **fields
    )
    return ToolSpec(name, summary or name, function, model, wants_session, blocking, ends_episode)


_ARG_LINE = re.compile(r"^(\s*)\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_ARGS_HEADERS = ("args:", "arguments:", "parameters:")
_OTHER_HEADERS = ("returns:", "raises:", "yields:", "examples:", "example:", "notes:")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its summary paragraph and per-argument text."""
    summary: list[str] = []
    args: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    arg_indent: int | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped.lower() in _ARGS_HEADERS:
            section, current, arg_indent = "args", None, None
        elif stripped.lower() in _OTHER_HEADERS:
            section = "other"
        elif section == "summary":
            if stripped:
                summary.append(stripped)
            elif summary:
                section = "body"
        elif section == "args" and stripped:
            match = _ARG_LINE.match(line)
            indent = len(line) - len(line.lstrip())
            if match and (arg_indent is None or indent <= arg_indent):
                arg_indent = indent
                current = match.group(2)
                args[current] = match.group(3).strip()
            elif current is not None:
                args[current] = f"{args[current]} {stripped}"
    return " ".join(summary), args


def json_schema_arguments(name: str, schema: JsonDict) -> type[pydantic.BaseModel]:
    """A model that checks a tool's arguments against ``schema`` (JSON Schema, as a server
    gives it: MCP's, an ORS server's) and holds them whole as ``arguments``, so the runner
    validates them as it does a ``@tool``'s and a failure reads the same (``invalid arguments
    for tool ...``)."""
    from jsonschema import validators

    validator_class = validators.validator_for(schema)
    validator = validator_class(schema)

    class Arguments(pydantic.BaseModel):
        arguments: JsonDict

        @pydantic.model_validator(mode="before")
        @classmethod
        def _check(cls, value: Any) -> Any:
            if not isinstance(value, dict):
                raise PydanticCustomError("arguments", "the arguments must be a JSON object")
            problems = sorted(validator.iter_errors(value), key=lambda error: list(error.path))
            if problems:
                message = "; ".join(_schema_problem(problem) for problem in problems[:3])
                raise PydanticCustomError("arguments", message)
            return {"arguments": value}

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> JsonDict:
            return copy.deepcopy(schema)

    Arguments.__name__ = Arguments.__qualname__ = f"{name}_arguments"
    return Arguments


def _schema_problem(error: Any) -> str:
    where = ".".join(str(part) for part in error.path)
    return f"{where}: {error.message}" if where else str(error.message)
