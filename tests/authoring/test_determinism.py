"""``palaestra test``'s determinism checks: the same seed, the same tasks and the same start."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from pathlib import Path

from palaestra import Environment, JsonDict, Session, StepEnvironment, StepResult
from palaestra.authoring import Status, check_environment
from tests.authoring.test_checks import QUESTION, tasks_file

_unseeded = random.Random()  # a source no seed reaches, as a careless generator's would be


def question(text: str) -> JsonDict:
    return {"responses_create_params": {"input": text}}


class Seeded(Environment):
    """Generates its tasks from the seed and starts each from the task."""

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        rng = random.Random(seed)
        for _ in range(count):
            yield question(f"Add {rng.randint(0, 99)} and {rng.randint(0, 99)}.")

    def seed(self, task: JsonDict) -> JsonDict:
        return {"goal": len(str(task))}

    def verify(self, session: Session, response: JsonDict) -> float:
        return 0.0


class UnseededTasks(Seeded):
    """Generates its tasks from a source other than its seed."""

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        for _ in range(count):
            yield question(f"Add {_unseeded.randint(0, 10**9)} and 1.")


class UnseededState(Seeded):
    """Starts each session from a fresh draw, whatever the task."""

    def seed(self, task: JsonDict) -> JsonDict:
        return {"goal": _unseeded.randint(0, 10**9)}


class UnseededObservation(StepEnvironment):
    """A turn-based game whose first observation is drawn anew at each reset."""

    def reset(self, session: Session) -> str:
        return f"You stand in room {_unseeded.randint(0, 10**9)}."

    def step(self, session: Session, action: str) -> StepResult:
        return StepResult("nothing happens", reward=0.0, terminated=True)

    def verify(self, session: Session, response: JsonDict) -> float:
        return 0.0


class OpaqueState(Environment):
    """Starts each session with a state that is not JSON (a lock)."""

    def seed(self, task: JsonDict) -> object:
        return asyncio.Lock()

    def verify(self, session: Session, response: JsonDict) -> float:
        return 0.0


def checks(env: type[Environment], tmp_path: Path) -> dict[str, tuple[Status, str]]:
    report = check_environment(env, tasks=tasks_file(tmp_path / "t.jsonl", QUESTION), smoke=None)
    return {
        c.name: (c.status, c.reason)
        for c in report.checks
        if c.name in ("generated tasks", "seeded start")
    }


def test_an_environment_seeded_throughout_passes_both_determinism_checks(tmp_path: Path) -> None:
    found = checks(Seeded, tmp_path)
    assert found["generated tasks"] == (Status.PASS, "seed 0 gives the same 3 tasks twice")
    assert found["seeded start"] == (
        Status.PASS,
        "the first task seeded twice gives the same seeded state",
    )


def test_a_generator_that_ignores_its_seed_fails_palaestra_test(tmp_path: Path) -> None:
    status, reason = checks(UnseededTasks, tmp_path)["generated tasks"]
    assert status is Status.FAIL and "task 0 differs" in reason


def test_a_seed_that_draws_its_state_from_elsewhere_fails_palaestra_test(tmp_path: Path) -> None:
    status, reason = checks(UnseededState, tmp_path)["seeded start"]
    assert status is Status.FAIL and "two different seeded states" in reason


def test_a_game_whose_first_observation_changes_between_resets_fails(tmp_path: Path) -> None:
    found = checks(UnseededObservation, tmp_path)
    assert found["generated tasks"] == (Status.SKIP, "the environment generates no tasks")
    status, reason = found["seeded start"]
    assert status is Status.FAIL and "two different first observations" in reason


def test_a_state_that_is_not_json_is_skipped_never_passed(tmp_path: Path) -> None:
    status, _ = checks(OpaqueState, tmp_path)["seeded start"]
    assert status is Status.SKIP


class Corridor(StepEnvironment):
    """Two steps to the door; the gold actions take them. Counts the sessions it seeds."""

    seeded = 0

    def seed(self, task: JsonDict) -> JsonDict:
        type(self).seeded += 1
        return {"at": 0}

    def reset(self, session: Session) -> str:
        return "You stand two steps from the door."

    def step(self, session: Session, action: str) -> StepResult:
        session.state["at"] += action == "step"
        out = session.state["at"] >= 2
        return StepResult("You are out." if out else "One more step.", terminated=out)

    def verify(self, session: Session, response: JsonDict) -> float:
        return float(session.state["at"] >= 2)

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]]:
        return [[{"role": "assistant", "content": "step"}]] * 2


class ShiftingCorridor(Corridor):
    """A corridor whose length is drawn anew at each reset."""

    def reset(self, session: Session) -> str:
        return f"You stand {_unseeded.randint(2, 10**9)} steps from the door."


def test_a_game_the_oracle_and_null_agent_started_is_not_seeded_again(tmp_path: Path) -> None:
    # a ScienceWorld game is a simulator to start: the starts of the two rollouts that played
    # the first task are compared, and the check seeds nothing itself
    report = check_environment(
        Corridor, tasks=tasks_file(tmp_path / "t.jsonl", QUESTION), smoke=None
    )
    assert (report.check("oracle").status, report.check("null agent").status) == (
        Status.PASS,
        Status.PASS,
    )
    start = report.check("seeded start")
    assert start.status is Status.PASS, start.reason
    assert start.details == {"seeded_by": "earlier checks"}
    assert Corridor.seeded == 2  # the oracle's rollout and the null agent's


def test_a_start_that_differs_between_the_oracle_and_null_rollouts_fails(tmp_path: Path) -> None:
    report = check_environment(
        ShiftingCorridor, tasks=tasks_file(tmp_path / "t.jsonl", QUESTION), smoke=None
    )
    start = report.check("seeded start")
    assert start.status is Status.FAIL and "two different first observations" in start.reason
    assert start.details == {"seeded_by": "earlier checks"}
