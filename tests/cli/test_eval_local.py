"""``palaestra eval`` end to end with the real embedded model (two environments, a task each)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.cli.test_collect_cli import run_cli
from tests.models.test_local import needs_local

pytestmark = [pytest.mark.local_model, needs_local]


def test_a_local_evaluation_of_two_environments_reports_each_and_overall(tmp_path: Path) -> None:
    args = ["--env", "mcqa", "--env", "weather", "--limit", "1", "--max-steps", "2"]
    done = run_cli("eval", *args, "--output-dir", "ev", "--json", cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    result = orjson.loads(done.stdout)
    assert [env["name"] for env in result["environments"]] == ["mcqa", "weather"]
    for env in result["environments"]:
        figures = env["figures"]
        assert figures["tasks"] == 1 and figures["scored"] + figures["failed"] == 1
    failed = sum(env["figures"]["failed"] for env in result["environments"])
    overall = {figure["name"]: figure for figure in result["figures"]}
    assert list(overall)[:2] == ["mean reward", "pass@1"]
    assert overall["mean reward"]["rollouts"] == 2 - failed  # the two tasks pooled
    if failed == 0:
        assert overall["mean reward"]["interval"] is not None
    markdown = (tmp_path / "ev" / "report.md").read_text()
    assert "## mcqa" in markdown and "## weather" in markdown and "**overall**" in markdown
    assert "| model | 1 |" in markdown  # the local model's time per rollout, from the rows
    assert "input_tokens" in markdown  # its token usage
