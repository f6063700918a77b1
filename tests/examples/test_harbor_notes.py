"""``examples/harbor/notes``, a hand-written two-step Harbor task with a separate verifier and
a collect hook: ``palaestra test`` passes it on each provider, and Harbor's own ``harbor lint``
(its peer venv) finds nothing in it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from palaestra.cli import cli
from tests.environment.kinds.harbor.conftest import (  # noqa: F401 (fixtures)
    base_tar,
    default_rootfs,
    docker_or_skip,
    layer_cache,
    runtime,
)
from tests.support.peers import peer_python

NOTES = Path(__file__).parents[2] / "examples" / "harbor" / "notes"


@pytest.fixture(params=["rootfs", "docker"])
def sandbox(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        docker_or_skip()
    else:
        if os.geteuid() != 0:
            pytest.skip("the rootfs provider needs root (kernel overlay mounts)")
        request.getfixturevalue("default_rootfs")
    return str(request.param)


def test_palaestra_test_passes_the_multi_step_example(sandbox: str) -> None:
    arguments = ["test", f"harbor:{NOTES}", "--no-model", "--env-arg", f"sandbox={sandbox}"]
    result = CliRunner().invoke(cli, arguments)
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    assert "PASS oracle: replaying the gold actions scores 1 on 1 task (2 calls)" in lines
    assert "PASS null agent: doing nothing scores 0 on 1 task that require an action" in lines
    assert any(line.startswith("PASS cheats: ") for line in lines), result.output


def test_harbor_lint_finds_nothing_in_the_example() -> None:
    harbor = peer_python("harbor").with_name("harbor")
    done = subprocess.run(
        [str(harbor), "lint", "--json", str(NOTES)], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, json.loads(done.stdout)) == (0, []), done.stdout + done.stderr
