"""A Harbor task whose tests are Harbor's Reward Kit runs offline: the example
``examples/harbor/notes-rewardkit`` (two steps, a separate verifier, criteria by directory, on
Debian trixie with the kit installed from the base's wheelhouse) passes ``palaestra test`` on
each provider."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from palaestra.cli import cli
from palaestra.sandbox.machines import images
from tests.environment.kinds.harbor.conftest import docker_or_skip

EXAMPLE = Path(__file__).parents[4] / "examples" / "harbor" / "notes-rewardkit"


@pytest.fixture(scope="session")
def trixie_tar() -> Path:
    """The offline trixie base (built by scripts/install_machines.sh; here if missing)."""
    return images.base_tar(build=True, suite=images.TRIXIE)


@pytest.fixture(params=["rootfs", "docker"])
def sandbox(request: pytest.FixtureRequest, trixie_tar: Path) -> str:
    """The provider's name for ``--env-arg sandbox=``, its trixie base in place."""
    if request.param == "docker":
        docker_or_skip()
        images.docker_base(suite=images.TRIXIE)
    else:
        if os.geteuid() != 0:
            pytest.skip("the rootfs provider needs root (kernel overlay mounts)")
        request.getfixturevalue("default_rootfs")
    return str(request.param)


def test_a_reward_kit_task_passes_its_oracle_and_null_checks_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox: str
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    arguments = ["test", f"harbor:{EXAMPLE}", "--no-model", "--env-arg", f"sandbox={sandbox}"]
    result = CliRunner().invoke(cli, arguments)
    lines = [line.strip() for line in result.output.splitlines()]
    assert "ok   task 0 (notes-rewardkit): the gold actions scored 1" in lines, result.output
    assert "ok   task 0 (notes-rewardkit): doing nothing scored 0" in lines, result.output
    assert result.exit_code == 0, result.output
