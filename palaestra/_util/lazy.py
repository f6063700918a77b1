"""Names a package exports but loads on first use, so importing the package stays light.

A package lists ``{name: module}`` and sets its ``__getattr__`` to ``lazy_exports(...)``; type
checkers see the names through an ``if TYPE_CHECKING:`` import beside it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``names[name]`` when ``name`` is first asked for."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
