"""``swe_local``: fix a real bug in a real package, judged by the package's own tests.

The set is the manifest the package ships (``manifest/*.jsonl``, one line per validated task);
each task's Harbor folder is made from its line when the environment starts and cached by the
line's digest (``folders.materialize``). Each rollout gets its task's machine (the Debian
release of the repository with one validated bug, a git repository at ``/testbed``), the issue
text and the machine tools (``bash``, ``str_replace_editor``, ``submit``); the repository's own
tests score what the agent leaves (FAIL_TO_PASS and PASS_TO_PASS, all must pass).
``--env-arg sandbox=docker`` runs the machines in Docker instead of the daemonless ``rootfs``
provider; ``--env-arg manifest=DIR`` reads another manifest directory; ``--env-arg
filter=...`` keeps the tasks a filter selects (``selection.parse_filter``). See README.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from palaestra import ConfigError, HarborEnvironment
from palaestra.environment.kinds.harbor.environment import DEFAULT_SANDBOX
from palaestra.environment.kinds.harbor.tasks import rows_directory, write_rows
from palaestra.envs.swe_local import manifest
from palaestra.envs.swe_local.folders import materialize_set, set_digests, task
from palaestra.envs.swe_local.selection import parse_filter, selected, summary
from palaestra.sandbox.machines import images
from palaestra.wire.harbor import HarborTask

SMOKE = (
    "mpmath__libmpf__mpfge__139b1330",
    "networkx__isolate__isisolate__4dfb7925",
    "networkx__isolate__numberofisolates__e680d770",
)
"""The ``smoke`` split: easy Python tasks whose fix is one changed line (a constant or a
comparison) named by the issue text, judged by three fast tests of the package."""

RUNNABLE_LANGUAGES = frozenset({"python", "go", "rust"})
"""The languages whose machines the providers can build (Python's from the offline base's own
archive, the others once their pack is built: ``PACKS``)."""
PACKS = {"go": "go", "rust": "rust"}
"""The offline base's pack (``images.packs``) each language's machines install from: Debian's
toolchain and the repositories' packages, built only when a user asks for them
(``python -m palaestra.sandbox.machines.images --pack NAME``)."""


def buildable(language: str) -> bool:
    """Whether ``language``'s machines can be built here: it is runnable and its pack, if it
    needs one, is built."""
    pack = PACKS.get(language)
    return language in RUNNABLE_LANGUAGES and (pack is None or pack in images.built_packs())


def task_folders(directory: Path = manifest.SHIPPED, filter: str | None = None) -> Path:
    """The directory of the task folders of the manifest at ``directory`` (made on demand,
    cached), only those ``filter`` selects when given, and only in languages whose machines
    can be built here (``chosen_lines``)."""
    return materialize_set(chosen_lines(directory, filter))


def chosen_lines(directory: Path, filter: str | None = None) -> list[manifest.Line]:
    """The lines of the manifest at ``directory``, only those ``filter`` selects when given,
    and only in languages whose machines can be built here (``buildable``; a selection of
    none of those is refused in one line that says what to build)."""
    lines = read_lines(directory)
    if filter:
        lines = selected(lines, parse_filter(filter))
    languages = sorted({str(line["language"]) for line in lines})
    ready = {language for language in languages if buildable(language)}
    if lines and not ready:
        missing = sorted(PACKS[language] for language in languages if language in PACKS)
        how = (
            f"build their toolchains once with `python -m palaestra.sandbox.machines.images "
            f"{' '.join(f'--pack {pack}' for pack in missing)}` (Debian's mirror)"
            if missing
            else f"runnable: {', '.join(sorted(RUNNABLE_LANGUAGES))}"
        )
        raise ConfigError(
            f"swe_local: the selected tasks are in {', '.join(languages)}, whose machines "
            f"cannot be built here yet: {how}"
        )
    return [line for line in lines if line["language"] in ready]


_read: dict[tuple[str, tuple[tuple[str, int, int], ...]], list[manifest.Line]] = {}


def read_lines(directory: Path) -> list[manifest.Line]:
    """The manifest at ``directory`` (``manifest.read_directory``), read once per process
    while its files are unchanged (a collect finds the environment's rows, then builds it:
    both from these lines). The lines are shared: read them, do not change them."""
    stats = [(f.name, f.stat()) for f in sorted(directory.glob("*.jsonl"))]
    stamp = tuple((name, stat.st_mtime_ns, stat.st_size) for name, stat in stats)
    key = (str(directory.resolve()), stamp)
    if key not in _read:
        _read.clear()
        _read[key] = manifest.read_directory(directory)
    return list(_read[key])


def line_tasks(lines: list[manifest.Line]) -> tuple[Path, dict[str, HarborTask]]:
    """The set directory of ``lines`` (``materialize_set``) and their tasks by instance id,
    made from the lines without reading a folder (``folders.task``)."""
    view = materialize_set(lines)
    return view, {
        str(line["instance_id"]): task(line, view / str(line["instance_id"])) for line in lines
    }


def line_rows(lines: list[manifest.Line]) -> Path:
    """The task rows of ``lines``, stamped with the set's kept digests (``set_digests``)."""
    view, tasks = line_tasks(lines)
    return write_rows(tasks, rows_directory(), set_digests(view))


