"""The main job end to end: ``palaestra collect`` with the real embedded model (no API key)."""

from __future__ import annotations

import signal
import subprocess
import urllib.request
from pathlib import Path

import orjson
import pytest

from palaestra.cli.errors import EXIT_NOTHING_SCORED
from tests.cli.test_collect_cli import rows, run_cli
from tests.cli.test_run_cli import PALAESTRA, read_until
from tests.models.test_local import needs_local

pytestmark = [pytest.mark.local_model, needs_local]


def test_weather_rollouts_with_the_local_model_are_verified_and_deterministic(
    tmp_path: Path,
) -> None:
    args = ["collect", "--env", "weather", "--limit", "2", "--max-steps", "2", "--temperature", "0"]
    first = run_cli(*args, "--output", "a.jsonl", cwd=tmp_path, timeout=300)
    assert first.returncode == 0, first.stderr
    second = run_cli(*args, "--output", "b.jsonl", cwd=tmp_path, timeout=300)
    assert second.returncode == 0, second.stderr
    a, b = rows(tmp_path / "a.jsonl"), rows(tmp_path / "b.jsonl")
    assert len(a) == 2 and all(r["reward"] == 1.0 for r in a)
    assert "1.0000" in first.stdout  # the summary table's mean reward
    for row in a:
        calls = [i for i in row["response"]["output"] if i["type"] == "function_call"]
        assert calls and calls[0]["name"] == "get_weather"
        assert row["called_tool"] is True
        assert row["response"]["usage"]["output_tokens"] > 0
        assert row["_palaestra"]["model_calls"] <= 2  # max_steps bounds the weak model
    by_task = {r["_ng_task_index"]: r["response"]["output"] for r in b}
    for row in a:  # same seed, temperature 0: the same trajectory token for token
        strip = [
            {k: v for k, v in i.items() if k not in ("id", "call_id")}
            for i in row["response"]["output"]
        ]
        again = [
            {k: v for k, v in i.items() if k not in ("id", "call_id")}
            for i in by_task[row["_ng_task_index"]]
        ]
        assert strip == again


