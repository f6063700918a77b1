"""The import check: a suite's modules imported for real, in fresh interpreters."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from palaestra.environment.finding import import_check
from palaestra.environment.finding.import_check import import_failures

LAZY = """\
def __getattr__(name):
    try:
        from lazy_suite._client import Client
    except ImportError as error:
        raise ImportError(f"Failed to import {name}: {error}") from error
    return Client
"""


@pytest.fixture
def suite_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder on the path of this and every child interpreter, and a cache of its own."""
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(import_check, "_cache_dir", lambda: tmp_path / "cache")
    return tmp_path


def test_modules_that_import_pass_and_a_missing_one_is_named(suite_path: Path) -> None:
    (suite_path / "whole_suite.py").write_text("import json\n")
    (suite_path / "broken_suite.py").write_text("import palaestra_surely_absent_module\n")
    failures = import_failures(
        {"whole": ["whole_suite", "json"], "broken": ["whole_suite", "broken_suite"]}
    )
    assert failures == {"broken": "palaestra_surely_absent_module"}


def test_a_missing_module_behind_a_lazy_import_is_found_through_its_cause(
    suite_path: Path,
) -> None:
    """Cohere's package imports its client on first attribute access and wraps the missing
    module in an ``ImportError`` of its own: the check names the missing module."""
    package = suite_path / "lazy_suite"
    package.mkdir()
    (package / "__init__.py").write_text(LAZY)
    (package / "_client.py").write_text("from tokenizers_surely_absent import Tokenizer\n")
    (suite_path / "uses_lazy.py").write_text("from lazy_suite import Client\n")
    failures = import_failures({"dojo": ["uses_lazy"]})
    assert failures == {"dojo": "tokenizers_surely_absent"}


def test_a_module_that_fails_otherwise_is_named_with_why(suite_path: Path) -> None:
    (suite_path / "raising_suite.py").write_text("raise RuntimeError('no data file')\n")
    failures = import_failures({"raising": ["raising_suite"]})
    assert failures == {"raising": "raising_suite (RuntimeError: no data file)"}


def test_the_answer_is_kept_until_what_is_installed_or_asked_changes(suite_path: Path) -> None:
    (suite_path / "broken_suite.py").write_text("import palaestra_surely_absent_module\n")
    assert import_failures({"broken": ["broken_suite"]}) != {}
    assert len(list((suite_path / "cache").iterdir())) == 1
    (suite_path / "broken_suite.py").write_text("")
    assert import_failures({"broken": ["broken_suite"]}) != {}, "the kept answer"
    assert import_failures({"broken": ["broken_suite", "json"]}) == {}


def test_the_working_directory_on_the_path_as_empty_text_or_its_path_is_one_answer(
    suite_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -c`` puts "" on the path for the working directory, ``python -m`` its path: the
    same search path, asked once."""
    (suite_path / "whole_suite.py").write_text("import json\n")
    monkeypatch.chdir(suite_path)
    monkeypatch.syspath_prepend("")
    assert import_failures({"whole": ["whole_suite"]}) == {}
    monkeypatch.setattr(sys, "path", [os.getcwd() if p == "" else p for p in sys.path])
    assert import_failures({"whole": ["whole_suite"]}) == {}
    assert len(list((suite_path / "cache").iterdir())) == 1
