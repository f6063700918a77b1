"""The catalogue: each environment's category, tasks, needs, peer twin and measured baseline.

Built-in environments are described in one file, ``palaestra/envs/catalogue.toml``, read
without importing them (``palaestra envs`` must stay quick and must not import a suite's
package just to list it). A third-party environment describes itself with class attributes of
``Environment`` (``category``, ``peer``, ``requires``, ``install``, ``baseline``,
``version``); listing a
plug-in loads its class, as ``palaestra envs`` always did. Whether what an environment needs
is installed is read from the installed distributions' metadata and ``PATH``, then, for a
built-in whose distributions are all there, by importing the suite modules it loads at run
time (its table's ``imports``) in fresh interpreters (``import_check``): this process imports
none of them.
"""

from __future__ import annotations

import importlib
import shutil
import tomllib
from dataclasses import dataclass, field, replace
from importlib import metadata, resources
from typing import Any

from palaestra.environment.base import Baseline, Environment
from palaestra.environment.finding.import_check import import_failures
from palaestra.environment.finding.registry import builtin_names, environments
from palaestra.errors import ConfigError

CATALOGUE_FILE = "catalogue.toml"
_BUILTIN_PACKAGE = "palaestra.envs"
NOT_MEASURED = "not measured"
CATEGORIES = (
    "demo",
    "math",
    "reasoning",
    "code",
    "instruction following",
    "structured output",
    "tool use",
    "conversational",
    "agentic safety",
    "search",
    "long context",
    "games",
    "text worlds",
    "machines/SWE",
)
"""The catalogue's order; an environment may name another category (it is listed last)."""


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    """One environment as the catalogue shows it."""

    name: str
    category: str
    summary: str
    source: str
    """``built-in`` or ``plug-in <module:Class>``."""
    tasks: int | None = None
    """Tasks available without generating any (``None``: not said)."""
    tasks_note: str = ""
    task_version: str = ""
    """Which version of the suite's tasks runs (a suite whose tasks changed between releases:
    scores of two versions are not comparable)."""
    generator: bool = False
    requires: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()
    """The suite modules it imports at run time (checked by importing them)."""
    install: str = ""
    peer: str = ""
    baseline: Baseline | None = None
    version: int = 1
    """Raised whenever a change scores the same answer differently (``Environment.version``)."""
    missing: tuple[str, ...] = field(default=())
    """What of ``requires`` and ``commands`` is not installed here, or what its ``imports``
    miss (a module, or the module that does not import and why)."""

    @property
    def installed(self) -> bool:
        return not self.missing

    def tasks_text(self) -> str:
        count = "?" if self.tasks is None else f"{self.tasks:,}"
        return f"{count} + generator" if self.generator else count

    def baseline_text(self) -> str:
        return NOT_MEASURED if self.baseline is None else self.baseline.text()

    def as_json(self) -> dict[str, Any]:
        baseline = self.baseline
        return {
            "name": self.name,
            "version": self.version,
            "category": self.category,
            "summary": self.summary,
            "source": self.source,
            "tasks": self.tasks,
            "tasks_note": self.tasks_note,
            "task_version": self.task_version,
            "generator": self.generator,
            "requires": list(self.requires),
            "commands": list(self.commands),
            "install": self.install,
            "installed": self.installed,
            "missing": list(self.missing),
            "peer": self.peer,
            "baseline": None
            if baseline is None
            else {
                "score": baseline.score,
                "interval": list(baseline.interval),
                "tasks": baseline.tasks,
                "command": baseline.command,
                "note": baseline.note,
            },
        }


def catalogue() -> tuple[list[CatalogueEntry], list[str]]:
    """Every environment found: built-ins from the catalogue file, then the plug-ins from
    their classes; and one line per problem (a plug-in that does not load, a built-in without
    a table in the catalogue file)."""
    tables = builtin_tables()
    entries: list[CatalogueEntry] = []
    problems: list[str] = []
    for name in builtin_names():
        table = tables.get(name)
        if table is None:
            problems.append(f"{CATALOGUE_FILE}: no table for the built-in environment '{name}'")
            entries.append(CatalogueEntry(name, "", "", "built-in"))
        else:
            entries.append(entry_from_table(name, table))
    entries = with_import_checks(entries)
    registry = environments()
    builtins = set(builtin_names())
    for name in registry.names():
        if name in builtins:
            continue
        try:
            plugin = registry.load(name)
        except ConfigError as error:
            problems.append(str(error))
            continue
        entries.append(entry_from_class(name, plugin.value, plugin.source))
    return sorted(entries, key=_order), problems


