"""SWE-bench instance files become Harbor folders over the user's images; bad ones, one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from palaestra.envs.swe_local.swebench import convert, main, read_instances
from palaestra.errors import ConfigError
from palaestra.wire.harbor import read_tasks

FIX = "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
TEST_PATCH = (
    "--- a/tests/test_mod.py\n+++ b/tests/test_mod.py\n@@ -1 +1,2 @@\n import pkg\n"
    "+assert pkg.mod.x == 2\n"
)


def instance(**changes: Any) -> dict[str, Any]:
    base = {
        "instance_id": "owner__repo-123",
        "repo": "owner/repo",
        "base_commit": "0123456789abcdef0123456789abcdef01234567",
        "patch": FIX,
        "test_patch": TEST_PATCH,
        "problem_statement": "x should be 2",
        "FAIL_TO_PASS": json.dumps(["tests/test_mod.py::test_x"]),
        "PASS_TO_PASS": ["tests/test_mod.py::test_y"],
        "version": "1.0",
    }
    return base | changes


def write(path: Path, *rows: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_converted_folders_read_back(tmp_path: Path) -> None:
    source = write(
        tmp_path / "in.jsonl", instance(), instance(instance_id="b__c-1", image_name="mine:1")
    )
    assert convert(source, tmp_path / "out") == 2
    first, second = read_tasks(tmp_path / "out")
    assert first.path.name == "b__c-1"
    assert (first.path / "environment" / "Dockerfile").read_text().startswith("FROM mine:1\n")
    dockerfile = (second.path / "environment" / "Dockerfile").read_text()
    assert dockerfile.startswith("FROM swebench/sweb.eval.x86_64.owner_1776_repo-123:latest\n")
    assert second.has_solution and "x should be 2" in second.instruction
    assert second.config.environment.network_mode == "no-network"
    test_sh = (second.path / "tests" / "test.sh").read_text()
    assert (
        "git checkout -q 0123456789abcdef0123456789abcdef01234567 -- tests/test_mod.py" in test_sh
    )
    assert "tests/test_mod.py::test_x tests/test_mod.py::test_y" in test_sh
    assert (second.path / "tests" / "test.patch").read_text() == TEST_PATCH
    assert FIX in (second.path / "solution" / "solve.sh").read_text()


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"test_patch": ""}, "in.jsonl:2: field 'test_patch' is missing"),
        ({"FAIL_TO_PASS": "not json"}, "in.jsonl:2: field 'FAIL_TO_PASS' is text but not"),
        ({"FAIL_TO_PASS": []}, "in.jsonl:2: field 'FAIL_TO_PASS' is empty"),
        ({"instance_id": "a/b"}, "in.jsonl:2: field 'instance_id' must be a name"),
    ],
)
def test_bad_instances_are_refused_naming_file_line_and_field(
    tmp_path: Path, row: dict[str, Any], message: str
) -> None:
    source = write(tmp_path / "in.jsonl", instance(), instance(**row))
    with pytest.raises(ConfigError) as caught:
        read_instances(source)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


BUG = "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1 @@\n-x = 2\n+x = 1\n"


def smith_row(**changes: Any) -> dict[str, Any]:
    """A row as SWE-smith's datasets publish them: its patch is the bug."""
    base = {
        "instance_id": "owner__repo.abc123.func_pm_op_swap__x1",
        "repo": "swesmith/owner__repo.abc123",
        "patch": BUG,
        "FAIL_TO_PASS": ["tests/test_mod.py::test_x"],
        "PASS_TO_PASS": ["tests/test_other.py::test_y"],
        "image_name": "jyangballin/swesmith.x86_64.owner_1776_repo.abc123",
        "problem_statement": "x is 1, should be 2",
    }
    return base | changes


def test_a_swe_smith_row_commits_its_bug_and_reverses_it_as_the_gold(tmp_path: Path) -> None:
    source = write(tmp_path / "in.jsonl", smith_row())
    assert convert(source, tmp_path / "out") == 1
    (task,) = read_tasks(tmp_path / "out")
    environment = task.path / "environment"
    dockerfile = (environment / "Dockerfile").read_text()
    assert dockerfile.startswith("FROM jyangballin/swesmith.x86_64.owner_1776_repo.abc123\n")
    assert "git apply /tmp/bug.patch" in dockerfile and "commit -qm base" in dockerfile
    assert (environment / "bug.patch").read_text() == BUG
    solve = (task.path / "solution" / "solve.sh").read_text()
    assert "git apply -v -R -" in solve and BUG in solve
    test_sh = (task.path / "tests" / "test.sh").read_text()
    assert "tests/test_mod.py tests/test_other.py" in test_sh  # put back before the run
    assert "test.patch" not in test_sh and not (task.path / "tests" / "test.patch").exists()
    assert task.config.metadata["format"] == "swe-smith"


def test_a_swe_rebench_row_gives_its_image_and_test_command(tmp_path: Path) -> None:
    row = instance(
        docker_image="swerebench/sweb.eval.x86_64.owner_1776_repo-123",
        install_config={"test_cmd": ["pytest -rA -p no:cacheprovider"], "python": "3.11"},
        meta={"llm_score": {"difficulty_score": 1}},
        license_name="MIT",
    )
    source = write(tmp_path / "in.jsonl", row)
    assert convert(source, tmp_path / "out") == 1
    (task,) = read_tasks(tmp_path / "out")
    dockerfile = (task.path / "environment" / "Dockerfile").read_text()
    assert dockerfile.startswith("FROM swerebench/sweb.eval.x86_64.owner_1776_repo-123\n")
    test_sh = (task.path / "tests" / "test.sh").read_text()
    assert "pytest -rA -p no:cacheprovider tests/test_mod.py::test_x" in test_sh
    assert "git apply -v /tests/test.patch" in test_sh
    assert task.config.metadata["format"] == "swe-rebench"
    assert task.config.metadata["license_name"] == "MIT"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (smith_row(image_name=""), "field 'image_name' is missing (SWE-smith's format)"),
        (smith_row(problem_statement=None), "field 'problem_statement' is missing"),
        (instance(install_config="{no"), "field 'install_config' is text but not JSON"),
        (instance(install_config={"test_cmd": 3}), "field 'install_config.test_cmd' must be"),
    ],
)
def test_bad_swe_smith_and_swe_rebench_rows_are_one_line(
    tmp_path: Path, row: dict[str, Any], message: str, capsys: Any
) -> None:
    source = write(tmp_path / "in.jsonl", row)
    assert main([str(source), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"in.jsonl:1: {message}" in err
    assert not (tmp_path / "out").exists()
