"""The shipped instances: every folder is well-formed, and a sample still holds on this host.

The re-validation (``recheck``) runs Debian's /usr/bin/python3 with the package's own tests on
a copy of the package installed here (``apt-get install python3-sympy python3-networkx
python3-mpmath python3-pytest``): the bug's patch makes FAIL_TO_PASS fail, solve.sh's patch
makes every listed test pass again.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import palaestra.envs.swe_local as swe_local
from palaestra.envs.swe_local.folders import (
    BUG_PATCH,
    PACKAGES,
    TEST_SCRIPT,
    VERIFIER,
    dockerfile_prefix,
)
from palaestra.envs.swe_local.generate import MANIFEST
from palaestra.envs.swe_local.recheck import recheck
from palaestra.envs.swe_local.validate import Runner
from palaestra.wire.harbor import read_tasks

TASKS = Path(swe_local.__file__).parent / "tasks"
SITE = Path("/usr/lib/python3/dist-packages")


def _manifest() -> dict[str, dict[str, object]]:
    lines = (TASKS / MANIFEST).read_text(encoding="utf-8").splitlines()
    return {row["instance_id"]: row for row in map(json.loads, lines)}


def test_at_least_200_instances_from_the_three_packages() -> None:
    folders = [p for p in TASKS.iterdir() if p.is_dir()]
    assert len(folders) >= 200
    packages = {folder.name.split("__", 1)[0] for folder in folders}
    assert packages == set(PACKAGES)
    assert sorted(_manifest()) == sorted(folder.name for folder in folders)


def test_every_folder_is_well_formed() -> None:
    manifest = _manifest()
    for task in read_tasks(TASKS):
        folder = task.path
        package = folder.name.split("__", 1)[0]
        assert task.has_solution, folder
        assert task.digest == manifest[folder.name]["digest"], f"{folder} changed: re-index"
        assert task.config.environment.network_mode == "no-network"
        dockerfile = (folder / "environment" / "Dockerfile").read_text(encoding="utf-8")
        assert dockerfile.startswith(dockerfile_prefix(package)), folder
        bug = (folder / "environment" / BUG_PATCH).read_text(encoding="utf-8")
        assert bug.startswith(f"--- a/{package}/"), folder
        config = json.loads((folder / "tests" / "config.json").read_text(encoding="utf-8"))
        assert config["instance_id"] == folder.name
        assert config["FAIL_TO_PASS"] and config["PASS_TO_PASS"], folder
        assert not set(config["FAIL_TO_PASS"]) & set(config["PASS_TO_PASS"])
        assert all(node.startswith(f"{package}/") for node in config["PASS_TO_PASS"])
        for line in bug.splitlines():
            code = line[1:].strip()
            if line.startswith("+") and not line.startswith("+++") and len(code) >= 12:
                assert code not in task.instruction, f"{folder}: the issue quotes the bug"


def test_every_folder_has_the_current_verifier() -> None:
    """A change to the verifier reaches every shipped task (``generate --retest``)."""
    verifier = VERIFIER.read_text(encoding="utf-8")
    for folder in sorted(p for p in TASKS.iterdir() if p.is_dir()):
        tests = folder / "tests"
        assert sorted(p.name for p in tests.iterdir()) == ["config.json", "test.sh", "verify.py"]
        assert (tests / "test.sh").read_text(encoding="utf-8") == TEST_SCRIPT, folder
        assert (tests / "verify.py").read_text(encoding="utf-8") == verifier, folder
        config = json.loads((tests / "config.json").read_text(encoding="utf-8"))
        assert len(config["base_tree"]) == 40, folder


def _sample() -> list[Path]:
    folders = sorted(p for p in TASKS.iterdir() if p.is_dir())
    rng = random.Random(26)
    by_package = [[f for f in folders if f.name.startswith(f"{p}__")] for p in PACKAGES]
    return [rng.choice(group) for group in by_package if group]


@pytest.mark.skipif(
    not all((SITE / package / "__init__.py").is_file() for package in PACKAGES),
    reason="Debian's python3-sympy, python3-networkx and python3-mpmath are not installed",
)
@pytest.mark.parametrize("folder", _sample(), ids=lambda folder: folder.name)
def test_sample_revalidates_on_the_host(folder: Path, tmp_path: Path) -> None:
    assert recheck(Runner(tmp_path, None), folder, timeout=600) == "ok"
