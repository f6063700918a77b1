"""Harbor task folders for tests: palaestra's calculator export, and a hand-made task.

The hand-made task (``components_task``) is a folder a test writes: its Dockerfile starts from
the base image, its ``tests/test.sh`` writes ``reward.json`` with named components (``reward``
1 when ``/app/out.txt`` holds ``ok``, and ``exists``), and ``solution/solve.sh`` writes the
answer. Keyword arguments change ``task.toml`` (a TOML text) or the scripts.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

DOCKERFILE = """\
FROM debian:bookworm-slim
RUN useradd --create-home agent && mkdir -p /app && chown agent /app
WORKDIR /app
"""
TASK_TOML = """\
schema_version = "1.4"

[agent]
timeout_sec = 120.0
user = "agent"

[verifier]
timeout_sec = 30.0

[environment]
cpus = 1
memory_mb = 512
storage_mb = 1024
network_mode = "no-network"
"""
TEST_SH = """\
#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat /app/out.txt 2>/dev/null)" = ok ]; then reward=1; else reward=0; fi
if [ -e /app/out.txt ]; then exists=1; else exists=0; fi
printf '{"reward": %s, "exists": %s}\\n' "$reward" "$exists" \\
    > /logs/verifier/reward.json
"""
SOLVE_SH = """\
#!/bin/bash
set -e
echo ok > /app/out.txt
"""


def components_task(
    path: Path,
    *,
    toml: str = TASK_TOML,
    test_sh: str = TEST_SH,
    solve_sh: str | None = SOLVE_SH,
    instruction: str = "Write the word ok to /app/out.txt.\n",
) -> Path:
    """Write the hand-made task folder at ``path`` and return it."""
    (path / "environment").mkdir(parents=True)
    (path / "environment" / "Dockerfile").write_text(DOCKERFILE)
    (path / "task.toml").write_text(toml)
    (path / "instruction.md").write_text(instruction)
    (path / "tests").mkdir()
    (path / "tests" / "test.sh").write_text(test_sh)
    (path / "tests" / "test.sh").chmod(0o755)
    if solve_sh is not None:
        (path / "solution").mkdir()
        (path / "solution" / "solve.sh").write_text(solve_sh)
        (path / "solution" / "solve.sh").chmod(0o755)
    return path


def calculator_folders(path: Path, tasks: int = 2) -> Path:
    """``palaestra tasks calculator --format harbor`` with ``tasks`` generated tasks at ``path``."""
    from palaestra.cli import cli

    result = CliRunner().invoke(
        cli,
        [
            "tasks",
            "calculator",
            "--format",
            "harbor",
            "--output",
            str(path),
            "--num-tasks",
            str(tasks),
        ],
    )
    assert result.exit_code == 0, result.output
    return path
