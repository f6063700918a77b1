"""The error taxonomy: every exception palaestra defines has a place in it, and its own name."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections import defaultdict

import palaestra
from palaestra.errors import (
    ConfigError,
    EnvironmentFailure,
    InvalidTask,
    PalaestraError,
    RolloutFailure,
    SessionExpired,
    SessionLost,
)
from palaestra.types import FailureKind

OUTSIDE = {
    "palaestra.transport": (
        "below the taxonomy: clients map them (palaestra.environment.running.boundary)"
    ),
    "palaestra.collection.runtime.Terminated": "SIGTERM, as KeyboardInterrupt is Ctrl-C",
    "palaestra.sandbox.worker_process.Lost": "inside a pool worker's parent, never raised out",
    "palaestra.sandbox.repl.CellTimeout": "inside the sandboxed interpreter, never the caller",
    "palaestra.envs": "an environment's own control flow, caught inside it",
}


def _palaestra_exceptions() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module in pkgutil.walk_packages(palaestra.__path__, "palaestra."):
        if module.name.endswith("__main__"):
            continue
        try:
            loaded = importlib.import_module(module.name)
        except (ImportError, ConfigError):  # an optional extra that is not installed
            continue
        for _, value in inspect.getmembers(loaded, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__.startswith("palaestra."):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return list(found.values())


def test_every_exception_palaestra_defines_is_a_palaestra_error_with_a_name_of_its_own() -> None:
    classes = _palaestra_exceptions()
    outside = [
        f"{c.__module__}.{c.__qualname__}"
        for c in classes
        if not issubclass(c, PalaestraError)
        and not any(f"{c.__module__}.{c.__qualname__}".startswith(o) for o in OUTSIDE)
    ]
    assert outside == []  # before: RequestError, BodyTooLarge, Overran
    by_name: dict[str, list[str]] = defaultdict(list)
    for c in classes:
        by_name[c.__qualname__].append(c.__module__)
    assert {name: m for name, m in by_name.items() if len(m) > 1} == {}  # before: 3 TaskErrors


def test_an_expired_session_is_an_environment_failure_of_kind_session_lost() -> None:
    assert issubclass(SessionExpired, SessionLost) and issubclass(SessionLost, EnvironmentFailure)
    assert issubclass(SessionExpired, LookupError)
    assert SessionExpired("gone").kind is FailureKind.SESSION_LOST


def test_a_task_an_environment_cannot_use_is_an_invalid_input_failure() -> None:
    assert issubclass(InvalidTask, RolloutFailure)
    assert InvalidTask("no options").kind is FailureKind.INVALID_INPUT


def test_the_errors_module_draws_every_class_it_defines_in_its_tree() -> None:
    import palaestra.errors as errors

    tree = errors.__doc__ or ""
    defined = [
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == errors.__name__
    ]
    assert [name for name in defined if f" {name} " not in tree.replace("\n", " \n ")] == []


def _drawn_parents(tree: str) -> dict[str, str]:
    """Each class the docstring's tree draws, with the class drawn above it (its parent)."""
    parents: dict[str, str] = {}
    path: list[str] = []
    for line in tree.splitlines():
        stripped = line.strip()
        if stripped.startswith("PalaestraError "):
            path = ["PalaestraError"]
            continue
        marker = max(line.find("├── "), line.find("└── "))
        if marker < 0 or not path:
            continue
        depth = (marker - line.find(stripped[0])) // 4 + 1
        name = line[marker + 4 :].split()[0]
        path = [*path[:depth], name]
        parents[name] = path[-2]
    return parents


def test_every_palaestra_error_is_drawn_in_the_tree_under_one_of_its_bases() -> None:
    import palaestra.errors as errors

    parents = _drawn_parents(errors.__doc__ or "")
    assert parents["SessionExpired"] == "SessionLost"  # the parser reads the drawing
    assert parents["ContextLengthExceeded"] == "ModelHttpError"
    public = [
        c
        for c in _palaestra_exceptions()
        if issubclass(c, PalaestraError)
        and c is not PalaestraError
        and not c.__qualname__.startswith("_")
        and not c.__module__.startswith("palaestra.envs.")  # an environment's own
    ]
    misdrawn = {
        f"{c.__module__}.{c.__qualname__}": parents.get(c.__qualname__)
        for c in public
        if parents.get(c.__qualname__) not in {base.__name__ for base in c.__bases__}
    }
    assert misdrawn == {}
