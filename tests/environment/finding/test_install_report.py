"""The install's last screen: one calm line per suite, and no resolver ``ERROR:`` block."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from palaestra.environment.finding.catalogue import builtin_tables
from palaestra.environment.finding.install_report import unmet

ROOT = Path(__file__).resolve().parents[3]


def pip_installs(script: str) -> list[str]:
    """Each ``pip install`` command of a shell script, its continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", script)
    return [line for line in joined.splitlines() if "-m pip install" in line]


def test_every_resolving_install_in_the_install_script_keeps_pips_conflict_block_off() -> None:
    """pip prints its red ``ERROR: pip's dependency resolver ...`` block only after an install
    that resolves dependencies, listing what the --no-deps suites declare and do not have."""
    installs = pip_installs((ROOT / "scripts" / "install.sh").read_text(encoding="utf-8"))
    resolving = [command for command in installs if "--no-deps" not in command]
    assert len(resolving) >= 2
    for command in resolving:
        assert "--no-warn-conflicts" in command, command


def test_the_install_script_ends_by_saying_each_suite_is_ready() -> None:
    script = (ROOT / "scripts" / "install.sh").read_text(encoding="utf-8")
    assert "-m palaestra.environment.finding.install_report" in script.rstrip().splitlines()[-2]


def test_the_report_is_one_line_per_suite_and_never_an_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "palaestra.environment.finding.install_report"],
        env={**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    lines = done.stdout.splitlines()
    suites = [name for name, table in builtin_tables().items() if table.get("requires")]
    assert sorted(line.split(":")[0].strip() for line in lines[1:]) == sorted(suites)
    assert not [line for line in lines if line.lstrip().startswith("ERROR")]
    ready = all(": ready" in line for line in lines[1:])
    assert done.returncode == (0 if ready else 1), done.stderr


def test_a_left_out_dependency_and_a_pin_not_held_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist = tmp_path / "pinned_suite-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: pinned-suite\nVersion: 1.0\n"
        "Requires-Dist: surely-absent-dependency>=2\n"
        "Requires-Dist: click==0.0.1\n"
        "Requires-Dist: orjson\n"
        'Requires-Dist: another-absent ; extra == "dev"\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from importlib import metadata

    click_version = metadata.version("click")
    assert unmet("pinned-suite") == [
        "surely-absent-dependency",
        f"click {click_version} for its ==0.0.1",
    ]
