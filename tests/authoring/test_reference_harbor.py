"""``palaestra test`` on Harbor task folders whose tests need what a machine here has not: a
zero written because the network is missing never passes the null check silently, and the
oracle's miss says why. Real boxes of each provider."""

from __future__ import annotations

import os
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
from tests.support.harbor_folders import components_task

# As Harbor's template for shared tests does: fetch the runner, score 0 when that fails.
ONLINE_TEST_SH = """\
#!/bin/bash
mkdir -p /logs/verifier
if python3 -c "import urllib.request; urllib.request.urlopen('http://astral.sh/uv/install.sh')" \\
    && [ "$(cat /app/out.txt 2>/dev/null)" = ok ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


@pytest.fixture(params=["rootfs", "docker"])
def sandbox(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        docker_or_skip()
    else:
        if os.geteuid() != 0:
            pytest.skip("the rootfs provider needs root (kernel overlay mounts)")
        request.getfixturevalue("default_rootfs")
    return str(request.param)


def test_tests_that_try_the_network_fail_both_checks_saying_so(
    tmp_path: Path, sandbox: str
) -> None:
    components_task(tmp_path / "online", test_sh=ONLINE_TEST_SH)
    arguments = ["test", f"harbor:{tmp_path}", "--no-model", "--env-arg", f"sandbox={sandbox}"]
    result = CliRunner().invoke(cli, arguments)
    assert result.exit_code == 1, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    said = "but the tests tried to reach the network, which machines here do not have: "
    (oracle,) = [line for line in lines if line.startswith("FAIL task 0 (online): the gold")]
    (null,) = [line for line in lines if line.startswith("FAIL task 0 (online): doing nothing")]
    assert oracle.startswith(f"FAIL task 0 (online): the gold actions scored 0, {said}")
    assert null.startswith(f"FAIL task 0 (online): doing nothing scored 0, {said}")
    assert "urlopen error" in null or "name resolution" in null.lower(), null
