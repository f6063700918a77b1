from __future__ import annotations

import itertools

import pytest

from palaestra import LocalEnvironmentClient
from palaestra.agents import StepAgent
from palaestra.envs.meeting_scheduler.environment import (
    DAYS,
    MeetingScheduler,
    first_problem,
    parse_slot,
    task,
)
from palaestra.types import JsonDict, message_text
from tests.support.fake_model import FakeModel, say

CONSTRAINTS: JsonDict = {
    "days": ["tuesday", "thursday"],
    "earliest": 13,
    "latest_start": 15,
    "blocked": ["tuesday", 13],
}


@pytest.mark.parametrize(
    ("text", "slot"),
    [
        ("How about Tuesday at 14:00?", ("tuesday", 14)),
        ("thu 3pm", ("thursday", 15)),
        ("Friday 9", ("friday", 9)),
        ("Monday at 12am", ("monday", 0)),
        ("Tuesday at 14:30", None),
        ("sometime next week", None),
        ("at 3pm", None),
    ],
)
def test_parse_slot(text: str, slot: tuple[str, int] | None) -> None:
    assert parse_slot(text) == slot


def test_constraints_are_revealed_in_order() -> None:
    assert first_problem(CONSTRAINTS, "monday", 14) is not None
    assert first_problem(CONSTRAINTS, "monday", 14)[0] == "days"  # type: ignore[index]
    assert first_problem(CONSTRAINTS, "thursday", 9)[0] == "hours"  # type: ignore[index]
    assert first_problem(CONSTRAINTS, "tuesday", 13)[0] == "blocked"  # type: ignore[index]
    assert first_problem(CONSTRAINTS, "tuesday", 14) is None


def listener() -> FakeModel:
    """Proposes Monday 9:00, then adapts to what the user revealed."""
    proposals = iter(
        [
            "How about Monday at 9:00?",
            "Tuesday at 9:00 then?",
            "Tuesday at 13:00?",
            "Tuesday at 14:00?",
        ]
    )
    return FakeModel(lambda params: say(next(proposals)))


async def test_negotiation_reaches_a_slot_that_fits_every_constraint() -> None:
    env = LocalEnvironmentClient(MeetingScheduler())
    result = await StepAgent(max_steps=6).run(task(CONSTRAINTS), env, listener())
    assert result.verdict is not None and result.verdict.reward == 1.0
    assert result.verdict.metrics == {"proposals": 4, "constraints_revealed": 3}
    assert result.verdict.step_rewards == [0.0, 0.0, 0.0, 1.0]
    user_turns = [
        message_text(i)
        for i in result.response["output"]  # type: ignore[index]
        if i.get("role") == "user"
    ]
    assert "only free on Tuesday or Thursday" in user_turns[1]
    assert "already have a meeting" in user_turns[3]


async def test_running_out_of_turns_scores_zero() -> None:
    env = LocalEnvironmentClient(MeetingScheduler())
    result = await StepAgent(max_steps=2).run(task(CONSTRAINTS), env, listener())
    assert result.verdict is not None and result.verdict.reward == 0.0


def test_every_generated_task_is_satisfiable() -> None:
    for row in MeetingScheduler().generate_tasks(200, 5):
        slots = itertools.product(DAYS, range(0, 24))
        assert any(first_problem(row["constraints"], d, h) is None for d, h in slots)
