"""The shipped instances: every folder is well-formed, and a sample still holds on this host.

The re-validation runs Debian's /usr/bin/python3 with the package's own tests on a copy of the
package installed here (``apt-get install python3-sympy python3-networkx python3-mpmath
python3-pytest``): the bug's patch makes FAIL_TO_PASS fail, solve.sh's patch makes every listed
test pass again.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import palaestra.envs.swe_local as swe_local
from palaestra.envs.swe_local.folders import BUG_PATCH, FIX_MARKER, PACKAGES, dockerfile_prefix
from palaestra.envs.swe_local.generate import MANIFEST
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


def _fix(folder: Path) -> str:
    solve = (folder / "solution" / "solve.sh").read_text(encoding="utf-8")
    match = re.search(rf"<<'{FIX_MARKER}'\n(.*){FIX_MARKER}\n", solve, re.DOTALL)
    assert match is not None
    return match.group(1)


def _pytest(root: Path, ids: list[str]) -> int:
    command = ["/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    return subprocess.run(
        [*command, f"--rootdir={root}", *ids],
        cwd=root,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        timeout=600,
    ).returncode


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
    package = folder.name.split("__", 1)[0]
    config = json.loads((folder / "tests" / "config.json").read_text(encoding="utf-8"))
    shutil.copytree(SITE / package, tmp_path / package, ignore=shutil.ignore_patterns("*.pyc"))

    def apply(diff: str) -> None:
        subprocess.run(["patch", "-s", "-p1"], input=diff.encode(), cwd=tmp_path, check=True)

    apply((folder / "environment" / BUG_PATCH).read_text(encoding="utf-8"))
    assert _pytest(tmp_path, config["FAIL_TO_PASS"]) == 1  # the untouched machine fails
    apply(_fix(folder))
    ids = config["FAIL_TO_PASS"] + config["PASS_TO_PASS"]
    assert _pytest(tmp_path, ids) == 0  # the oracle passes
    for name in config["test_files"]:
        assert (tmp_path / name).read_bytes() == (SITE / name).read_bytes()