def with_import_checks(entries: list[CatalogueEntry]) -> list[CatalogueEntry]:
    """The entries, each whose distributions are installed but whose ``imports`` do not all
    import here marked missing what they miss."""
    checks = {e.name: e.imports for e in entries if e.imports and e.installed}
    failures = import_failures(checks) if checks else {}
    return [
        replace(entry, missing=(failures[entry.name],)) if entry.name in failures else entry
        for entry in entries
    ]


def _order(entry: CatalogueEntry) -> tuple[int, str, str]:
    known = entry.category in CATEGORIES
    rank = CATEGORIES.index(entry.category) if known else len(CATEGORIES)
    return rank, entry.category, entry.name


def builtin_tables() -> dict[str, dict[str, Any]]:
    """The catalogue file's tables by environment name; a one-line ``ConfigError`` if it does
    not parse."""
    package = importlib.import_module(_BUILTIN_PACKAGE)
    path = resources.files(package).joinpath(CATALOGUE_FILE)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: {error}") from None
    return {name: table for name, table in data.items() if isinstance(table, dict)}


def entry_from_table(name: str, table: dict[str, Any]) -> CatalogueEntry:
    """A built-in's entry from its table; a one-line ``ConfigError`` naming a wrong field."""
    where = f"{CATALOGUE_FILE} [{name}]"
    baseline = table.get("baseline")
    requires = _strings(table.get("requires", []), f"{where} requires")
    commands = _strings(table.get("commands", []), f"{where} commands")
    return CatalogueEntry(
        name=name,
        category=_text(table, "category", where, required=True),
        summary=_text(table, "summary", where, required=True),
        source="built-in",
        tasks=_count(table.get("tasks"), f"{where} tasks"),
        tasks_note=_text(table, "tasks_note", where),
        task_version=_text(table, "task_version", where),
        generator=bool(table.get("generator", False)),
        requires=requires,
        commands=commands,
        imports=_strings(table.get("imports", []), f"{where} imports"),
        install=_text(table, "install", where),
        peer=_text(table, "peer", where),
        baseline=None if baseline is None else _baseline(baseline, f"{where} baseline"),
        version=_version(table.get("version", 1), f"{where} version"),
        missing=missing(requires, commands),
    )


def entry_from_class(name: str, cls: type[Environment], source: str) -> CatalogueEntry:
    """A plug-in's entry from its class attributes."""
    requires = tuple(cls.requires)
    return CatalogueEntry(
        name=name,
        category=cls.category,
        summary=cls.description,
        source=source,
        requires=requires,
        install=cls.install,
        peer=cls.peer,
        baseline=cls.baseline if isinstance(cls.baseline, Baseline) else None,
        version=_version(cls.version, f"{source}: version"),
        missing=missing(requires, ()),
    )


def environment_version(cls: type[Environment]) -> int:
    """The version of ``cls``: a built-in's from its catalogue table (default 1), any other
    environment's from its class attribute; a one-line ``ConfigError`` if it is no version."""
    if cls.__module__.startswith(f"{_BUILTIN_PACKAGE}."):
        package = cls.__module__.split(".")[2]
        table = builtin_tables().get(package)
        if table is not None:
            return _version(table.get("version", 1), f"{CATALOGUE_FILE} [{package}] version")
    return _version(cls.version, f"{cls.__module__}:{cls.__qualname__}.version")


def missing(requires: tuple[str, ...], commands: tuple[str, ...]) -> tuple[str, ...]:
    """The distributions and executables of these that are not installed here."""
    absent = [name for name in requires if not _distribution_installed(name)]
    absent += [command for command in commands if shutil.which(command) is None]
    return tuple(absent)


def _distribution_installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def _text(table: dict[str, Any], key: str, where: str, *, required: bool = False) -> str:
    value = table.get(key, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise ConfigError(f"{where} {key}: expected a non-empty string, got {value!r}")
    return value


def _strings(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    return tuple(value)


def _version(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: expected a version (1, 2, ...), got {value!r}")
    return value


def _count(value: object, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{where}: expected a number of tasks, got {value!r}")
    return value


def _baseline(value: object, where: str) -> Baseline:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table")
    score, interval = value.get("score"), value.get("interval")
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise ConfigError(f"{where} score: expected a number, got {score!r}")
    if (
        not isinstance(interval, list)
        or len(interval) != 2
        or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in interval)
        or not interval[0] <= score <= interval[1]
    ):
        raise ConfigError(f"{where} interval: expected [low, high] around the score")
    tasks = _count(value.get("tasks"), f"{where} tasks")
    command = value.get("command")
    if tasks is None or not isinstance(command, str) or not command.strip():
        raise ConfigError(f"{where}: needs the number of tasks and the command that measured it")
    note = value.get("note", "")
    return Baseline(
        float(score),
        (float(interval[0]), float(interval[1])),
        tasks,
        command,
        note if isinstance(note, str) else str(note),
    )
