"""Keyword arguments for a plug-in's constructor, checked before it is called.

An environment takes ``--env-arg key=value`` (or ``args:`` in a stack file, or keyword
arguments in Python) and an agent its options; both reach a class or factory written by
someone else. A name it does not take, or a required one left out, is one ``ConfigError``
line naming the plug-in and what it does take, never a ``TypeError`` traceback from inside.

Text typed on a command line becomes what the parameter's annotation asks for, here and
nowhere else: a ``list[str]``, ``Sequence[str]`` or ``tuple[str, ...]`` takes ``a,b,c``, a
``bool`` true/false/1/0, a number its digits, a mapping JSON, and a ``str`` stays the text.
Text for a parameter that only takes objects (a ``Sandbox``, a ``Model``) is one line, before
the constructor runs. Values given as objects (from Python) are passed as they are.
"""

from __future__ import annotations

import builtins
import collections.abc
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import orjson

from palaestra.errors import ConfigError, PalaestraError

T = TypeVar("T")
_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _parameters(target: Callable[..., Any]) -> list[inspect.Parameter] | None:
    """The parameters ``target`` takes by keyword; None when it takes any (``**kwargs``) or
    its signature cannot be read (a builtin)."""
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return [p for p in parameters if p.kind in _NAMED]


def keyword_names(target: Callable[..., Any]) -> frozenset[str]:
    """The names ``target`` takes by keyword (none when its signature cannot be read)."""
    return frozenset(p.name for p in _parameters(target) or [])


def check_keywords(target: Callable[..., Any], given: Mapping[str, Any], what: str) -> None:
    """``ConfigError`` when ``target`` does not take every name in ``given`` by keyword, or
    needs one that is not there, or a text value cannot become its parameter's type. ``what``
    names the plug-in (``environment 'math'``)."""
    typed_keywords(target, given, what)
    parameters = _parameters(target)
    if parameters is None:
        return
    names = [p.name for p in parameters]
    takes = ", ".join(names) or "none"
    for name in given:
        if name not in names:
            raise ConfigError(f"{what} takes no argument '{name}' (it takes: {takes})")
    for parameter in parameters:
        if parameter.default is inspect.Parameter.empty and parameter.name not in given:
            raise ConfigError(f"{what} needs the argument '{parameter.name}' (it takes: {takes})")


def call_with(target: Callable[..., T], given: Mapping[str, Any], what: str) -> T:
    """``target(**given)``, checked first; whatever it raises (but palaestra's own errors)
    becomes one ``ConfigError`` line: a constructor refusing a value is a configuration error."""
    check_keywords(target, given, what)
    try:
        return target(**typed_keywords(target, given, what))
    except PalaestraError:
        raise
    except Exception as error:  # the plug-in's own complaint, whatever its type
        detail = " ".join(str(error).split())
        raise ConfigError(f"{what} could not be built: {type(error).__name__}: {detail}") from None


def typed_keywords(
    target: Callable[..., Any], given: Mapping[str, Any], what: str
) -> dict[str, Any]:
    """``given`` with each text value turned into what its parameter's annotation asks for
    (see the module's docstring); ``ConfigError`` naming the argument, the value and what it
    takes when the text cannot be that. Values that are not text pass as they are, but for a
    number or boolean given to a parameter that takes text only (it becomes its text)."""
    hints = _hints(target)
    typed: dict[str, Any] = {}
    for name, value in given.items():
        hint = hints.get(name, _UNKNOWN)
        try:
            typed[name] = _typed(value, hint)
        except _Refused as refused:
            where = f"{what}: " if what else ""
            raise ConfigError(
                f"{where}argument '{name}' takes {refused.wants}, not {value!r}"
            ) from None
    return typed


class _Unresolved:
    """An annotation naming a type this module cannot see (imported for type checkers only)."""


_UNKNOWN: Any = _Unresolved
_ABSTRACT = {
    name: getattr(collections.abc, name)
    for name in ("Sequence", "Mapping", "Iterable", "Collection", "Set", "MutableMapping")
}


class _Names(dict[str, Any]):
    """The names an annotation is read with: the function's module's, the builtins, the
    ``collections.abc`` and ``typing`` names, else ``_Unresolved``."""

    def __init__(self, module: Mapping[str, Any]) -> None:
        super().__init__()
        self.module = module

    def __missing__(self, key: str) -> Any:
        if key in self.module:
            return self.module[key]
        if hasattr(builtins, key):
            return getattr(builtins, key)
        if key in _ABSTRACT:
            return _ABSTRACT[key]
        if key == "typing":
            return typing
        return _UNKNOWN


