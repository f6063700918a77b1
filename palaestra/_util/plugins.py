"""One registry mechanism for every plug-in family: environments, agents, model backends.

Each family has built-ins (named here by import path, so nothing is imported until asked for)
and an entry-point group through which an installed package adds its own::

    [project.entry-points."palaestra.agents"]
    react = "my_package.agents:ReactAgent"

A plug-in that fails to import is reported by ``available()``, never fatal to the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Generic, TypeVar

from palaestra.errors import ConfigError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Plugin(Generic[T]):
    """One loaded plug-in: its name, where it came from, and the object itself."""

    name: str
    source: str
    """``built-in`` or ``plug-in <module:attr>``."""
    value: T


class Registry(Generic[T]):
    """The plug-ins of one family, found by name.

    ``check`` turns a loaded object into the family's type or raises ``ConfigError`` naming
    what is wrong with it (e.g. "is not an Agent").
    """

    def __init__(
        self,
        family: str,
        group: str,
        builtins: Mapping[str, str],
        check: Callable[[object, str], T],
    ) -> None:
        self.family = family
        self.group = group
        self._builtins = dict(builtins)
        self._check = check

    def names(self) -> list[str]:
        """Built-in names first, then the installed plug-ins' (not loaded)."""
        plugged = [p.name for p in metadata.entry_points(group=self.group)]
        return [*self._builtins, *dict.fromkeys(n for n in plugged if n not in self._builtins)]

    def has(self, name: str) -> bool:
        """Whether ``name`` is a built-in or an installed plug-in (nothing is imported)."""
        return name in self._builtins or bool(self._points(name))

    def load(self, name: str) -> Plugin[T]:
        """The plug-in called ``name``; a one-line ``ConfigError`` when there is none.

        A built-in wins over a plug-in of the same name; two installed plug-ins that claim one
        name for different objects are an error naming both (neither is picked silently).
        """
        if name in self._builtins:
            return Plugin(name, "built-in", self._resolve(self._builtins[name], name))
        points = self._points(name)
        if len(points) > 1:
            claims = " and ".join(f"{point.value} ({_distribution(point)})" for point in points)
            raise ConfigError(f"{self.family} '{name}' is claimed by {claims}; uninstall one")
        for point in points:
            return Plugin(name, f"plug-in {point.value}", self._resolve(point.value, name))
        raise ConfigError(f"unknown {self.family} '{name}'; known: {', '.join(self.names())}")

    def available(self) -> tuple[list[Plugin[T]], list[str]]:
        """Every plug-in that loads, and one line for each that does not (or is shadowed)."""
        found: list[Plugin[T]] = []
        problems: list[str] = []
        for name in self.names():
            try:
                found.append(self.load(name))
            except ConfigError as error:
                problems.append(str(error))
        for name in self._builtins:
            for point in self._points(name):
                problems.append(
                    f"{self.family} '{name}' of plug-in {point.value} ({_distribution(point)}) "
                    "is ignored: a built-in has that name"
                )
        return found, problems

    def _points(self, name: str) -> list[metadata.EntryPoint]:
        """The entry points called ``name``, one per distinct target."""
        found = metadata.entry_points(group=self.group, name=name)
        return list({point.value: point for point in found}.values())

    def _resolve(self, target: str, name: str) -> T:
        module_name, _, attribute = target.partition(":")
        where = f"{self.family} '{name}' ({target})"
        try:
            value: object = importlib.import_module(module_name)
            for part in filter(None, attribute.split(".")):
                value = getattr(value, part)
        except Exception as error:  # a broken plug-in is one line, whatever it raised
            detail = " ".join(str(error).split())
            raise ConfigError(f"{where} failed to load: {type(error).__name__}: {detail}") from None
        return self._check(value, where)


def _distribution(point: metadata.EntryPoint) -> str:
    """The installed distribution an entry point comes from, for messages."""
    dist = point.dist
    return f"{dist.name} {dist.version}" if dist is not None else "unknown distribution"


def callable_plugin(what: str) -> Callable[[object, str], Any]:
    """The ``check`` of a family whose plug-ins are callables: ``what`` says what they are.

    It answers ``Any``: the family's registry names the callable's type.
    """

    def check(value: object, where: str) -> Any:
        if not callable(value):
            raise ConfigError(f"{where} is a {type(value).__name__}, not {what}")
        return value

    return check
