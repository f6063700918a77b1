"""``palaestra init``: the package it writes is complete, installable and passes its checks."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from palaestra.authoring import Status, check_environment, init_environment
from palaestra.cli.init import init_command
from palaestra.environment.finding.registry import available_environments, find_environment
from palaestra.errors import ConfigError
from tests.support.distribution import on_sys_path, write_distribution


def test_init_writes_the_package_files_named_after_the_environment(tmp_path: Path) -> None:
    scaffold = init_environment("Capital-Quiz", tmp_path / "quiz")
    assert (scaffold.dist, scaffold.module, scaffold.class_name) == (
        "capital-quiz",
        "capital_quiz",
        "CapitalQuiz",
    )
    written = sorted(p.relative_to(tmp_path / "quiz").as_posix() for p in scaffold.files)
    assert written == [
        "README.md",
        "capital_quiz/__init__.py",
        "capital_quiz/environment.py",
        "capital_quiz/tasks.jsonl",
        "pyproject.toml",
        "tests/test_environment.py",
    ]
    for path in scaffold.files:
        assert "{{" not in path.read_text(encoding="utf-8"), path  # every placeholder filled
    source = scaffold.environment_file.read_text(encoding="utf-8")
    assert "class CapitalQuiz(Environment):" in source and 'name = "capital_quiz"' in source
    tasks = (tmp_path / "quiz/capital_quiz/tasks.jsonl").read_text(encoding="utf-8")
    assert len(tasks.splitlines()) == 5


def test_a_freshly_initialised_environment_passes_every_check_but_the_model_ones(
    tmp_path: Path,
) -> None:
    scaffold = init_environment("my-env", tmp_path / "my-env")
    report = check_environment(f"{scaffold.environment_file}:MyEnv", smoke=None)
    assert report.ok, report.failures
    statuses = {check.name: check.status for check in report.checks}
    assert statuses == {
        "tool schemas": Status.PASS,
        "tool docs": Status.PASS,
        "example tasks": Status.PASS,
        "task tools": Status.PASS,
        "golden answers": Status.PASS,
        "generated tasks": Status.SKIP,  # the scaffold writes no generator
        "seeded start": Status.PASS,
        "oracle": Status.SKIP,
        "null agent": Status.SKIP,
        "smoke run": Status.SKIP,
        "sessions closed": Status.SKIP,
        "framework CPU": Status.SKIP,
    }
    assert report.check("golden answers").details == {"tasks": 5}


def test_the_generated_entry_point_makes_palaestra_envs_list_the_environment(
    tmp_path: Path,
) -> None:
    scaffold = init_environment("my-env", tmp_path / "src")
    pyproject = tomllib.loads((tmp_path / "src/pyproject.toml").read_text(encoding="utf-8"))
    points = pyproject["project"]["entry-points"]
    package = tmp_path / "src/my_env"
    modules = {f"my_env/{p.name}": p.read_text(encoding="utf-8") for p in package.iterdir()}
    site = tmp_path / "site"
    write_distribution(site, pyproject["project"]["name"], modules=modules, entry_points=points)
    with on_sys_path(site):
        entries, problems = available_environments()
        found = {entry.name: entry for entry in entries}
        assert problems == []
        assert found["my_env"].source == "plug-in my_env.environment:MyEnv"
        entry = find_environment("my_env")
        assert entry.environment.__name__ == scaffold.class_name
        assert entry.example_tasks == site / "my_env/tasks.jsonl"  # shipped beside the module
    assert pyproject["tool"]["setuptools"]["package-data"] == {"my_env": ["tasks.jsonl"]}


def test_the_generated_tests_pass(tmp_path: Path) -> None:
    init_environment("my-env", tmp_path / "my-env")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path / "my-env",
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout


def test_init_refuses_a_directory_that_is_not_empty_and_leaves_it_alone(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ConfigError, match="exists and is not empty"):
        init_environment("my-env", tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_init_writes_into_an_empty_directory(tmp_path: Path) -> None:
    scaffold = init_environment("quiz", tmp_path)
    assert scaffold.environment_file == tmp_path / "quiz/environment.py"
    assert scaffold.environment_file.is_file()


@pytest.mark.parametrize(
    ("name", "complaint"),
    [
        ("2fast", "starting with a letter .*; try 'env-2fast'$"),
        ("my env", "a name is ASCII letters, digits, '-' and '_'.*; try 'my-env'$"),
        ("class", "not a Python keyword .*; try 'class-env'$"),
        ("café", "a name is ASCII letters.*; try 'cafe'$"),  # before: written, not installable
        ("quiz-", "ending with a letter or digit.*; try 'quiz'$"),
        ("_quiz", "starting with a letter .*; try 'quiz'$"),
        ("日本", r"a name is ASCII letters.*Python package\)$"),  # nothing near to suggest
        ("weather", "is a built-in environment's name"),
        ("json", "would shadow the Python module"),
    ],
)
def test_a_name_that_cannot_be_an_environment_is_refused_in_one_line(
    tmp_path: Path, name: str, complaint: str
) -> None:
    with pytest.raises(ConfigError, match=complaint) as refused:
        init_environment(name, tmp_path / "out")
    assert "\n" not in str(refused.value)
    assert not (tmp_path / "out").exists()


def test_the_init_command_writes_the_package_and_says_what_to_run_next(tmp_path: Path) -> None:
    result = CliRunner().invoke(init_command, ["my-env", "--dir", str(tmp_path / "pkg")])
    assert result.exit_code == 0, result.output
    assert f"palaestra test {tmp_path / 'pkg/my_env/environment.py'}" in result.output
    assert (tmp_path / "pkg/pyproject.toml").is_file()
    again = CliRunner().invoke(init_command, ["my-env", "--dir", str(tmp_path / "pkg")])
    assert again.exit_code == 1
    assert again.output.count("\n") == 1 and "exists and is not empty" in again.output


def test_a_name_with_a_dash_gives_a_package_pip_installs_and_python_imports(
    tmp_path: Path,
) -> None:
    scaffold = init_environment("my-env", tmp_path / "my-env")
    site = tmp_path / "site"
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--quiet",
            "--target",
            str(site),
            str(scaffold.directory),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert (site / "my_env/tasks.jsonl").is_file()
    metadata = next(site.glob("my_env-0.1.0.dist-info")) / "entry_points.txt"
    assert "my_env = my_env.environment:MyEnv" in metadata.read_text(encoding="utf-8")
    with on_sys_path(site):
        assert find_environment("my_env").environment.__name__ == "MyEnv"
