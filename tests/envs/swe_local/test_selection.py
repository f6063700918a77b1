"""``--filter`` selects on flags, language, repository and difficulty; ``--summary`` counts."""

from __future__ import annotations

import pytest

from palaestra.envs.swe_local.selection import parse_filter, selected, summary
from palaestra.errors import ConfigError
from tests.envs.swe_local.lines import line

FLAGS = {"flaky": False, "slow": False, "duplicate_of": None, "leaks_fix": False}
LINES = [
    line(),
    line(
        instance_id="mpmath__b__b__1",
        flags={**FLAGS, "off_target": True},
        difficulty={"lines": 3, "files": 1, "level": "medium"},
    ),
    line(
        repo="sympy",
        instance_id="sympy__c__c__1",
        kind="combined",
        kinds=["compare", "arith"],
        flags={**FLAGS, "duplicate_of": "sympy__a__a__1", "off_target": False},
    ),
]


def _ids(text: str) -> list[str]:
    return [row["instance_id"] for row in selected(LINES, parse_filter(text))]


def test_filters_select_on_fields_and_flags() -> None:
    assert _ids("repo=sympy") == ["sympy__c__c__1"]
    assert _ids("repo=sympy|mpmath,difficulty=medium") == ["mpmath__b__b__1"]
    assert _ids("off_target=true") == ["mpmath__b__b__1"]
    assert _ids("duplicate=true") == ["sympy__c__c__1"]
    assert _ids("clean") == ["mpmath__demo__half__0123abcd"]
    assert _ids("kind=compare") == ["sympy__c__c__1"]  # one of a combined task's kinds
    assert _ids("language=python") == [row["instance_id"] for row in LINES]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("colour=red", "no field 'colour'"),
        ("flaky=maybe", "flaky is true or false"),
        ("repo", "not FIELD=VALUE"),
    ],
)
def test_a_bad_filter_is_one_line(text: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        parse_filter(text)


def test_a_filter_that_keeps_nothing_says_so() -> None:
    with pytest.raises(ConfigError, match="no task matches"):
        selected(LINES, parse_filter("repo=networkx"))


def test_the_summary_counts_repositories_kinds_difficulty_and_flags() -> None:
    text = summary(LINES)
    assert text.splitlines()[0] == "3 tasks, 2 repositories, 1 languages"
    assert "python     mpmath                 1.2.1-2                 2" in text
    assert "kinds: arith 2, combined 1" in text
    assert "difficulty: easy 2, medium 1, hard 0" in text
    assert "flags: flaky 0, slow 0, duplicate 1, leaks_fix 0, off_target 1" in text
    assert "clean (no flag): 1" in text
    assert "not yet measured" not in text
    later = summary([*LINES, line(instance_id="mpmath__d__d__1", measured=False)])
    assert "not yet measured (flaky, slow, off_target, test seconds): 1" in later
