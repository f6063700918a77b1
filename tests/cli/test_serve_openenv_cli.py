"""``palaestra serve openenv``: a ServeSpec like the other servers, --env-arg included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from palaestra.http.announce import parse_ready_line


def serve_openenv(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "palaestra", "serve", "openenv", *args, "--port", "0"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_an_env_arg_reaches_the_environment_and_the_server_starts(tmp_path: Path) -> None:
    process = serve_openenv("reasoning_gym", "--env-arg", "datasets=gcd", cwd=tmp_path)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line, process.stderr.read() if process.stderr else ""
        facts = parse_ready_line(line.strip())
        assert facts is not None and str(facts["url"]).startswith("http://127.0.0.1:")
    finally:
        process.terminate()
        process.wait(10)


def test_a_wrong_env_arg_is_one_line_before_anything_listens(tmp_path: Path) -> None:
    process = serve_openenv("reasoning_gym", "--env-arg", "datasets=nope", cwd=tmp_path)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 1
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "unknown reasoning-gym datasets" in lines[0], err
    assert "Traceback" not in err
