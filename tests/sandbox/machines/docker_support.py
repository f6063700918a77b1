"""Shared pieces of the docker provider's tests: a daemon or a clear skip, and a command run."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence

import pytest

from palaestra.sandbox.limits import Limits
from palaestra.sandbox.machines.provider import Box
from palaestra.sandbox.process import Outcome, supervise


def daemon_or_skip() -> None:
    """Skip (with why) only when no Docker daemon answers; scripts/test.sh starts one."""
    if shutil.which("docker") is None:
        pytest.skip("no docker CLI (scripts/install_machines.sh installs it)")
    answer = subprocess.run(
        ["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, timeout=30
    )
    if answer.returncode != 0:
        pytest.skip("no Docker daemon answers (scripts/install_machines.sh starts one)")


async def run(
    box: Box,
    argv: Sequence[str],
    *,
    wall_time: float = 60.0,
    user: str | None = None,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Outcome:
    process = await box.launch(argv, stdin=subprocess.DEVNULL, user=user, cwd=cwd, env=env)
    try:
        return await supervise(process, Limits(wall_time=wall_time))
    finally:
        process.close()


def container_exists(container: str) -> bool:
    return subprocess.run(["docker", "inspect", container], capture_output=True).returncode == 0
