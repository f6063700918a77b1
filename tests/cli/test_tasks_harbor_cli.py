"""``palaestra tasks ENV --format harbor``: the folders, and the one-line refusals."""

from __future__ import annotations

from pathlib import Path

from palaestra.environment.kinds.harbor.tasks import unpacked
from palaestra.envs.terminal.environment import ARCHIVE
from palaestra.wire.harbor import read_tasks
from tests.cli.test_collect_cli import run_cli


def test_tasks_writes_harbor_folders_and_refuses_what_it_cannot(tmp_path: Path) -> None:
    done = run_cli("tasks", "calculator", "--format", "harbor", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "wrote 10 Harbor task folders to out" in done.stderr
    assert len(read_tasks(tmp_path / "out")) == 10

    again = run_cli("tasks", "calculator", "--format", "harbor", "--output", "out", cwd=tmp_path)
    assert again.returncode == 1 and "not an empty directory" in again.stderr

    refused = run_cli("tasks", "weather", "--format", "harbor", "--output", "w", cwd=tmp_path)
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1
    assert "'weather' cannot be written as Harbor folders" in refused.stderr
    assert not (tmp_path / "w").exists()

    agent = ("--agent-name", "a", "--format", "harbor", "--output", "x")
    assert run_cli("tasks", "calculator", *agent, cwd=tmp_path).returncode == 2

    jsonl = run_cli("tasks", "calculator", "--output", "out", cwd=tmp_path)
    assert jsonl.returncode == 2 and "is a directory" in jsonl.stderr


def test_tasks_writes_the_folders_of_an_environment_made_of_harbor_tasks(tmp_path: Path) -> None:
    args = ("tasks", "terminal", "--format", "harbor", "--num-tasks", "2", "--output", "t")
    done = run_cli(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = read_tasks(tmp_path / "t")
    assert len(written) == 2
    shipped = unpacked(ARCHIVE)  # the folders terminal ships, as its archive unpacks them
    for task in written:
        original = shipped / task.path.name
        assert task.instruction == (original / "instruction.md").read_text()
        # The shipped task.toml, and Harbor's own lint setting for a shared verifier by design.
        lint = (
            b"\n# The tests check the machine the agent leaves (a shared verifier), by design.\n"
            b'[metadata.harbor.lint]\nignore = ["shared-verifier"]\n'
        )
        made = (task.path / "task.toml").read_bytes()
        assert made == (original / "task.toml").read_bytes() + lint