class SweLocal(HarborEnvironment):
    """SWE-smith's recipe made offline: mutated functions, judged by the package's tests."""

    name: ClassVar[str] = "swe_local"
    description: ClassVar[str] = (
        "fix a bug in a real package (Debian's release), judged by the package's own tests"
    )
    location_args: ClassVar[tuple[str, ...]] = ("path",)

    def __init__(
        self,
        path: str | None = None,
        sandbox: str = DEFAULT_SANDBOX,
        manifest: str | None = None,
        filter: str | None = None,
    ) -> None:
        """``path``: a directory of Harbor task folders instead of the manifest's.
        ``manifest``: a manifest directory (default: the shipped one). ``filter``: keep the
        tasks it selects (``palaestra tasks swe_local --filter``'s syntax)."""
        self._made: dict[str, HarborTask] | None = None
        if path is None:
            directory = Path(manifest) if manifest is not None else _shipped()
            view, self._made = line_tasks(chosen_lines(directory, filter))
            path = str(view)
            if sandbox == "docker" and images.built_packs():
                images.docker_base()  # the daemon's base holds the packs built since
        super().__init__(path=path, sandbox=sandbox)

    def loaded_tasks(self, sandbox: str, *, public: bool) -> dict[str, HarborTask]:
        """The manifest's tasks as made from their lines, no folder read (each folder's digest
        is made when a rollout first asks for it; the provider refuses a Dockerfile it cannot
        build when it builds it); folders given by ``path`` are read as Harbor's."""
        if self._made is None:
            return super().loaded_tasks(sandbox, public=public)
        return self._made

    @classmethod
    def task_summary(cls, filter: str | None = None, directory: Path | None = None) -> str:
        """``palaestra tasks swe_local --summary``: the shipped set (or what ``filter``
        selects) counted by language, repository, kind, difficulty and flag."""
        lines = read_lines(directory or _shipped())
        if filter:
            lines = selected(lines, parse_filter(filter))
        return summary(lines)

    @classmethod
    def example_tasks_file(
        cls, filter: str | None = None, manifest: str | None = None
    ) -> Path | None:
        """The rows of every task of the manifest (``manifest``, else the shipped one), or of
        those ``filter`` selects (their folders made on demand)."""
        directory = Path(manifest) if manifest is not None else _shipped()
        return line_rows(chosen_lines(directory, filter))

    split_names: ClassVar[tuple[str, ...]] = ("smoke",)

    @classmethod
    def split_tasks_file(cls, name: str) -> Path | None:
        """The ``smoke`` split's rows (``SMOKE``'s tasks of the shipped manifest, their
        folders made on demand); None for another name."""
        if name != "smoke":
            return None
        lines = [
            line for line in manifest.read_directory(_shipped()) if line["instance_id"] in SMOKE
        ]
        return line_rows(lines)


def _shipped() -> Path:
    return manifest.SHIPPED
