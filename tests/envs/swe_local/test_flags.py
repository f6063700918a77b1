"""The flags are measured: a statement that shows the fix, the same broken code twice, tests
that disagree between runs, failing tests that never call the changed function."""

from __future__ import annotations

from palaestra.envs.swe_local.flags import (
    Observations,
    difficulty,
    duplicates,
    leaks_fix,
    off_target,
)
from palaestra.envs.swe_local.worker import patch
from tests.envs.swe_local.lines import line

GOLD = patch("m.py", "if x < n:\n    y = 1\n", "if x <= n:\n    y = 1\n")


def test_a_statement_showing_the_fixed_line_or_its_tokens_leaks_the_fix() -> None:
    assert leaks_fix("Try `if x <= n:` instead.", GOLD)
    assert leaks_fix("maybe x<=n would do", GOLD)  # the tokens around the change
    assert not leaks_fix("assert clamp(5) == 5 fails: got 4", GOLD)
    assert not leaks_fix("x < n is checked", GOLD)  # the bug's text is not the fix


def test_difficulty_is_the_gold_patchs_lines_and_files() -> None:
    assert difficulty(GOLD) == {"lines": 1, "files": 1, "level": "easy"}
    three = patch("m.py", "a\nb\nc\nd\n", "a\nB\nC\nD\n")
    assert difficulty(three) == {"lines": 3, "files": 1, "level": "medium"}
    assert difficulty(three + GOLD)["level"] == "hard"  # two files


def test_the_same_broken_tree_is_a_duplicate_of_the_first_by_id() -> None:
    rows = [line(instance_id="mpmath__b__b__1"), line(), line(instance_id="mpmath__c__c__1")]
    rows[2] = {**rows[2], "base_tree": "1" * 40}
    duplicates(rows)
    owners = {row["instance_id"]: row["flags"]["duplicate_of"] for row in rows}
    assert owners == {
        "mpmath__b__b__1": None,
        "mpmath__demo__half__0123abcd": "mpmath__b__b__1",
        "mpmath__c__c__1": None,
    }


def test_outcomes_that_differ_between_runs_are_flaky() -> None:
    runs = Observations()
    runs.add({"a": "passed", "b": "passed"}, ["a", "b"])
    runs.add({"a": "passed", "b": "failed"}, ["a", "b"])
    assert runs.disagree(["b"]) and not runs.disagree(["a"])
    runs.add({"a": "passed"}, ["a", "b"])  # a test missing from a run disagrees too
    assert runs.outcomes["b"][-1] == "missing"


def test_failing_tests_that_never_call_the_changed_function_are_off_target() -> None:
    covered = {"t::a": ["m.py:1", "m.py:9"], "t::b": ["m.py:9"]}
    assert not off_target(covered, ["t::a"], {"m.py:1"})
    assert off_target(covered, ["t::b"], {"m.py:1"})
    # A class's setup is recorded in its first test: its other tests count it too (a
    # networkx task was flagged although its class's setup_class built the broken tree).
    in_class = {"t::C::first": ["m.py:1"], "t::C::second": ["m.py:9"], "t::D::x": ["m.py:9"]}
    assert not off_target(in_class, ["t::C::second"], {"m.py:1"})
    assert off_target(in_class, ["t::D::x"], {"m.py:1"})
