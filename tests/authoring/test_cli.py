"""``palaestra test``'s output: one line per check, JSON on request, exit 1 when one fails."""

from __future__ import annotations

from pathlib import Path

import orjson
from click.testing import CliRunner

from palaestra.authoring import init_environment
from palaestra.cli.review import test_env_command as palaestra_test

UNDOCUMENTED = '''
from palaestra import Environment, tool


class Quiet(Environment):
    """Says little."""

    @tool
    def shout(self, word: str) -> str:
        return word.upper()

    def verify(self, session, response):
        return 0.0
'''


def test_a_failing_check_is_one_red_line_and_exit_1(tmp_path: Path) -> None:
    (tmp_path / "quiet.py").write_text(UNDOCUMENTED, encoding="utf-8")
    (tmp_path / "tasks.jsonl").write_text('{"responses_create_params": {"input": "hi"}}\n')
    result = CliRunner().invoke(palaestra_test, [f"{tmp_path}/quiet.py", "--no-model"])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == f"quiet ({tmp_path}/quiet.py)"
    assert "  FAIL tool docs: tool shout has no docstring (the model reads it); tool shout: " in (
        result.output
    )
    assert "  SKIP golden answers: no golden answers" in result.output
    assert "  SKIP smoke run: no model (--no-model)" in result.output
    assert "  SKIP oracle: no gold actions (implement Environment.gold_actions" in result.output
    assert lines[-1] == "failed: 12 checks, 1 failed, 7 skipped"


def test_json_prints_the_whole_report(tmp_path: Path) -> None:
    scaffold = init_environment("quiz", tmp_path / "quiz")
    result = CliRunner().invoke(
        palaestra_test, [str(scaffold.environment_file), "--no-model", "--json"]
    )
    assert result.exit_code == 0, result.output
    report = orjson.loads(result.output)
    assert report["environment"] == "quiz" and report["ok"] is True
    statuses = [c["status"] for c in report["checks"]]
    assert statuses == ["pass"] * 5 + ["skip"] * 3 + ["pass"] + ["skip"] * 3
    assert report["checks"][4]["details"] == {"tasks": 5}


def test_an_environment_that_cannot_be_found_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(palaestra_test, ["no_such_env", "--no-model"])
    assert result.exit_code == 1
    assert result.output.startswith("error: unknown environment 'no_such_env'. Known: ")
    assert result.output.count("\n") == 1


def test_an_argument_the_environment_does_not_take_is_one_line() -> None:
    result = CliRunner().invoke(palaestra_test, ["weather", "--env-arg", "colour=red"])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and "colour" in result.output
