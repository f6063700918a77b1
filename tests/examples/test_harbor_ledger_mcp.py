"""``examples/harbor/ledger-mcp``, a hand-written Harbor task whose agent works through the MCP
server it declares: ``palaestra test`` passes it on each provider, and Harbor's own ``harbor
lint`` (its peer venv) finds nothing in it."""

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

LEDGER = Path(__file__).parents[2] / "examples" / "harbor" / "ledger-mcp"

pytest.importorskip("mcp")


@pytest.fixture(params=["rootfs", "docker"])
def sandbox(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        docker_or_skip()
    else:
        if os.geteuid() != 0:
            pytest.skip("the rootfs provider needs root (kernel overlay mounts)")
        request.getfixturevalue("default_rootfs")
    return str(request.param)


def test_palaestra_test_passes_the_mcp_example(sandbox: str) -> None:
    arguments = ["test", f"harbor:{LEDGER}", "--no-model", "--env-arg", f"sandbox={sandbox}"]
    result = CliRunner().invoke(cli, arguments)
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    assert any(line.startswith("PASS tool schemas: 5 tools (2 from its server)") for line in lines)
    assert "PASS oracle: replaying the gold actions scores 1 on 1 task (1 call)" in lines
    assert "PASS null agent: doing nothing scores 0 on 1 task that require an action" in lines


def test_harbor_lint_finds_nothing_in_the_mcp_example() -> None:
    harbor = peer_python("harbor").with_name("harbor")
    done = subprocess.run(
        [str(harbor), "lint", "--json", str(LEDGER)], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, json.loads(done.stdout)) == (0, []), done.stdout + done.stderr
