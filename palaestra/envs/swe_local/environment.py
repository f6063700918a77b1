"""``swe_local``: fix a real bug in a real Python package (the shipped ``tasks/``).

Each rollout gets its instance's machine (Debian's release of sympy, networkx or mpmath with
one validated mutation, as a git repository at ``/testbed``), the issue text and the machine
tools (``bash``, ``str_replace_editor``, ``submit``); the package's own tests score the
repository the agent leaves (FAIL_TO_PASS and PASS_TO_PASS, both must pass). ``--env-arg
sandbox=docker`` runs the machines in Docker instead of the daemonless ``rootfs`` provider.
See README.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from palaestra.environment.harbor import HarborEnvironment


class SweLocal(HarborEnvironment):
    """SWE-smith's recipe made offline: mutated functions, judged by the package's tests."""

    name: ClassVar[str] = "swe_local"
    description: ClassVar[str] = (
        "fix a bug in sympy, networkx or mpmath, judged by the package's own tests"
    )
    folder: ClassVar[Path | None] = Path(__file__).with_name("tasks")
