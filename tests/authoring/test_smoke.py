"""The smoke run's checks, driven by in-process models: what fails it, what it counts."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from palaestra import Environment, JsonDict, Session, Verdict, output_text, tool
from palaestra.authoring import Check, SmokeOptions, Status, check_environment
from palaestra.errors import ModelError
from palaestra.models.base import Model
from tests.support.distribution import on_sys_path, write_distribution
from tests.support.fake_model import FakeModel, call, response, say

TASK = {"responses_create_params": {"input": "Mark once, then say yes."}}


class Marks(Environment):
    """Mark, then say yes."""

    def seed(self, task: JsonDict) -> JsonDict:
        return {"marks": 0}

    @tool
    def mark(self, session: Session) -> int:
        """Make a mark."""
        session.state["marks"] += 1
        return int(session.state["marks"])

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        right = output_text(response) == "yes" and session.state["marks"] == 1
        return Verdict(reward=float(right))


def tasks(tmp_path: Path, count: int = 3) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(b"".join(orjson.dumps(TASK) + b"\n" for _ in range(count)))
    return path


def marks_then_yes(params: JsonDict) -> JsonDict:
    done = any(item.get("type") == "function_call_output" for item in params["input"])
    return say("yes") if done else response(call("mark", "{}"))


def smoke(env: type[Environment], path: Path, model: Model, tasks: int = 2) -> dict[str, Check]:
    report = check_environment(env, tasks=path, smoke=SmokeOptions(model=model, tasks=tasks))
    return {check.name: check for check in report.checks[-3:]}


def test_a_clean_smoke_run_passes_and_every_session_is_closed(tmp_path: Path) -> None:
    model = FakeModel(marks_then_yes)
    checks = smoke(Marks, tasks(tmp_path), model, tasks=2)
    run, sessions, cpu = checks["smoke run"], checks["sessions closed"], checks["framework CPU"]
    assert run.status is Status.PASS
    assert run.details["scored"] == 2 and run.details["model_calls"] == 4
    assert "2 scored (mean reward 1.00), 0 failed" in run.reason
    assert sessions.details == {"opened": 2, "closed": 2, "left_open": 0}
    assert cpu.status is Status.PASS
    assert len(model.requests) == 4
    assert all(r.get("max_output_tokens") == 96 for r in model.requests)  # the small budget


class BurningModel(FakeModel):
    """Spends ``seconds`` of CPU in every call, as a model computing its answer would."""

    def __init__(self, seconds: float) -> None:
        super().__init__(marks_then_yes)
        self.seconds = seconds

    async def respond(self, params: JsonDict) -> JsonDict:
        until = time.thread_time() + self.seconds
        while time.thread_time() < until:
            pass
        return await super().respond(params)


def test_the_models_cpu_is_not_counted_as_the_frameworks(tmp_path: Path) -> None:
    model = BurningModel(0.05)
    cpu = smoke(Marks, tasks(tmp_path), model, tasks=2)["framework CPU"]
    details = cpu.details
    assert details["model_cpu_seconds"] >= 4 * 0.05  # four calls, each burning 50 ms
    assert details["framework_cpu_seconds"] == pytest.approx(
        details["cpu_seconds"] - details["model_cpu_seconds"], abs=1e-3
    )
    assert details["per_rollout_ms"] == pytest.approx(
        details["framework_cpu_seconds"] / 2 * 1000,
        abs=0.05,  # both rounded
    )


class UnwritableMetric(Marks):
    """Puts a set in its metrics: the row cannot be written as JSON."""

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        return Verdict(reward=1.0, metrics={"seen": {1, 2}})


def test_a_rollout_palaestra_could_not_write_fails_the_smoke_run(tmp_path: Path) -> None:
    run = smoke(UnwritableMetric, tasks(tmp_path), FakeModel(marks_then_yes))["smoke run"]
    assert run.status is Status.FAIL
    assert run.reason.startswith(
        "palaestra's own failures (internal_error): internal_error: the rollout's row cannot "
    )


def test_a_model_failure_is_the_models_and_does_not_fail_the_smoke_run(tmp_path: Path) -> None:
    def broken(params: JsonDict) -> JsonDict:
        raise ModelError("the model answered nothing")

    run = smoke(Marks, tasks(tmp_path), FakeModel(broken), tasks=1)["smoke run"]
    assert run.status is Status.PASS
    assert run.details["failures"] == {"model_error": 1}
    assert "(not palaestra's: model_error: the model answered nothing)" in run.reason


LEAKY_AGENT = '''
from palaestra import AgentResult


class LeakyAgent:
    """Asks once and verifies, and never closes the session."""

    name = "leaky"

    async def run(self, task, env, model):
        session = await env.seed(task)
        response = await model.respond(task["responses_create_params"])
        verdict = await env.verify(session, task, response)
        return AgentResult(response=response, verdict=verdict, model_calls=1)
'''


@pytest.fixture
def leaky_agent(tmp_path: Path) -> Iterator[None]:
    site = tmp_path / "site"
    write_distribution(
        site,
        "leaky-agents",
        modules={"leaky_agents.py": LEAKY_AGENT},
        entry_points={"palaestra.agents": {"leaky": "leaky_agents:LeakyAgent"}},
    )
    with on_sys_path(site):
        yield


class LeftOpen(Marks):
    """Run by an agent that forgets to close sessions."""

    default_agent = "leaky"


def test_sessions_an_agent_leaves_open_fail_the_sessions_check(
    tmp_path: Path, leaky_agent: None
) -> None:
    checks = smoke(LeftOpen, tasks(tmp_path), FakeModel(lambda p: say("yes")), tasks=2)
    assert checks["smoke run"].status is Status.PASS
    sessions = checks["sessions closed"]
    assert sessions.status is Status.FAIL
    assert sessions.reason == (
        "2 sessions opened, 0 closed by their rollout, 2 still open when the run ended"
    )


def test_a_model_that_cannot_be_built_fails_the_smoke_run_in_one_line(tmp_path: Path) -> None:
    report = check_environment(
        Marks, tasks=tasks(tmp_path), smoke=SmokeOptions(model="no_such_backend_or_name")
    )
    run, sessions, cpu = report.checks[-3:]
    assert run.status is Status.FAIL and run.reason.startswith("could not start: ")
    assert "\n" not in run.reason
    assert (sessions.status, cpu.status) == (Status.SKIP, Status.SKIP)


class OneSeedAtATime(Marks):
    """A seed that breaks when another seed runs at the same time, as an environment whose
    library keeps shared state would."""

    def __init__(self) -> None:
        self.seeding = threading.Lock()

    def seed(self, task: JsonDict) -> JsonDict:
        if not self.seeding.acquire(blocking=False):
            raise RuntimeError("two seeds at once")
        try:
            time.sleep(0.3)
            return {"marks": 0}
        finally:
            self.seeding.release()


def test_the_smoke_run_runs_rollouts_side_by_side_and_fails_on_a_seed_that_raises(
    tmp_path: Path,
) -> None:
    run = smoke(OneSeedAtATime, tasks(tmp_path), FakeModel(marks_then_yes))["smoke run"]
    assert run.status is Status.FAIL
    assert run.details["failures"] == {"env_error": 1}
    assert run.reason.startswith(
        "the environment's code raised (env_error): env_error: seed raised RuntimeError: "
        "two seeds at once"
    )


class BurningSeeds(Marks):
    """Spends ``SEED_CPU`` of CPU in every seed."""

    def seed(self, task: JsonDict) -> JsonDict:
        until = time.thread_time() + SEED_CPU
        while time.thread_time() < until:
            pass
        return {"marks": 0}


SEED_CPU = 0.1


class WaitingBurningModel(BurningModel):
    """Burns CPU, then waits for its answer: the other rollout runs meanwhile."""

    async def respond(self, params: JsonDict) -> JsonDict:
        answer = await super().respond(params)
        await asyncio.sleep(0.2)
        return answer


def test_rollouts_side_by_side_do_not_blur_the_models_cpu_and_the_frameworks(
    tmp_path: Path,
) -> None:
    model = WaitingBurningModel(0.05)
    details = smoke(BurningSeeds, tasks(tmp_path, 4), model, tasks=4)["framework CPU"].details
    # Four rollouts, two at a time: the seeds burn while other rollouts' calls are in flight.
    assert 8 * 0.05 <= details["model_cpu_seconds"] < 8 * 0.05 + 0.1
    assert details["framework_cpu_seconds"] >= 4 * SEED_CPU
