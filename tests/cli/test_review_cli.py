"""``palaestra test`` as a user runs it: the real command in a subprocess."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.cli.test_collect_cli import run_cli


def test_tau2_with_no_model_runs_its_oracle_and_null_checks_with_the_gold_user(
    tmp_path: Path,
) -> None:
    """No user model: the scripted gold user plays, so the checks that need a user run."""
    done = run_cli("test", "tau2", "--no-model", "--json", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    checks = {check["name"]: check for check in orjson.loads(done.stdout)["checks"]}
    assert checks["oracle"]["status"] == "pass", checks["oracle"]
    assert checks["null agent"]["status"] == "pass", checks["null agent"]
    assert checks["smoke run"]["status"] == "skip"


def test_an_explicit_user_argument_wins_over_the_scripted_user(tmp_path: Path) -> None:
    done = run_cli(
        "test", "tau2", "--no-model", "--env-arg", "user=model", cwd=tmp_path, timeout=600
    )
    assert done.returncode == 1
    assert "needs a user model" in done.stderr and "Traceback" not in done.stderr
