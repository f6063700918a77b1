"""A password in a model URL is never printed: the command refuses the URL in one line."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_collect_cli import run_cli


def test_collect_refuses_a_model_url_with_a_password_and_never_prints_it(
    tmp_path: Path,
) -> None:
    url = "http://user:secret@127.0.0.1:9/v1"
    done = run_cli(
        "collect", "--env", "weather", "--model", url, "--output", "o.jsonl", cwd=tmp_path
    )
    assert done.returncode == 1
    assert "secret" not in done.stdout + done.stderr
    assert "http://***@127.0.0.1:9/v1" in done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert not (tmp_path / "o_run.json").exists()
