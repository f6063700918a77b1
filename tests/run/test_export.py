"""``palaestra tasks`` / ``export_tasks``: an environment's tasks as NeMo Gym input JSONL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import palaestra
from palaestra.environment.finding.registry import find_environment
from palaestra.errors import ConfigError
from palaestra.run.export import export_tasks, nemo_gym_row
from palaestra.types import JsonDict
from tests.support.scripted_model import ScriptedModelServer, text_response


def rows(path: Path) -> list[JsonDict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_the_examples_are_written_with_messages_an_index_and_the_agent_named(
    tmp_path: Path,
) -> None:
    written = export_tasks("weather", tmp_path / "weather.jsonl", agent="weather_agent")
    examples = rows(find_environment("weather").example_tasks)  # type: ignore[arg-type]
    exported = rows(tmp_path / "weather.jsonl")
    assert written == len(exported) == len(examples)
    for idx, (row, example) in enumerate(zip(exported, examples, strict=True)):
        assert row["idx"] == idx
        assert row["agent_ref"] == {"type": "responses_api_agents", "name": "weather_agent"}
        assert isinstance(row["responses_create_params"]["input"], list)
        # everything else as the environment wrote it
        assert {k: v for k, v in row.items() if k not in ("idx", "agent_ref")} == {
            **example,
            "responses_create_params": row["responses_create_params"],
        }


def test_a_text_input_becomes_one_user_message() -> None:
    row = {"responses_create_params": {"input": "Hi?", "temperature": 0.5}, "x": 1}
    assert nemo_gym_row(row, 3) == {
        "responses_create_params": {
            "input": [{"role": "user", "content": "Hi?"}],
            "temperature": 0.5,
        },
        "x": 1,
        "idx": 3,
    }


def test_generated_tasks_are_the_same_for_the_same_seed_and_differ_for_another(
    tmp_path: Path,
) -> None:
    export_tasks("math", tmp_path / "a.jsonl", num_tasks=5, seed=7)
    export_tasks("math", tmp_path / "b.jsonl", num_tasks=5, seed=7)
    export_tasks("math", tmp_path / "c.jsonl", num_tasks=5, seed=8)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert (tmp_path / "a.jsonl").read_bytes() != (tmp_path / "c.jsonl").read_bytes()
    assert len(rows(tmp_path / "a.jsonl")) == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.jsonl", "c.jsonl"]


def test_collect_reads_an_export_back(tmp_path: Path) -> None:
    export_tasks("math", tmp_path / "tasks.jsonl", num_tasks=3, seed=1)
    answers = {r["question"]: r["expected_answer"] for r in rows(tmp_path / "tasks.jsonl")}

    def solve(params: JsonDict) -> JsonDict:
        asked = str(params["input"])
        answer = next(a for q, a in answers.items() if q in asked)
        return text_response(f"\\boxed{{{answer}}}")

    with ScriptedModelServer(solve) as model:
        summary = palaestra.collect(
            env="math", model=model.url, input=tmp_path / "tasks.jsonl", output=tmp_path / "r.jsonl"
        )
    assert summary.done == 3 and not summary.failures and summary.mean_reward == 1.0


def test_an_environment_that_cannot_give_tasks_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown environment 'nosuch'"):
        export_tasks("nosuch", tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()


def test_the_command_writes_the_file_and_says_so(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "palaestra", "tasks", "mcqa", "--output", "out/mcqa.jsonl"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert f"wrote {len(rows(tmp_path / 'out' / 'mcqa.jsonl'))} tasks to out/mcqa.jsonl" in (
        done.stderr
    )
    refused = subprocess.run(
        [sys.executable, "-m", "palaestra", "tasks", "nosuch", "--output", "x.jsonl"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1 and refused.stderr.startswith("error: unknown environment")
