"""``--env-arg`` values as a user types them, through the real command: read as the
constructor's parameter asks, and a value the environment does not take is one line naming the
argument, the value and what it takes, before any rollout (exit 1, no traceback, no rows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_collect_cli import rows, run_cli
from tests.support.scripted_model import ScriptedModelServer, text_response


def refused(tmp_path: Path, env: str, *env_args: str) -> str:
    """The one line ``collect`` prints for ``env_args``; checks nothing ran."""
    flags = [flag for arg in env_args for flag in ("--env-arg", arg)]
    done = run_cli(
        "collect", "--env", env, *flags, "--agent", "oracle", "--limit", "1",
        "--output", "out.jsonl", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert not (tmp_path / "out.jsonl").exists()
    return lines[0]


def test_function_calling_categories_take_a_comma_separated_list(tmp_path: Path) -> None:
    done = run_cli(
        "tasks", "function_calling", "--env-arg", "categories=simple_python,multiple",
        "--num-tasks", "40", "--output", "t.jsonl", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert {row["category"] for row in rows(tmp_path / "t.jsonl")} == {"simple_python", "multiple"}


def test_a_function_calling_category_it_does_not_have_is_named_whole(tmp_path: Path) -> None:
    line = refused(tmp_path, "function_calling", "categories=simple")
    assert "categories" in line and "'simple'" in line and "simple_python" in line


@pytest.mark.parametrize(
    ("env", "env_args", "says"),
    [
        ("code_gen", ["sandbox=docker"], "argument 'sandbox' takes a Sandbox object"),
        ("python_tool", ["sandbox=rootfs"], "argument 'sandbox' takes a Sandbox object"),
        ("science_world", ["simplifications=nope"], "simplifications: 'nope' is not one of"),
        ("tau2", ["split=nope", "user=gold"], "split 'nope' is not one of"),
        (
            "reasoning_gym",
            ["datasets=chain_sum", "dataset_configs=max_terms=6"],
            "argument 'dataset_configs' takes a JSON object",
        ),
        (
            "reasoning_gym",
            ["datasets=chain_sum", 'dataset_configs={"chain_sum": {"max_termz": 6}}'],
            "dataset_configs: 'chain_sum' takes no field 'max_termz'",
        ),
    ],
)
def test_a_value_the_environment_does_not_take_is_one_line_before_any_rollout(
    tmp_path: Path, env: str, env_args: list[str], says: str
) -> None:
    assert says in refused(tmp_path, env, *env_args)


def test_reasoning_gym_dataset_configs_take_json(tmp_path: Path) -> None:
    done = run_cli(
        "tasks", "reasoning_gym", "--env-arg", "datasets=chain_sum",
        "--env-arg", 'dataset_configs={"chain_sum": {"min_terms": 5, "max_terms": 5}}',
        "--num-tasks", "3", "--output", "t.jsonl", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    configs = [row["dataset_config"] for row in rows(tmp_path / "t.jsonl")]
    assert configs == [{"min_terms": 5, "max_terms": 5}] * 3


def test_a_judge_given_as_a_url_is_opened_as_a_model_and_judges(tmp_path: Path) -> None:
    """``--env-arg judge=URL`` asks the model at that URL, as ``--model URL`` would."""
    with (
        ScriptedModelServer(lambda params: text_response("an answer")) as policy,
        ScriptedModelServer(lambda params: text_response("VERDICT: EQUIVALENT")) as judge,
    ):
        done = run_cli(
            "collect", "--env", "equivalence_judge", "--env-arg", f"judge={judge.url}",
            "--model", policy.url, "--limit", "2", "--output", "out.jsonl", cwd=tmp_path,
        )  # fmt: skip
        asked = [
            route for route, _ in judge.requests if route.endswith(("responses", "completions"))
        ]
    assert done.returncode == 0, done.stderr
    assert [row["reward"] for row in rows(tmp_path / "out.jsonl")] == [1.0, 1.0]
    assert len(asked) == 4  # two tasks, each in both orders
