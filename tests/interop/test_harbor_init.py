"""A task as Harbor's own ``harbor init`` writes it (its peer venv): two steps, each verified
in a separate machine built from the step's ``tests/Dockerfile``. palaestra refuses it only for
what cannot be had here (its public network), naming that key; once the task says no network,
starts from the offline base and has its instructions, tests and oracle written, ``palaestra
test`` passes it on real rootfs boxes."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from palaestra.cli import cli
from palaestra.environment.kinds.harbor.tasks import load_tasks
from palaestra.errors import ConfigError
from tests.environment.kinds.harbor.conftest import (  # noqa: F401 (fixtures)
    base_tar,
    default_rootfs,
    layer_cache,
    runtime,
)
from tests.support.peers import peer_python

TEST_SH = """\
#!/bin/bash
if [ "$(cat /logs/artifacts/{name}.txt 2>/dev/null)" = {name} ]; then r=1; else r=0; fi
echo $r > /logs/verifier/reward.txt
"""


def _harbor_init(where: Path) -> Path:
    harbor = peer_python("harbor").with_name("harbor")
    done = subprocess.run(
        [
            str(harbor),
            "init",
            "org/demo",
            "--task",
            "--no-pytest",
            "--steps",
            "2",
            "-o",
            str(where),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return where / "demo"


def _made_runnable(tmp_path: Path) -> Path:
    """``harbor init``'s two-step task, refused for its network, then made runnable here."""
    task = _harbor_init(tmp_path / "tasks")
    steps = sorted((task / "steps").iterdir())
    assert [step.name for step in steps] == ["step-1", "step-2"]
    for step in steps:
        where = f"/logs/artifacts/{step.name}.txt"
        (step / "instruction.md").write_text(f"Write {step.name} to {where}\n")
    with pytest.raises(ConfigError) as raised:
        load_tasks(task, "rootfs")
    assert str(raised.value) == (
        f"{task / 'task.toml'}: environment.network_mode = 'public': the open network is not "
        "given to a task unless the user opts in (--env-arg network_public=true); a task that "
        'needs no network says network_mode = "no-network", one that needs a few hosts '
        '"allowlist" with allowed_hosts'
    )
    config = task / "task.toml"
    config.write_text(config.read_text().replace('"public"', '"no-network"'))
    for dockerfile in [task / "environment" / "Dockerfile", *task.glob("steps/*/tests/Dockerfile")]:
        text = dockerfile.read_text()
        dockerfile.write_text(re.sub(r"^FROM ubuntu:24.04", "FROM debian:bookworm-slim", text))
    for step in steps:
        (step / "tests" / "test.sh").write_text(TEST_SH.format(name=step.name))
        (step / "solution" / "solve.sh").write_text(
            f"#!/bin/bash\necho {step.name} > /logs/artifacts/{step.name}.txt\n"
        )
    return task


def test_a_task_harbor_init_writes_is_refused_only_for_its_network(tmp_path: Path) -> None:
    task = _made_runnable(tmp_path)
    loaded = load_tasks(task, "rootfs")["demo"]
    assert loaded.config.verifier.environment_mode == "separate"
    steps = sorted((task / "steps").iterdir())
    assert [step.tests for step in loaded.steps] == [step / "tests" for step in steps]


def test_palaestra_test_passes_the_task_harbor_init_wrote(
    tmp_path: Path,
    default_rootfs: None,  # noqa: F811
) -> None:
    task = _made_runnable(tmp_path)
    arguments = ["test", f"harbor:{task}", "--no-model", "--env-arg", "sandbox=rootfs"]
    result = CliRunner().invoke(cli, [*arguments, "--cheat-sample", "0"])
    lines = [line.strip() for line in result.output.splitlines()]
    assert "PASS oracle: replaying the gold actions scores 1 on 1 task (2 calls)" in lines, (
        result.output
    )
    assert "PASS null agent: doing nothing scores 0 on 1 task that require an action" in lines
