"""A tool named like a protocol route, as a user meets it: one line from ``palaestra test``
and from ``palaestra serve env``, never a traceback."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_collect_cli import run_cli
from tests.environment.test_tools import REFUSAL, SEEDING_TOOL


def assert_refused_in_one_line(stderr: str) -> None:
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and REFUSAL in lines[0], stderr


def test_palaestra_test_and_serve_env_refuse_a_seed_session_tool_in_one_line(
    tmp_path: Path,
) -> None:
    (tmp_path / "seeder.py").write_text(SEEDING_TOOL, encoding="utf-8")
    (tmp_path / "tasks.jsonl").write_text('{"responses_create_params": {"input": "hi"}}\n')
    checked = run_cli("test", "seeder.py", "--no-model", cwd=tmp_path)
    assert checked.returncode == 1  # before: every check passed
    assert_refused_in_one_line(checked.stderr)
    served = run_cli("serve", "env", "seeder.py", cwd=tmp_path, timeout=60)
    assert served.returncode == 1  # before: a ValueError's traceback
    assert_refused_in_one_line(served.stderr)
