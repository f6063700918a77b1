"""The verifier's own steps on this host: real git, real pytest, no box.

``prepare`` over a real repository (objects read by git as the test uid, so root is needed),
the base tree the generator computes against ``git write-tree``, and the JUnit reading against
a report real pytest wrote.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra.envs.swe_local.trees import base_tree
from palaestra.envs.swe_local.verifier import (
    DAMAGED,
    Config,
    Deadline,
    Entry,
    Unusable,
    clean,
    is_test_file,
    judge,
    junit_address,
    junit_outcomes,
    object_id,
    prepare,
)

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]


def git(repository: Path, *arguments: str) -> str:
    result = subprocess.run(
        [*GIT, "-C", str(repository), *arguments],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"},
    )
    return result.stdout.strip()


@pytest.fixture
def world() -> Iterator[Path]:
    """A directory the test uid can traverse (pytest's own tmp_path is root's alone)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("prepare reads objects as another uid: needs root and setpriv")
    path = Path(tempfile.mkdtemp(prefix="swe-verifier-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def make_repository(root: Path) -> str:
    """A package with tests as the Dockerfile makes it; the id of its commit's tree."""
    (root / "pkg" / "tests").mkdir(parents=True)
    (root / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core.py").write_text("def half(n):\n    return n % 2\n")
    (root / "pkg" / "tests" / "__init__.py").write_text("")
    (root / "pkg" / "tests" / "test_core.py").write_text(
        "from pkg.core import half\n\ndef test_half():\n    assert half(4) == 2\n"
    )
    (root / "pkg" / "conftest.py").write_text("")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return git(root, "rev-parse", "HEAD^{tree}")


def test_the_generators_base_tree_is_the_tree_git_commits(world: Path) -> None:
    site, repository = world / "site", world / "repository"
    (site / "pkg" / "sub" / "__pycache__").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text("x = 1\n")
    (site / "pkg" / "sub" / "mod.py").write_text("y = 2\n")
    (site / "pkg" / "sub" / "run.sh").write_text("#!/bin/sh\n")
    (site / "pkg" / "sub" / "run.sh").chmod(0o755)
    (site / "pkg" / "sub" / "data.txt").write_text("d\n")
    (site / "pkg" / "sub" / "old.pyc").write_bytes(b"\0")
    (site / "pkg" / "sub" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    (site / "pkg" / "only_cache" / "__pycache__").mkdir(parents=True)
    (site / "pkg" / "link.py").symlink_to("sub/mod.py")
    shutil.copytree(site, repository, symlinks=True)
    (repository / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    (repository / "pkg" / "sub" / "mod.py").write_text("y = 3\n")  # the bug
    git(repository, "init", "-q")
    git(repository, "add", "-A")
    expected = git(repository, "write-tree")
    assert base_tree(site, "pkg", {"pkg/sub/mod.py": b"y = 3\n"}) == expected
    assert base_tree(site, "pkg", {}) != expected


def test_prepare_removes_what_the_base_did_not_track_and_puts_the_tests_back(
    world: Path,
) -> None:
    root = world / "testbed"
    tree = make_repository(root)
    (root / "pkg" / "core.py").write_text("def half(n):\n    return n // 2\n")  # the fix
    (root / "sitecustomize.py").write_text("import os\n")
    (root / "pkg" / "tests" / "conftest.py").write_text("import os\n")
    (root / "pkg" / "__pycache__").mkdir()
    (root / "pkg" / "__pycache__" / "core.cpython-311.pyc").write_bytes(b"\0")
    (root / "pkg" / "tests" / "test_core.py").write_text("def test_half():\n    pass\n")
    (root / "pkg" / "conftest.py").unlink()
    (root / "pkg" / "core.py").chmod(0o4777)
    os.mkfifo(root / "pkg" / "pipe")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "cheat")
    git(
        root,
        "replace",
        "-f",
        git(root, "rev-parse", "HEAD~1:pkg/tests/test_core.py"),
        "HEAD:pkg/tests/test_core.py",
    )
    scratch = world / "scratch"
    scratch.mkdir()

    assert prepare(Config(tree, []), root, scratch, rewards=world) == 0

    assert not (world / "reward.txt").exists()
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".git" not in p.parts) == [
        ".gitignore", "pkg", "pkg/__init__.py", "pkg/conftest.py", "pkg/core.py", "pkg/tests",
        "pkg/tests/__init__.py", "pkg/tests/test_core.py",
    ]  # fmt: skip
    assert "assert half(4) == 2" in (root / "pkg" / "tests" / "test_core.py").read_text()
    assert "n // 2" in (root / "pkg" / "core.py").read_text()  # the fix is kept
    assert (root / "pkg" / "core.py").stat().st_mode & 0o7777 == 0o755


def test_a_forged_object_scores_0_with_the_reason(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = world / "testbed"
    tree = make_repository(root)
    old = git(root, "rev-parse", "HEAD:pkg/tests/test_core.py")
    (root / "pkg" / "tests" / "test_core.py").write_text("def test_half():\n    pass\n")
    new = git(root, "hash-object", "-w", "pkg/tests/test_core.py")
    objects = root / ".git" / "objects"
    target = objects / old[:2] / old[2:]
    target.chmod(0o644)
    shutil.copy(objects / new[:2] / new[2:], target)
    scratch = world / "scratch"
    scratch.mkdir()

    assert prepare(Config(tree, []), root, scratch, rewards=world) == DAMAGED

    assert (world / "reward.txt").read_text() == "0\n"
    assert f"git object {old} does not hold what its id says" in capsys.readouterr().out


def test_a_missing_tree_scores_0(world: Path) -> None:
    root = world / "testbed"
    make_repository(root)
    scratch = world / "scratch"
    scratch.mkdir()
    absent = object_id("tree", b"100644 x\0" + bytes(20))  # (git knows the empty tree)
    assert prepare(Config(absent, []), root, scratch, rewards=world) == DAMAGED
    assert (world / "reward.txt").read_text() == "0\n"


def test_a_testbed_too_long_to_put_back_is_unusable(world: Path) -> None:
    """Millions of files left behind end in a 0 (``prepare`` turns ``Unusable`` into one),
    never in a verifier that runs out of time: removing checks the deadline at each file."""
    root = world / "testbed"
    make_repository(root)
    (root / "litter").mkdir()
    for number in range(100):
        (root / "litter" / str(number)).write_text("")
    deadline = Deadline()
    deadline.end = 0.0
    with pytest.raises(Unusable, match="takes more than"):
        clean(root, {".gitignore": Entry("100644", "")}, deadline)
    assert len(list((root / "litter").iterdir())) == 100


TESTS = """\
import pytest

def test_plain():
    pass

def test_broken():
    assert False

@pytest.mark.skip(reason="no")
def test_skipped():
    pass

@pytest.mark.parametrize("value", ["a/b", "c::d", "e[f]"])
def test_values(value):
    pass

class TestGroup:
    def test_method(self):
        pass
"""


def test_each_node_id_is_found_in_a_real_junit_report(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "tests").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "tests" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "tests" / "test_x.py").write_text(TESTS)
    report = tmp_path / "junit.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", "/dev/null",
         f"--rootdir={tmp_path}", f"--junitxml={report}", "pkg/tests/test_x.py"],
        cwd=tmp_path, capture_output=True, check=False,
    )  # fmt: skip
    outcomes = junit_outcomes(report.read_bytes())
    base = "pkg/tests/test_x.py::"
    expected = {
        "test_plain": "passed",
        "test_broken": "failure",
        "test_skipped": "skipped",
        "test_values[a/b]": "passed",
        "test_values[c::d]": "passed",
        "test_values[e[f]]": "passed",
        "TestGroup::test_method": "passed",
    }
    assert {name: outcomes.get(junit_address(base + name)) for name in expected} == expected
    assert len(outcomes) == len(expected)

    (tmp_path / "config").mkdir()
    assert judge(Config("", [base + "test_plain"]), report, rewards=tmp_path / "config") == 0
    assert (tmp_path / "config" / "reward.txt").read_text() == "1\n"
    judge(Config("", [base + "test_plain", base + "test_skipped"]), report, tmp_path / "config")
    assert (tmp_path / "config" / "reward.txt").read_text() == "0\n"
    judge(Config("", [base + "test_gone"]), report, tmp_path / "config")
    assert (tmp_path / "config" / "reward.txt").read_text() == "0\n"


def test_a_report_with_a_dtd_or_not_xml_is_refused() -> None:
    bomb = b'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "aaaa">]><testsuites/>'
    with pytest.raises(ValueError, match="DTD"):
        junit_outcomes(bomb)
    with pytest.raises(ValueError, match="not XML"):
        junit_outcomes(b"<testsuites><testcase")


def test_no_report_means_every_test_counts_as_not_passed(tmp_path: Path) -> None:
    os.symlink("/etc/hostname", tmp_path / "junit.xml")  # never followed
    assert judge(Config("", ["a.py::t"]), tmp_path / "junit.xml", rewards=tmp_path) == 0
    assert (tmp_path / "reward.txt").read_text() == "0\n"


@pytest.mark.parametrize(
    ("path", "restored"),
    [
        ("sympy/core/tests/test_basic.py", True),
        ("sympy/conftest.py", True),
        ("networkx/algorithms/tests/__init__.py", True),
        ("pkg/test_helpers.py", True),
        ("pkg/io_test.py", True),
        ("setup.cfg", True),
        ("pint/testsuite/helpers.py", True),  # a suite's helpers: an agent must not edit them
        ("pyflakes/test/harness.py", True),
        ("automat/_test/test_core.py", True),
        ("pyfakefs/pytest_tests/example.py", True),
        ("sympy/testing/quality_unicode.py", False),  # package code: a bug may be there
        ("sympy/core/basic.py", False),
    ],
)
def test_what_counts_as_a_test_file(path: str, restored: bool) -> None:
    assert is_test_file(path) is restored
