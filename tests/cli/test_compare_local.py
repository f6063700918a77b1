"""collect's figures and ``palaestra compare`` on rows the real embedded model wrote."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.cli.test_collect_cli import run_cli
from tests.models.test_local import needs_local

pytestmark = [pytest.mark.local_model, needs_local]


def test_a_local_run_shows_intervals_and_compares_with_itself(tmp_path: Path) -> None:
    args = ["--env", "weather", "--limit", "2", "--repeats", "2", "--max-steps", "2"]
    done = run_cli("collect", *args, "--output", "a.jsonl", cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "n=2 tasks/4 rollouts" in done.stdout and "95% interval" in done.stdout
    compared = run_cli("compare", "a.jsonl", "a.jsonl", "--json", cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    report = orjson.loads(compared.stdout)
    assert report["paired"] == 2 and report["only_in_a"] == report["only_in_b"] == []
    names = [d["name"] for d in report["differences"]]
    assert names[:4] == ["mean reward", "pass@1", "pass@2", "pass^2"] and "called_tool" in names
    assert all(d["difference"] == 0.0 for d in report["differences"])
    assert report["a"]["scored"] + report["a"]["failed"] == 4
