"""``init_environment``: write a ready-to-edit environment package from the templates.

The templates (``palaestra/authoring/template``) are the package's files with ``{{dist}}``
(the distribution name), ``{{module}}`` (the Python package, also the environment's registry
name) and ``{{cls}}`` (the class) to fill in; ``package/`` becomes the Python package.
"""

from __future__ import annotations

import keyword
import os
import re
import sys
import unicodedata
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from palaestra.environment.finding.registry import builtin_names
from palaestra.errors import ConfigError

TEMPLATE_SUFFIX = ".tmpl"


@dataclass(frozen=True, slots=True)
class Scaffold:
    """What ``init_environment`` wrote."""

    directory: Path
    dist: str
    """The distribution name (``pip install`` / pyproject ``name``)."""
    module: str
    """The Python package, and the environment's name in ``palaestra envs``."""
    class_name: str
    files: list[Path] = field(default_factory=list)

    @property
    def environment_file(self) -> Path:
        return self.directory / self.module / "environment.py"


_NAME = re.compile(r"[a-z]([a-z0-9_-]*[a-z0-9])?")
"""An environment's name, lowercased: ASCII, so that it is both a distribution name (PEP 508)
and, with ``-`` as ``_``, a Python package name any tool can install and import."""


def names(name: str) -> tuple[str, str, str]:
    """(distribution, module, class) for ``name``; a one-line ``ConfigError`` if unusable."""
    dist = name.strip().lower()
    module = dist.replace("-", "_")
    if not _NAME.fullmatch(dist) or keyword.iskeyword(module):
        raise ConfigError(
            f"'{name}' cannot name an environment: a name is ASCII letters, digits, '-' and "
            "'_', starting with a letter and ending with a letter or digit, and not a Python "
            "keyword (it is the distribution name and, with '-' as '_', the Python package)"
            f"{_suggestion(name)}"
        )
    if module in builtin_names():
        raise ConfigError(f"'{module}' is a built-in environment's name: choose another")
    if module in sys.stdlib_module_names or module in ("palaestra", "tests"):
        raise ConfigError(f"'{module}' would shadow the Python module of that name: choose another")
    class_name = "".join(part[:1].upper() + part[1:] for part in module.split("_"))
    return dist, module, class_name or "Environment_"


def _suggestion(name: str) -> str:
    """``; try 'cafe'``: the nearest usable name to ``name``, or nothing when none is near."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    fixed = re.sub(r"[^a-z0-9_]+", "-", ascii_name.lower()).strip("-_")
    if fixed[:1].isdigit():
        fixed = f"env-{fixed}"
    if keyword.iskeyword(fixed.replace("-", "_")):
        fixed = f"{fixed}-env"
    return f"; try '{fixed}'" if _NAME.fullmatch(fixed) else ""


def init_environment(name: str, directory: str | os.PathLike[str] | None = None) -> Scaffold:
    """Write the package of a new environment called ``name`` into ``directory`` (default:
    ``./<name>``) and return what was written.

    ``name`` lowercased, with ``-`` as ``_``, is the Python package and the environment's
    registry name. A ``directory`` that exists and is not empty is refused (one line): nothing
    is ever overwritten.
    """
    dist, module, class_name = names(name)
    target = Path(directory) if directory is not None else Path(dist)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ConfigError(
            f"{target} exists and is not empty: init writes only into a new or empty directory"
        )
    scaffold = Scaffold(target, dist, module, class_name)
    values = {"dist": dist, "module": module, "cls": class_name}
    template = resources.files("palaestra.authoring").joinpath("template")
    for source, relative in _templates(template, Path()):
        path = target / Path(*(module if part == "package" else part for part in relative.parts))
        path.parent.mkdir(parents=True, exist_ok=True)
        text = source.read_text(encoding="utf-8")
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
        path.write_text(text, encoding="utf-8")
        scaffold.files.append(path)
    return scaffold


def _templates(folder: Traversable, relative: Path) -> list[tuple[Traversable, Path]]:
    """Every template file under ``folder``, with its output path (suffix dropped), sorted."""
    found: list[tuple[Traversable, Path]] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            found += _templates(entry, relative / entry.name)
        elif entry.name.endswith(TEMPLATE_SUFFIX):
            found.append((entry, relative / entry.name.removesuffix(TEMPLATE_SUFFIX)))
    return found
