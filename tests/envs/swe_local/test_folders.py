"""An instance written as a Harbor folder reads back through palaestra's reader, with its digest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from palaestra.envs.swe_local.folders import (
    BUG_PATCH,
    VERIFIER,
    dockerfile,
    dockerfile_prefix,
    git_blob,
    solve_script,
    write_instance,
)
from palaestra.envs.swe_local.generate import patch
from palaestra.wire.harbor import folder_digest, read_task

BEFORE = "def half(n):\n    return n // 2\n"
AFTER = "def half(n):\n    return n % 2\n"


def record(**changes: Any) -> dict[str, Any]:
    base = {
        "instance_id": "mpmath__demo__half__0123abcd",
        "package": "mpmath",
        "version": "1.2.1-2",
        "seed": 0,
        "module": "mpmath/demo.py",
        "function": "half",
        "kind": "arith",
        "mutation": "mpmath/demo.py:arith@2:12",
        "difficulty": "easy",
        "test_file": "mpmath/tests/test_demo.py",
        "FAIL_TO_PASS": ["mpmath/tests/test_demo.py::test_half"],
        "PASS_TO_PASS": ["mpmath/tests/test_demo.py::test_other"],
        "messages": {
            "mpmath/tests/test_demo.py::test_half": {
                "statement": "assert half(4) == 2",
                "error": "assert 0 == 2\n +  where 0 = half(4)",
            }
        },
        "bug_patch": patch("mpmath/demo.py", BEFORE, AFTER),
        "fix_patch": patch("mpmath/demo.py", AFTER, BEFORE),
        "test_files": {"mpmath/tests/test_demo.py": git_blob(b"x\n")},
        "base_tree": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    }
    return base | changes


def test_written_folder_reads_back_with_a_stable_digest(tmp_path: Path) -> None:
    folder = write_instance(record(), tmp_path / "task")
    task = read_task(folder)
    assert task.has_solution
    assert task.name == "palaestra/mpmath__demo__half__0123abcd"
    assert task.config.environment.network_mode == "no-network"
    assert task.config.agent.timeout_sec == 1800.0
    assert task.config.verifier.timeout_sec == 300.0
    assert task.config.metadata["license"] == "BSD-3-Clause"
    assert task.digest == folder_digest(folder)
    again = write_instance(record(), tmp_path / "again")
    assert folder_digest(again) == task.digest
    (folder / "environment" / BUG_PATCH).write_text("changed\n")
    assert folder_digest(folder) != task.digest


def test_folder_files(tmp_path: Path) -> None:
    folder = write_instance(record(), tmp_path / "task")
    assert (folder / "environment" / BUG_PATCH).read_text() == record()["bug_patch"]
    assert (folder / "tests" / "test.sh").stat().st_mode & 0o100
    config = json.loads((folder / "tests" / "config.json").read_text())
    assert config["FAIL_TO_PASS"] == ["mpmath/tests/test_demo.py::test_half"]
    assert config["repo"] == "mpmath/mpmath"
    assert set(config) >= {"instance_id", "package", "version", "PASS_TO_PASS", "test_files"}
    assert config["base_tree"] == record()["base_tree"]
    assert (folder / "tests" / "verify.py").read_text() == VERIFIER.read_text()
    solve = (folder / "solution" / "solve.sh").read_text()
    assert "+    return n // 2" in solve  # the fix: the reverse of the bug
    instruction = (folder / "instruction.md").read_text()
    assert "assert half(4) == 2" in instruction
    assert "/testbed" in instruction
    assert "n % 2" not in instruction and "arith" not in instruction  # never the mutation


def test_dockerfiles_of_a_package_share_all_but_the_bug_layer() -> None:
    first = dockerfile("sympy", "sympy/core/numbers.py")
    second = dockerfile("sympy", "sympy/sets/sets.py")
    prefix = dockerfile_prefix("sympy")
    assert first.startswith(prefix) and second.startswith(prefix)
    assert first.startswith("# The machine") and "FROM debian:bookworm-slim\n" in prefix
    assert "--no-install-recommends python3 python3-pytest python3-sympy git patch" in prefix
    tail = first.removeprefix(prefix).splitlines()
    assert tail[0] == f"COPY {BUG_PATCH} /tmp/{BUG_PATCH}"
    assert "sympy/core/__pycache__/numbers.cpython-*.pyc" in tail[1]
    assert dockerfile_prefix("networkx") != prefix


def test_solve_script_refuses_its_own_marker() -> None:
    with pytest.raises(ValueError, match="PALAESTRA_FIX"):
        solve_script("+PALAESTRA_FIX\n")


def test_git_blob_is_gits_object_id() -> None:
    assert git_blob(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
