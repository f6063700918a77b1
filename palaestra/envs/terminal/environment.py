"""``terminal``: the shipped shell tasks (``tasks/``) run as Harbor task folders.

Each rollout gets its task's machine (built offline from ``debian:bookworm-slim``), the task's
instruction and the machine tools (``bash``, ``str_replace_editor``, ``submit``); the task's own
hidden checks score the machine's final state. ``--env-arg sandbox=docker`` runs the machines
in Docker instead of the daemonless ``rootfs`` provider. See README.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from palaestra.environment.harbor import HarborEnvironment


class Terminal(HarborEnvironment):
    """Shell tasks (text, forensics, scripting, git, permissions, logs, AgentBench OS)."""

    name: ClassVar[str] = "terminal"
    description: ClassVar[str] = (
        "shell tasks in a Debian machine, checked by its final state (Harbor task folders)"
    )
    folder: ClassVar[Path | None] = Path(__file__).with_name("tasks")
