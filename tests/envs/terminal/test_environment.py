"""``--env terminal``: the shipped task folders as a built-in environment, checked end to end
by ``palaestra test`` (oracle 1, null 0) on each provider that can run here."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from palaestra.cli import cli
from palaestra.environment.kinds.harbor.tasks import unpacked
from palaestra.envs.terminal.environment import ARCHIVE, Terminal
from tests.environment.kinds.harbor.conftest import docker_or_skip
from tests.support.submit_run import collect_after_submit

SAMPLE = ["git-001-revert", "permissions-000-modes", "agentbench-dev-003"]


@pytest.fixture(params=["rootfs", "docker"])
def sandbox(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        docker_or_skip()
    elif os.geteuid() != 0:
        pytest.skip("the rootfs provider needs root (kernel overlay mounts)")
    return str(request.param)


def test_the_environment_offers_every_shipped_folder_as_a_task() -> None:
    rows = Terminal.example_tasks_file()
    assert rows is not None
    names = [json.loads(line)["harbor_task"] for line in rows.read_text().splitlines()]
    shipped = sorted(p.name for p in unpacked(ARCHIVE).iterdir() if p.is_dir())
    assert sorted(names) == shipped
    assert len(names) >= 150


def test_palaestra_test_passes_oracle_and_null_on_shipped_tasks(
    tmp_path: Path, sandbox: str
) -> None:
    rows = Terminal.example_tasks_file()
    assert rows is not None
    chosen = [
        line for line in rows.read_text().splitlines() if json.loads(line)["harbor_task"] in SAMPLE
    ]
    assert len(chosen) == len(SAMPLE)
    sample = tmp_path / "sample.jsonl"
    sample.write_text("\n".join(chosen) + "\n")
    arguments = ["test", "terminal", "--input", str(sample), "--no-model"]
    result = CliRunner().invoke(cli, [*arguments, "--env-arg", f"sandbox={sandbox}"])
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    for index, name in enumerate(json.loads(line)["harbor_task"] for line in chosen):
        assert f"ok   task {index} ({name}): the gold actions scored 1" in lines
        assert f"ok   task {index} ({name}): doing nothing scored 0" in lines


def test_submit_ends_the_episode_and_the_tasks_checks_score_it(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the rootfs provider needs root (kernel overlay mounts)")
    asked, row = collect_after_submit("terminal", tmp_path)
    assert asked == 1, "the model was asked again after submit"
    assert row["reward"] == 0.0 and "failure" not in row  # nothing answered: the checks fail
    assert row.get("truncated") is None
