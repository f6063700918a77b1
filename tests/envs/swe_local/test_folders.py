"""A manifest line written as a Harbor folder reads back through palaestra's reader, with a
stable digest; the folders' cache writes a line once and a changed line anew."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from palaestra.envs.swe_local.convert import line_from_folder
from palaestra.envs.swe_local.folders import (
    BUG_PATCH,
    git_blob,
    materialize,
    materialize_set,
    redact,
    solve_script,
    write_instance,
)
from palaestra.envs.swe_local.languages import language
from palaestra.envs.swe_local.languages.python import VERIFIER
from palaestra.wire.harbor import folder_digest, read_task, read_tasks
from tests.envs.swe_local.lines import line

PYTHON = language("python")


def test_written_folder_reads_back_with_a_stable_digest(tmp_path: Path) -> None:
    folder = write_instance(line(), tmp_path / "task")
    task = read_task(folder)
    assert task.has_solution
    assert task.name == "palaestra/mpmath__demo__half__0123abcd"
    assert task.config.environment.network_mode == "no-network"
    assert task.config.agent.timeout_sec == 1800.0
    assert task.config.verifier.timeout_sec == 300.0
    assert task.config.metadata["license"] == "BSD-3-Clause"
    assert task.config.metadata["difficulty"] == "easy"
    assert task.digest == folder_digest(folder)
    again = write_instance(line(), tmp_path / "again")
    assert folder_digest(again) == task.digest
    (folder / "environment" / BUG_PATCH).write_text("changed\n")
    assert folder_digest(folder) != task.digest


def test_folder_files(tmp_path: Path) -> None:
    folder = write_instance(line(), tmp_path / "task")
    assert (folder / "environment" / BUG_PATCH).read_text() == line()["bug"]
    assert (folder / "tests" / "test.sh").stat().st_mode & 0o100
    config = json.loads((folder / "tests" / "config.json").read_text())
    assert config["FAIL_TO_PASS"] == ["mpmath/tests/test_demo.py::test_half"]
    assert config["repo"] == "mpmath/mpmath"
    assert set(config) >= {"instance_id", "package", "version", "PASS_TO_PASS", "base_tree"}
    assert config["base_tree"] == line()["base_tree"]
    assert (folder / "tests" / "verify.py").read_text() == VERIFIER.read_text()
    solve = (folder / "solution" / "solve.sh").read_text()
    assert "+    return n // 2" in solve  # the fix: the reverse of the bug
    instruction = (folder / "instruction.md").read_text()
    assert instruction.startswith(line()["statement"].rstrip())
    assert "assert half(4) == 2" in instruction and "/testbed" in instruction
    assert "python3 -m pytest -p no:cacheprovider mpmath/tests/test_demo.py" in instruction
    assert "n % 2" not in instruction and "arith" not in instruction  # never the mutation


def test_dockerfiles_of_a_repository_share_all_but_the_bug_layer() -> None:
    first = PYTHON.dockerfile(line(repo="sympy", files=["sympy/core/numbers.py"]))
    second = PYTHON.dockerfile(line(repo="sympy", files=["sympy/sets/sets.py"]))
    prefix = PYTHON.dockerfile_prefix("sympy")
    assert first.startswith(prefix) and second.startswith(prefix)
    assert first.startswith("# The machine") and "FROM debian:bookworm-slim\n" in prefix
    assert "--no-install-recommends python3 python3-pytest python3-sympy git patch" in prefix
    tail = first.removeprefix(prefix).splitlines()
    assert tail[0] == f"COPY {BUG_PATCH} /tmp/{BUG_PATCH}"
    assert "sympy/core/__pycache__/numbers.cpython-*.pyc" in tail[1]
    assert "git add -- sympy/core/numbers.py && git commit" in tail[2]
    assert PYTHON.dockerfile_prefix("networkx") != prefix


def test_solve_script_refuses_its_own_marker() -> None:
    with pytest.raises(ValueError, match="PALAESTRA_FIX"):
        solve_script("+PALAESTRA_FIX\n")


def test_git_blob_is_gits_object_id() -> None:
    assert git_blob(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


def test_a_line_is_materialized_once_and_a_changed_line_anew(tmp_path: Path) -> None:
    first = materialize(line(), tmp_path)
    assert read_task(first).name == "palaestra/mpmath__demo__half__0123abcd"
    (first / "instruction.md").write_text("touched\n")  # a second call does not rewrite it
    assert materialize(line(), tmp_path) == first
    assert (first / "instruction.md").read_text() == "touched\n"
    changed = materialize(line(seed=7), tmp_path)
    assert changed != first and changed.name == first.name
    assert read_task(changed).config.metadata["seed"] == 7
    assert not list(tmp_path.glob("*/.*partial"))


def test_a_set_of_lines_is_a_directory_of_their_folders(tmp_path: Path) -> None:
    lines = [line(), line(instance_id="mpmath__demo__half__99999999")]
    view = materialize_set(lines, tmp_path)
    assert materialize_set(list(reversed(lines)), tmp_path) == view  # the same lines, the same
    names = [task.path.name for task in read_tasks(view)]
    assert names == ["mpmath__demo__half__0123abcd", "mpmath__demo__half__99999999"]
    assert materialize_set(lines[:1], tmp_path) != view


def test_a_folder_of_the_earlier_format_converts_back_to_its_line(tmp_path: Path) -> None:
    original = line()
    folder = write_instance(original, tmp_path / original["instance_id"])
    again = line_from_folder(folder)
    for field in ("bug", "patch", "FAIL_TO_PASS", "PASS_TO_PASS", "base_tree", "files", "kind"):
        assert again[field] == original[field], field
    assert again["statement"] == original["statement"]
    assert again["functions"] == ["half"] and again["source"] == "python3-mpmath"


def test_a_traceback_quoting_the_mutated_line_is_redacted_from_the_statement() -> None:
    bug = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-    return f(a, b)\n+    return f(b, a)\n"
    text = (
        '```\n  File "/testbed/m.py", line 1, in g\n    return f(b, a)\n'
        "           ^^^^^^^\nTypeError: nope\n```\n"
    )
    redacted = redact(text, bug)
    assert "return f(b, a)" not in redacted and "^^^" not in redacted
    assert "TypeError: nope" in redacted and 'File "/testbed/m.py"' in redacted
    assert redact("return f(a, b) is fine\n", bug) == "return f(a, b) is fine\n"


def test_a_repository_whose_tests_need_more_installs_it_in_its_machine() -> None:
    """yaql's tests import testtools, which python3-yaql does not depend on: without it in
    the machine every yaql task scored 0 for its oracle (seen on the rootfs provider)."""
    prefix = PYTHON.dockerfile_prefix("yaql")
    assert "python3-pytest python3-yaql python3-testtools git patch" in prefix
    assert "python3-testtools" not in PYTHON.dockerfile_prefix("toolz")
