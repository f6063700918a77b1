"""The shipped manifest: every line makes a well-formed folder, and a sample still holds on
this host.

The re-validation (``recheck``) runs Debian's /usr/bin/python3 with the package's own tests on
a copy of the package installed here (``apt-get install python3-sympy python3-networkx
python3-mpmath python3-pytest``): the bug makes FAIL_TO_PASS fail, the gold patch makes every
listed test pass again.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from palaestra.envs.swe_local import manifest
from palaestra.envs.swe_local.folders import BUG_PATCH, materialize_set
from palaestra.envs.swe_local.languages import language
from palaestra.envs.swe_local.languages.python import TEST_SCRIPT, VERIFIER, package_of
from palaestra.envs.swe_local.recheck import recheck
from palaestra.envs.swe_local.validate import Runner
from palaestra.wire.harbor import read_tasks

SITE = Path("/usr/lib/python3/dist-packages")
LINES = manifest.read_directory()


def test_at_least_200_tasks_from_the_first_three_repositories() -> None:
    assert len(LINES) >= 200
    assert {line["repo"] for line in LINES} >= {"sympy", "networkx", "mpmath"}


def test_a_sample_of_lines_makes_well_formed_folders(tmp_path: Path) -> None:
    """Every line is checked when read (above); 5 a repository are made into folders here
    (the whole set is ``palaestra test swe_local``'s, a command a user runs)."""
    rng = random.Random(7)
    chosen = [
        line
        for repo in sorted({line["repo"] for line in LINES})
        for line in rng.sample(
            [line for line in LINES if line["repo"] == repo],
            min(5, sum(line["repo"] == repo for line in LINES)),
        )
    ]
    by_id = {line["instance_id"]: line for line in chosen}
    tasks = read_tasks(materialize_set(chosen, tmp_path))
    assert sorted(task.path.name for task in tasks) == sorted(by_id)
    for task in tasks:
        folder, line = task.path, by_id[task.path.name]
        speaker = language(line["language"])
        assert task.has_solution, folder
        assert task.config.environment.network_mode == "no-network"
        dockerfile = (folder / "environment" / "Dockerfile").read_text(encoding="utf-8")
        assert dockerfile.startswith(speaker.dockerfile_prefix(line["repo"])), folder
        bug = (folder / "environment" / BUG_PATCH).read_text(encoding="utf-8")
        assert bug == line["bug"] and bug.startswith("--- a/")
        if line["language"] == "python":  # the package's directory; Go and Rust: the root
            assert bug.startswith(f"--- a/{package_of(line['repo'])}/"), folder
        config = json.loads((folder / "tests" / "config.json").read_text(encoding="utf-8"))
        assert config["instance_id"] == folder.name
        assert config["FAIL_TO_PASS"] and config["PASS_TO_PASS"], folder
        script = (folder / "tests" / "test.sh").read_text(encoding="utf-8")
        assert script == speaker.test_script(line)
        for name, text in speaker.verifier_files(line).items():
            assert (folder / "tests" / name).read_text(encoding="utf-8") == text, name
        if line["language"] == "python":
            assert script == TEST_SCRIPT
            assert (folder / "tests" / "verify.py").read_text(
                encoding="utf-8"
            ) == VERIFIER.read_text()
        for text in bug.splitlines():
            code = text[1:].strip()
            if text.startswith("+") and not text.startswith("+++") and len(code) >= 12:
                assert code not in task.instruction, f"{folder}: the issue quotes the bug"


def _sample() -> list[dict[str, Any]]:
    rng = random.Random(26)
    by_repo = [
        [line for line in LINES if line["repo"] == repo] for repo in ("sympy", "networkx", "mpmath")
    ]
    return [rng.choice(group) for group in by_repo if group]


@pytest.mark.parametrize("line", _sample(), ids=lambda line: line["instance_id"])
def test_sample_revalidates_on_the_host(line: dict[str, Any], tmp_path: Path) -> None:
    if not (SITE / package_of(line["repo"]) / "__init__.py").is_file():
        pytest.skip(f"Debian's {line['source']} is not installed here")
    assert recheck(Runner(tmp_path, None), line, timeout=600) == ("ok", None)