def _hints(target: Callable[..., Any]) -> dict[str, Any]:
    """Each keyword parameter's annotation, evaluated (``_UNKNOWN`` where it cannot be)."""
    function: object = target
    if isinstance(target, type):  # its __init__: the first class in its MRO that defines one
        function = next(vars(c)["__init__"] for c in target.__mro__ if "__init__" in vars(c))
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return {}
    names = _Names(getattr(function, "__globals__", {}))
    hints: dict[str, Any] = {}
    for parameter in parameters:
        annotation = parameter.annotation
        if annotation is inspect.Parameter.empty:
            continue
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, {"__builtins__": {}}, names)
            except Exception:  # an annotation this module cannot read: the value passes
                annotation = _UNKNOWN
        hints[parameter.name] = annotation
    return hints


class _Refused(PalaestraError):
    """A text an annotation cannot take; ``wants`` says what it takes (made a ``ConfigError``
    naming the argument by ``check_keywords``)."""

    def __init__(self, wants: str) -> None:
        super().__init__(wants)
        self.wants = wants


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
_SEQUENCES = {list: list, tuple: tuple, set: set, frozenset: frozenset}
_SEQUENCES.update({getattr(collections.abc, n): list for n in ("Sequence", "Collection")})
_SEQUENCES[collections.abc.Iterable] = list
_SEQUENCES[collections.abc.Set] = frozenset
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


def _members(hint: Any) -> list[Any]:
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return [m for m in typing.get_args(hint) if m is not type(None)]
    return [hint]


def _typed(value: Any, hint: Any) -> Any:
    """``value`` as ``hint`` asks for it (text converted; other values nearly as given)."""
    if hint is Any or hint is _UNKNOWN or value is None:
        return value
    members = _members(hint)
    if any(m is Any or m is _UNKNOWN or m is object for m in members):
        return value
    if not isinstance(value, str):
        text_only = all(m is str for m in members)
        if text_only and isinstance(value, bool):
            return "true" if value else "false"
        if text_only and isinstance(value, int | float):
            return str(value)
        if members == [bool] and value in (0, 1) and not isinstance(value, bool):
            return bool(value)
        return value
    if str in members or Path in members:
        return value if str in members else Path(value)
    wants: list[str] = []
    for member in members:
        try:
            return _from_text(value, member)
        except _Refused as refused:
            wants.append(refused.wants)
    raise _Refused(" or ".join(wants) or "no text")


def _from_text(text: str, hint: Any) -> Any:
    """``text`` as one type (not a union), or ``_Refused`` saying what that type takes."""
    origin = typing.get_origin(hint) or hint
    args = typing.get_args(hint)
    if hint is bool:
        word = text.strip().lower()
        if word in _TRUE | _FALSE:
            return word in _TRUE
        raise _Refused("true or false")
    if hint is int or hint is float:
        try:
            return hint(text.strip())
        except ValueError:
            raise _Refused("an integer" if hint is int else "a number") from None
    if origin is typing.Literal:
        for choice in args:
            if str(choice) == text.strip():
                return choice
        raise _Refused("one of " + ", ".join(str(choice) for choice in args))
    if origin in _SEQUENCES:
        item = args[0] if args and args[0] is not Ellipsis else Any
        parts = [part.strip() for part in text.split(",")]
        return _SEQUENCES[origin](_typed(part, item) for part in parts if part)
    if origin in _MAPPINGS:
        try:
            parsed = orjson.loads(text)
        except orjson.JSONDecodeError:
            parsed = None
        if not isinstance(parsed, dict):
            raise _Refused('a JSON object (e.g. {"key": 1})')
        return parsed
    name = getattr(hint, "__qualname__", None) or str(hint)
    raise _Refused(f"a {name} object given from Python")


def effective_keywords(target: Callable[..., Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` over the defaults ``target`` declares, keeping only values JSON can hold.

    A run's identity records these, so leaving an option at its default and passing the
    default explicitly are the same run.
    """
    defaults = {
        p.name: p.default
        for p in _parameters(target) or []
        if p.default is not inspect.Parameter.empty and is_json(p.default)
    }
    try:
        typed = typed_keywords(target, given, "")
    except ConfigError:  # the constructor refuses it: recorded as given
        typed = dict(given)
    return {**defaults, **typed}


def is_json(value: object) -> bool:
    """Whether ``value`` is made of JSON types only (what a saved spec can hold)."""
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return True


def jsonable(value: Any) -> Any:
    """``value`` if JSON can hold it, else ``<TypeName>`` (an object passed from Python, such
    as a judge model, is recorded by its type: it has no faithful JSON form)."""
    if isinstance(value, Mapping):
        return {str(key): jsonable(inner) for key, inner in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(inner) for inner in value]
    return value if is_json(value) else f"<{type(value).__qualname__}>"
