"""The catalogue: every built-in described once, read without importing any environment."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from palaestra.environment.finding.catalogue import (
    builtin_tables,
    catalogue,
    entry_from_class,
    entry_from_table,
    environment_version,
    missing,
)
from palaestra.environment.finding.registry import builtin_names
from palaestra.errors import ConfigError

ROOT = Path(__file__).resolve().parents[3]
ENVS = ROOT / "palaestra" / "envs"
_NUMBER = re.compile(r"\d+\.\d+|\b\d+\b")


def test_every_builtin_environment_has_exactly_one_catalogue_table() -> None:
    assert sorted(builtin_tables()) == builtin_names()
    entries, problems = catalogue()
    assert problems == []
    assert all(entry.category and entry.summary for entry in entries)


def test_each_baseline_is_the_one_its_readme_gives() -> None:
    """The numbers come from the README's measured baseline; a README with a baseline section
    has its numbers in the catalogue, and one without has none there."""
    entries = {entry.name: entry for entry in catalogue()[0]}
    for name in builtin_names():
        readme = (ENVS / name / "README.md").read_text(encoding="utf-8")
        heading = re.search(r"^#+ .*baseline.*$", readme, re.IGNORECASE | re.MULTILINE)
        baseline = entries[name].baseline
        assert (heading is not None) == (baseline is not None), name
        if heading is None or baseline is None:
            continue
        section = readme[heading.end() :]
        numbers = {float(found) for found in _NUMBER.findall(section)}
        for value in (baseline.score, *baseline.interval, float(baseline.tasks)):
            assert value in numbers, f"{name}: {value} is not in its README's baseline section"


def test_listing_the_catalogue_imports_no_environment_nor_suite_package() -> None:
    probe = (
        "import sys\n"
        "from palaestra.environment.finding.catalogue import catalogue\n"
        "entries, _ = catalogue()\n"
        "assert len(entries) > 20\n"
        "heavy = ('palaestra.envs.', 'bfcl_eval', 'tau2', 'agentdojo', 'reasoning_gym')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_what_is_not_installed_is_named_and_what_is_installed_is_not() -> None:
    assert missing(("orjson", "surely-not-a-distribution-xyz"), ("sh", "no-such-command-xyz")) == (
        "surely-not-a-distribution-xyz",
        "no-such-command-xyz",
    )


def test_a_wrong_catalogue_field_is_one_line_naming_the_table_and_field() -> None:
    with pytest.raises(ConfigError, match=r"catalogue.toml \[mine\] summary"):
        entry_from_table("mine", {"category": "math"})
    with pytest.raises(ConfigError, match=r"\[mine\] tasks: expected a number of tasks"):
        entry_from_table("mine", {"category": "math", "summary": "s", "tasks": "many"})
    table = {
        "category": "math",
        "summary": "s",
        "baseline": {"score": 0.9, "interval": [0.1, 0.5], "tasks": 3, "command": "c"},
    }
    with pytest.raises(ConfigError, match=r"\[mine\] baseline interval: expected \[low, high\]"):
        entry_from_table("mine", table)


def test_a_built_in_entry_reads_its_table_whole() -> None:
    entry = entry_from_table(
        "mine",
        {
            "category": "search",
            "summary": "find it",
            "tasks": 1200,
            "generator": True,
            "requires": ["surely-not-a-distribution-xyz"],
            "install": "pip install it",
            "peer": "NeMo Gym: it",
            "baseline": {"score": 0.25, "interval": [0.1, 0.5], "tasks": 20, "command": "c"},
        },
    )
    assert entry.tasks_text() == "1,200 + generator"
    assert entry.missing == ("surely-not-a-distribution-xyz",) and not entry.installed
    assert entry.baseline_text() == "0.250 [0.100, 0.500] n=20"
    assert entry.as_json()["baseline"]["interval"] == [0.1, 0.5]


def test_each_readme_tells_the_history_of_every_version_down_from_the_current_one() -> None:
    """A built-in's README ends its history at the version the catalogue gives it, newest
    first, one entry per version: a bump that is not explained fails here."""
    entries = {entry.name: entry for entry in catalogue()[0]}
    for name in builtin_names():
        readme = (ENVS / name / "README.md").read_text(encoding="utf-8")
        _, heading, history = readme.partition("\n## Version history\n")
        assert heading, f"{name}: its README has no 'Version history' section"
        told = [int(v) for v in re.findall(r"^- \*\*v(\d+)\*\*:", history, re.MULTILINE)]
        assert told == list(range(entries[name].version, 0, -1)), name


def test_a_built_in_version_is_its_table_s_and_any_other_its_class_s() -> None:
    from palaestra import Environment
    from palaestra.envs.games.environment import Games
    from palaestra.envs.weather.environment import Weather

    class Mine(Environment):
        version = 3

    assert environment_version(Games) == 2  # games' lenient reading of moves
    assert environment_version(Weather) == 1  # no version in its table: the first
    assert environment_version(Mine) == 3
    assert entry_from_class("mine", Mine, "plug-in m:Mine").version == 3
    assert entry_from_table("mine", {"category": "math", "summary": "s"}).version == 1
    with pytest.raises(ConfigError, match=r"\[mine\] version: expected a version \(1, 2, ...\)"):
        entry_from_table("mine", {"category": "math", "summary": "s", "version": "2"})
