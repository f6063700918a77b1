"""Keyword arguments for a plug-in's constructor, checked before it is called.

An environment takes ``--env-arg key=value`` (or ``args:`` in a stack file, or keyword
arguments in Python) and an agent its options; both reach a class or factory written by
someone else. A name it does not take, or a required one left out, is one ``ConfigError``
line naming the plug-in and what it does take, never a ``TypeError`` traceback from inside.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
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


def check_keywords(target: Callable[..., Any], given: Mapping[str, Any], what: str) -> None:
    """``ConfigError`` when ``target`` does not take every name in ``given`` by keyword, or
    needs one that is not there. ``what`` names the plug-in (``environment 'math'``)."""
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
        return target(**given)
    except PalaestraError:
        raise
    except Exception as error:  # the plug-in's own complaint, whatever its type
        detail = " ".join(str(error).split())
        raise ConfigError(f"{what} could not be built: {type(error).__name__}: {detail}") from None


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
    return {**defaults, **given}


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
