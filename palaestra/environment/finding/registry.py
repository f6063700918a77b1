"""Finding environments by name: built-ins, entry-point plug-ins, files and import paths.

``--env`` accepts a registered name (``weather``), a Python file (``./my_env.py`` or
``./my_env.py:MyEnv``), an import path (``my_package.envs:MyEnv``) or Harbor task folders
(``harbor:./tasks``: one folder, or a folder of them; ``palaestra.environment.kinds.harbor``) or an
Open Reward Standard server (``ors:http://host:port[/ENV][?split=NAME]``;
``palaestra.environment.kinds.ors``).
Third-party packages register environments under the ``palaestra.environments`` entry-point
group (``name = "package.module:Class"``); names are found through
``palaestra._util.plugins.Registry``, the one mechanism of every plug-in family.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from palaestra._util.arguments import keyword_names, typed_keywords
from palaestra._util.plugins import Plugin, Registry
from palaestra.environment.base import Environment
from palaestra.errors import ConfigError

ENTRY_POINT_GROUP = "palaestra.environments"
_BUILTIN_PACKAGE = "palaestra.envs"
HARBOR_PREFIX = "harbor:"
ORS_PREFIX = "ors:"


@dataclass(frozen=True, slots=True)
class EnvironmentEntry:
    """An environment found by name: its class, where it came from and its example tasks."""

    name: str
    description: str
    source: str
    """``built-in``, ``plug-in <module:Class>``, the file, or the import path."""
    environment: type[Environment]
    example_tasks: Path | None
    args: Mapping[str, object] = field(default_factory=dict)
    """Arguments the spec itself gives the environment (``harbor:PATH``: its ``path``); those
    given with ``--env-arg`` are added to them."""


def builtin_names() -> list[str]:
    """The built-in environments (the packages under ``palaestra/envs``), none imported.

    A package whose name starts with ``_`` holds pieces the built-ins share, not an
    environment.
    """
    package = importlib.import_module(_BUILTIN_PACKAGE)
    found = pkgutil.iter_modules(package.__path__)
    return sorted(m.name for m in found if m.ispkg and not m.name.startswith("_"))


def environments() -> Registry[type[Environment]]:
    """The environments by name: built-ins, then the ``palaestra.environments`` plug-ins.

    The same ``Registry`` as agents and model backends use; built fresh on each call (listing
    ``palaestra/envs`` costs a directory read), so nothing is cached between runs.
    """
    builtins = {name: f"{_BUILTIN_PACKAGE}.{name}.environment" for name in builtin_names()}
    return Registry("environment", ENTRY_POINT_GROUP, builtins, _environment_in)


def available_environments() -> tuple[list[EnvironmentEntry], list[str]]:
    """Every environment found (built-ins, then plug-ins) and one line per plug-in that broke.

    A broken plug-in is reported, not fatal: it must not hide the others.
    """
    found, problems = environments().available()
    return [_entry(plugin, None) for plugin in found], problems


def find_environment(spec: str, args: Mapping[str, object] | None = None) -> EnvironmentEntry:
    """Resolve ``--env``; a one-line ``ConfigError`` when nothing matches. ``args``: the
    environment's arguments (``--env-arg``), of which its example tasks take those they
    name (``tasks_beside``)."""
    if spec.startswith(HARBOR_PREFIX):
        return _harbor(spec.removeprefix(HARBOR_PREFIX))
    if spec.startswith(ORS_PREFIX):
        return _ors(spec.removeprefix(ORS_PREFIX))
    path_part, _, class_name = spec.partition(":")
    if path_part.endswith(".py"):
        return _from_file(Path(path_part), class_name or None, args)
    if class_name:
        return _from_import(path_part, class_name, args)
    registry = environments()
    if registry.has(spec):
        return _entry(registry.load(spec), args)
    raise ConfigError(
        f"unknown environment '{spec}'. Known: {', '.join(registry.names())}. Or pass a file "
        f"(./my_env.py), an import path (package.module:Class) or Harbor task folders "
        f"(harbor:./tasks)."
    )


def find_environment_class(spec: str) -> type[Environment]:
    """The class ``--env`` names, without its example tasks (``find_environment`` makes
    them: for a set made from a manifest, every task's row), for what needs the class only
    (``palaestra tasks ENV --summary``)."""
    registry = environments()
    if registry.has(spec):
        return registry.load(spec).value
    return find_environment(spec).environment


def _harbor(path: str) -> EnvironmentEntry:
    """Harbor task folders at ``path``: read and checked now (a one-line ``ConfigError`` naming
    the folder and field), their task rows written where a resumed run finds them again."""
    if not path:
        raise ConfigError("harbor: needs a path: --env harbor:./tasks (a task folder or a folder)")
    from palaestra.environment.kinds.harbor import HarborEnvironment
    from palaestra.environment.kinds.harbor.tasks import load_tasks, rows_directory, write_rows

    folder = Path(path).resolve()
    rows = write_rows(load_tasks(folder), rows_directory())
    return EnvironmentEntry(
        HarborEnvironment.name,
        HarborEnvironment.description,
        f"Harbor task folders {folder}",
        HarborEnvironment,
        rows,
        {"path": str(folder)},
    )


def _ors(url: str) -> EnvironmentEntry:
    """An ORS server's environment: its tasks of one split read now (a one-line
    ``ConfigError`` naming the URL when the server cannot be used) and written as rows."""
    from palaestra.environment.kinds.ors import OrsEnvironment, parse_address
    from palaestra.environment.kinds.ors.connection import Catalogue
    from palaestra.environment.kinds.ors.tasks import rows_directory, task_rows, write_rows

    address = parse_address(url)
    catalogue = Catalogue(address.base)
    environment = address.environment
    if not environment:
        listed = catalogue.environments()
        if not listed:
            raise ConfigError(f"ors: the server at {address.base} lists no environment")
        environment = listed[0]
    splits = catalogue.splits(environment)
    split = address.split or (splits[0] if splits else "")
    if split not in splits:
        raise ConfigError(
            f"ors: {address.base}/{environment} has no split {split!r} "
            f"(it has: {', '.join(splits) or 'none'})"
        )
    rows = write_rows(task_rows(catalogue, environment, split), rows_directory())
    return EnvironmentEntry(
        OrsEnvironment.name,
        OrsEnvironment.description,
        f"ORS server {address.base}/{environment} (split {split})",
        OrsEnvironment,
        rows,
        {"url": address.base, "environment": environment, "split": split},
    )


def _entry(
    plugin: Plugin[type[Environment]], args: Mapping[str, object] | None
) -> EnvironmentEntry:
    cls = plugin.value
    return EnvironmentEntry(
        plugin.name, cls.description, plugin.source, cls, tasks_beside(cls, args)
    )


def _from_file(
    path: Path, class_name: str | None, args: Mapping[str, object] | None
) -> EnvironmentEntry:
    if not path.is_file():
        raise ConfigError(f"environment file not found: {path}")
    module_name = f"palaestra_user_env_{abs(hash(path.resolve()))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise ConfigError(f"{path}: importing it raised {type(error).__name__}: {error}") from error
    cls = _environment_in(module, str(path), class_name)
    return EnvironmentEntry(cls.name, cls.description, str(path), cls, tasks_beside(cls, args))


def _from_import(
    module_name: str, class_name: str, args: Mapping[str, object] | None
) -> EnvironmentEntry:
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(f"cannot import environment module '{module_name}': {error}") from error
    cls = _environment_in(module, module_name, class_name)
    return EnvironmentEntry(
        cls.name, cls.description, f"{module_name}:{class_name}", cls, tasks_beside(cls, args)
    )


def _environment_in(target: object, where: str, class_name: str | None = None) -> type[Environment]:
    if isinstance(target, type) and issubclass(target, Environment):
        return target
    if not isinstance(target, ModuleType):
        raise ConfigError(f"{where} is not an Environment subclass")
    if class_name:
        cls = getattr(target, class_name, None)
        if not (isinstance(cls, type) and issubclass(cls, Environment)):
            raise ConfigError(f"{where} has no Environment subclass named '{class_name}'")
        return cls
    found = [
        v
        for v in vars(target).values()
        if isinstance(v, type)
        and issubclass(v, Environment)
        and v is not Environment
        and v.__module__ == target.__name__
    ]
    if len(found) != 1:
        names = ", ".join(c.__name__ for c in found) or "none"
        raise ConfigError(
            f"{where} defines {len(found)} Environment subclasses ({names}); "
            f"name one with {where}:ClassName"
        )
    return found[0]


def tasks_beside(cls: type[Environment], args: Mapping[str, object] | None = None) -> Path | None:
    """The ``tasks.jsonl`` beside the module that defines ``cls`` (its example tasks), if any;
    a class that makes its task file (``example_tasks_file``: one shipping Harbor folders)
    gives its own, given those of the environment's ``args`` it takes by name (a filter or
    another manifest chooses the tasks as it chooses the environment's)."""
    made = getattr(cls, "example_tasks_file", None)
    if callable(made):
        taken = keyword_names(made)
        given = {name: value for name, value in (args or {}).items() if name in taken}
        own = made(**typed_keywords(made, given, f"environment '{cls.name}'"))
        if own is not None:
            return Path(own)
    module = sys.modules.get(cls.__module__)
    file: str | None = getattr(module, "__file__", None)  # none in a notebook or the REPL
    if not file:
        return None
    tasks = Path(file).with_name("tasks.jsonl")
    return tasks if tasks.exists() else None


SPLITS_FOLDER = "splits"
"""The folder beside an environment's module that holds its named task splits."""


def task_split(cls: type[Environment], name: str) -> Path:
    """The task file of the environment's split ``name`` (e.g. ``smoke``): what the class's
    ``split_tasks_file(name)`` makes (a split written from a package's data), else
    ``splits/<name>.jsonl`` beside its module. A split it does not have is one ``ConfigError``
    line naming those it has."""
    made = getattr(cls, "split_tasks_file", None)
    if callable(made):
        own = made(name)
        if own is not None:
            return Path(own)
    folder = _splits_folder(cls)
    if folder is not None and (folder / f"{name}.jsonl").is_file():
        return folder / f"{name}.jsonl"
    names = sorted(p.stem for p in folder.glob("*.jsonl")) if folder is not None else []
    names += list(getattr(cls, "split_names", ()))
    has = f"its splits: {', '.join(sorted(set(names)))}" if names else "it has none"
    raise ConfigError(f"environment '{cls.name}' has no task split '{name}' ({has})")


def _splits_folder(cls: type[Environment]) -> Path | None:
    module = sys.modules.get(cls.__module__)
    file: str | None = getattr(module, "__file__", None)
    return Path(file).with_name(SPLITS_FOLDER) if file else None
