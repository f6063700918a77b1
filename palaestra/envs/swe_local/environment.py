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
from palaestra.environment.harbor.environment import DEFAULT_SANDBOX
from palaestra.environment.harbor.tasks import load_tasks, rows_directory, write_rows
from palaestra.envs.swe_local import manifest
from palaestra.envs.swe_local.folders import materialize_set
from palaestra.envs.swe_local.selection import parse_filter, selected, summary
from palaestra.sandbox.machines import images

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
    can be built here (``buildable``; a selection of none of those is refused in one line
    that says what to build)."""
    lines = manifest.read_directory(directory)
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
    return materialize_set([line for line in lines if line["language"] in ready])


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
        if path is None:
            directory = Path(manifest) if manifest is not None else _shipped()
            path = str(task_folders(directory, filter))
            if sandbox == "docker" and images.built_packs():
                images.docker_base()  # the daemon's base holds the packs built since
        super().__init__(path=path, sandbox=sandbox)

    @classmethod
    def task_summary(cls, filter: str | None = None, directory: Path | None = None) -> str:
        """``palaestra tasks swe_local --summary``: the shipped set (or what ``filter``
        selects) counted by language, repository, kind, difficulty and flag."""
        lines = manifest.read_directory(directory or _shipped())
        if filter:
            lines = selected(lines, parse_filter(filter))
        return summary(lines)

    @classmethod
    def example_tasks_file(cls, filter: str | None = None) -> Path | None:
        """The rows of every shipped task, or of those ``filter`` selects (their folders made
        on demand)."""
        return write_rows(load_tasks(task_folders(_shipped(), filter)), rows_directory())

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
        return write_rows(load_tasks(materialize_set(lines)), rows_directory())


def _shipped() -> Path:
    return manifest.SHIPPED
