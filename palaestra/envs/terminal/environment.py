"""``terminal``: the shipped shell tasks run as Harbor task folders.

The set ships as one archive (``tasks.tar.xz``, built by ``scripts/datasets/terminal``),
unpacked on first use into the cache under its digest (``harbor.tasks.unpacked``).

Each rollout gets its task's machine (built offline from ``debian:bookworm-slim``), the task's
instruction and the machine tools (``bash``, ``str_replace_editor``, ``submit``); the task's own
hidden checks score the machine's final state. ``--env-arg sandbox=docker`` runs the machines
in Docker instead of the daemonless ``rootfs`` provider. See README.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from palaestra import HarborEnvironment
from palaestra.environment.kinds.harbor.tasks import (
    load_tasks,
    rows_directory,
    unpacked,
    write_rows,
)

ARCHIVE = Path(__file__).with_name("tasks.tar.xz")
"""The shipped task folders and their ``MANIFEST.json`` (id, family, kind, difficulty, source
and digest of each; the AgentBench tasks skipped, and why)."""
SMOKE = (
    "agentbench-test-012",
    "agentbench-test-013",
    "agentbench-test-015",
    "agentbench-test-017",
)
"""The ``smoke`` split: AgentBench OS questions each answered by one short command (CPUs,
groups, whether npm is installed, the kernel's threads-max), checked by their own tests."""


class Terminal(HarborEnvironment):
    """Shell tasks (text, forensics, scripting, git, permissions, logs, AgentBench OS)."""

    name: ClassVar[str] = "terminal"
    description: ClassVar[str] = (
        "shell tasks in a Debian machine, checked by its final state (Harbor task folders)"
    )
    folder: ClassVar[Path | None] = ARCHIVE

    split_names: ClassVar[tuple[str, ...]] = ("smoke",)

    @classmethod
    def split_tasks_file(cls, name: str) -> Path | None:
        """The ``smoke`` split's rows (``SMOKE``'s folders, read and checked like every
        task's); None for another name."""
        if name != "smoke":
            return None
        folder = unpacked(ARCHIVE)
        tasks = {task: load_tasks(folder / task)[task] for task in SMOKE}
        return write_rows(tasks, rows_directory())