def test_synonyms_with_the_local_model_ends_in_a_verdict(tmp_path: Path) -> None:
    done = run_cli(
        "collect",
        "--env",
        "synonyms",
        "--limit",
        "1",
        "--max-steps",
        "3",
        "--output",
        "s.jsonl",
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    [row] = rows(tmp_path / "s.jsonl")
    assert row["reward"] in (0.0, 1.0)
    assert row["_palaestra"]["model_calls"] <= 3
    assert rows(tmp_path / "s_failures.jsonl") == []


def test_a_three_server_stack_with_the_local_model(tmp_path: Path) -> None:
    (tmp_path / "stack.yaml").write_text("""
servers:
  env: {kind: env, env: weather}
  smollm: {kind: model, backend: local}
  agent: {kind: agent, env: env, model: smollm, max_steps: 2}
""")
    stack = subprocess.Popen(
        [*PALAESTRA, "run", "stack.yaml"],
        cwd=tmp_path,
        text=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        read_until(stack, "ready in", timeout=120)
        state = orjson.loads((tmp_path / ".palaestra" / "stack.json").read_bytes())
        with urllib.request.urlopen(f"{state['head']}/servers") as answer:
            servers = {s["name"]: s for s in orjson.loads(answer.read())["servers"]}
        done = run_cli(
            "collect",
            "--agent-url",
            servers["agent"]["url"],
            "--input",
            str(Path(__file__).parents[2] / "palaestra/envs/weather/tasks.jsonl"),
            "--limit",
            "2",
            "--output",
            "o.jsonl",
            cwd=tmp_path,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert [r["reward"] for r in rows(tmp_path / "o.jsonl")] == [1.0, 1.0]
        stack.send_signal(signal.SIGINT)
        assert stack.wait(30) == 0
    finally:
        if stack.poll() is None:
            stack.kill()


CATALOGUE = [
    "instruction_following",
    "structured_outputs",
    "mcqa",
    "reasoning_gym",
    "equivalence_judge",
    "math",
]


@pytest.mark.parametrize("env_name", CATALOGUE)
def test_catalogue_environment_with_the_local_model_ends_in_a_verdict_or_a_failure_record(
    tmp_path: Path, env_name: str
) -> None:
    """The weak local model's reward is not asserted: only that the rollout was judged."""
    done = run_cli(
        "collect",
        "--env",
        env_name,
        "--limit",
        "1",
        "--max-steps",
        "2",
        "--output",
        "o.jsonl",
        cwd=tmp_path,
        timeout=600,
    )
    assert "Traceback" not in done.stderr
    scored, failed = rows(tmp_path / "o.jsonl"), rows(tmp_path / "o_failures.jsonl")
    assert len(scored) + len(failed) == 1
    assert done.returncode == (0 if scored else EXIT_NOTHING_SCORED), done.stderr
    for row in scored:
        assert 0.0 <= row["reward"] <= 1.0
        assert row["response"]["usage"]["output_tokens"] > 0
    for row in failed:  # e.g. the local judge answering without a verdict label
        assert row["failure"]["kind"] in ("verifier_error", "timeout")
        assert row["failure"]["reason"]


@pytest.mark.parametrize(
    ("env_name", "agent"),
    [
        ("function_calling", "single_turn"),
        ("function_calling", "tool_calling"),
        ("text_to_sql", "tool_calling"),
        ("workplace", "tool_calling"),
    ],
)
def test_code_tools_and_multi_turn_environments_with_the_local_model_end_in_a_verdict(
    tmp_path: Path, env_name: str, agent: str
) -> None:
    """Issue 8's tool environments: the weak model's calls are judged, whatever they are."""
    done = run_cli(
        "collect",
        "--env",
        env_name,
        "--agent",
        agent,
        "--limit",
        "1",
        *(() if agent == "single_turn" else ("--max-steps", "3")),  # single_turn takes none
        "--output",
        "o.jsonl",
        cwd=tmp_path,
        timeout=600,
    )
    assert "Traceback" not in done.stderr
    scored, failed = rows(tmp_path / "o.jsonl"), rows(tmp_path / "o_failures.jsonl")
    assert len(scored) + len(failed) == 1
    assert done.returncode == (0 if scored else EXIT_NOTHING_SCORED), done.stderr
    for row in scored:
        assert row["reward"] in (0.0, 1.0)
        assert row["_palaestra"]["model_calls"] <= (1 if agent == "single_turn" else 3)
    for row in failed:
        assert row["failure"]["kind"] and row["failure"]["reason"]


@pytest.mark.parametrize(
    ("env_name", "metric"), [("code_gen", "tests_passed"), ("python_tool", "tool_calls")]
)
def test_sandboxed_code_environments_with_the_local_model_end_in_a_verdict_or_a_failure(
    tmp_path: Path, env_name: str, metric: str
) -> None:
    """Issue 8's code environments: whatever code the weak model writes, the run is judged."""
    done = run_cli(
        "collect",
        "--env",
        env_name,
        "--limit",
        "2",
        *(() if env_name == "code_gen" else ("--max-steps", "3")),  # code_gen: single_turn
        "--output",
        "o.jsonl",
        cwd=tmp_path,
        timeout=600,
    )
    assert "Traceback" not in done.stderr
    scored, failed = rows(tmp_path / "o.jsonl"), rows(tmp_path / "o_failures.jsonl")
    assert len(scored) + len(failed) == 2
    assert done.returncode == (0 if scored else EXIT_NOTHING_SCORED), done.stderr
    for row in scored:
        assert row["reward"] in (0.0, 1.0) and isinstance(row[metric], int)
        assert row["_palaestra"]["model_calls"] <= 3
    for row in failed:  # e.g. no bubblewrap: recorded, never a 0
        assert row["failure"]["kind"] in ("verifier_error", "tool_error")
        assert row["failure"]["reason"]
