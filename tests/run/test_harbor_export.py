"""calculator written as Harbor task folders: their layout, their tests run in a machine-like
sandbox (the oracle scores 1, no answer and a wrong one score 0), and their check agrees with
``Calculator.verify``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

from palaestra.collection.tasks import read_tasks as read_task_rows
from palaestra.environment.finding.registry import find_environment
from palaestra.environment.sessions import Session
from palaestra.envs.calculator import harbor_check
from palaestra.envs.calculator.environment import Calculator
from palaestra.errors import ConfigError
from palaestra.run.harbor_export import ANSWER_FILE, export_harbor
from palaestra.types import JsonDict
from palaestra.wire.harbor import read_tasks

BWRAP = shutil.which("bwrap")


def example_rows() -> list[JsonDict]:
    path = find_environment("calculator").example_tasks
    assert path is not None
    return [line.row for line in read_task_rows(path)]


def run_in_machine(task: Path, work: Path, *script: str) -> str | None:
    """Run ``script`` (paths inside the machine) as Harbor lays a trial out: the task's tests
    at /tests, its solution at /solution, a fresh /app and /logs; the reward.txt written."""
    assert BWRAP is not None, "bubblewrap (bwrap) is required"
    app, logs = work / "app", work / "logs"
    app.mkdir(parents=True)
    logs.mkdir()
    system = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for link in ("bin", "lib", "lib64", "sbin"):
        if Path(f"/{link}").is_symlink():
            system += ["--symlink", f"usr/{link}", f"/{link}"]
        elif Path(f"/{link}").exists():
            system += ["--ro-bind", f"/{link}", f"/{link}"]
    mounts = ["--bind", str(app), "/app", "--bind", str(logs), "/logs"]
    mounts += ["--ro-bind", str(task / "tests"), "/tests"]
    if (task / "solution").is_dir():
        mounts += ["--ro-bind", str(task / "solution"), "/solution"]
    isolation = ["--unshare-net", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin"]
    machine = ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", *mounts, *isolation]
    done = subprocess.run(
        [BWRAP, "--tmpfs", "/", *system, *machine, "bash", "-c", " && ".join(script)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    reward = logs / "verifier" / "reward.txt"
    return reward.read_text() if reward.exists() else None


def test_every_example_task_is_a_harbor_folder_with_its_prompt_and_hidden_answer(
    tmp_path: Path,
) -> None:
    assert export_harbor("calculator", tmp_path / "out") == 10
    tasks = read_tasks(tmp_path / "out")
    rows = example_rows()
    assert [task.name for task in tasks] == [f"calculator-{i:04d}" for i in range(10)]
    for task, row in zip(tasks, rows, strict=True):
        question = row["responses_create_params"]["input"][-1]["content"]
        assert task.instruction.startswith(question) and ANSWER_FILE in task.instruction
        assert row["expected_answer"] not in task.instruction
        hidden = orjson.loads((task.path / "tests" / "task.json").read_bytes())
        assert hidden["expected_answer"] == row["expected_answer"]
        config = task.config
        assert config.environment.network_mode == "no-network"
        assert config.agent.user == "agent" and config.verifier.environment_mode == "separate"
        assert config.artifacts == ["/app/answer.txt"]
        assert task.has_solution
        dockerfile = (task.path / "environment" / "Dockerfile").read_text()
        assert dockerfile.startswith("#") and "COPY" not in dockerfile and "python3" in dockerfile
    assert len({task.digest for task in tasks}) == 10


@pytest.mark.skipif(BWRAP is None, reason="bubblewrap is not installed")
def test_the_oracle_scores_one_and_no_answer_or_a_wrong_one_scores_zero(tmp_path: Path) -> None:
    export_harbor("calculator", tmp_path / "out")
    tasks = read_tasks(tmp_path / "out")
    for task in tasks:
        work = tmp_path / "runs" / task.name
        oracle = run_in_machine(
            task.path, work / "oracle", "bash /solution/solve.sh", "bash /tests/test.sh"
        )
        assert oracle == "1.0\n", task.name
    first = tasks[0].path
    assert run_in_machine(first, tmp_path / "null", "bash /tests/test.sh") == "0.0\n"
    wrong = "echo 'The answer is 1.' > /app/answer.txt"
    assert run_in_machine(first, tmp_path / "wrong", wrong, "bash /tests/test.sh") == "0.0\n"


@pytest.mark.skipif(BWRAP is None, reason="bubblewrap is not installed")
def test_a_check_that_crashes_leaves_no_reward_rather_than_a_zero(tmp_path: Path) -> None:
    export_harbor("calculator", tmp_path / "out")
    task = read_tasks(tmp_path / "out")[0].path
    (task / "tests" / "task.json").write_text("{}")  # no expected_answer: check.py raises
    answer = "echo 'The answer is 1.' > /app/answer.txt"
    assert run_in_machine(task, tmp_path / "run", answer, "! bash /tests/test.sh") is None


async def test_the_exported_check_agrees_with_calculator_verify() -> None:
    env = Calculator()
    texts = ["The answer is 10,063.", "10063", "It is 5, no, 7197", "-4.5", "none", "", "1e3"]
    for row in example_rows():
        answers = [row["golden_response"][-1]["content"], row["wrong_response"][-1]["content"]]
        for text in [*answers, *texts]:
            response = {"output": [{"type": "message", "role": "assistant", "content": text}]}
            verdict = await env.verify(Session("s", row, None), response)
            assert harbor_check.reward(text, row) == verdict.reward, (text, row["expected_answer"])
        unanswered = await env.verify(Session("s", row, None), {"output": []})
        assert harbor_check.reward(None, row) == unanswered.reward == 0.0


def test_generated_tasks_are_written_the_same_for_the_same_seed(tmp_path: Path) -> None:
    assert export_harbor("calculator", tmp_path / "a", num_tasks=3, seed=7) == 3
    export_harbor("calculator", tmp_path / "b", num_tasks=3, seed=7)
    export_harbor("calculator", tmp_path / "c", num_tasks=3, seed=8)
    digests = {key: [t.digest for t in read_tasks(tmp_path / key)] for key in "abc"}
    assert digests["a"] == digests["b"] != digests["c"]


def test_an_environment_checked_from_its_trajectory_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        export_harbor("weather", tmp_path / "out")
    message = str(raised.value)
    assert "\n" not in message and "'weather'" in message and "trajectory" in message
    assert not (tmp_path / "out").exists()


def test_the_output_must_be_new_or_empty_and_is_written_whole(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert export_harbor("calculator", tmp_path / "empty") == 10
    with pytest.raises(ConfigError, match="not an empty directory"):
        export_harbor("calculator", tmp_path / "empty")
    assert len(list((tmp_path / "empty").iterdir())) == 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]  # nothing left beside
