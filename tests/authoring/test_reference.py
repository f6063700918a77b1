"""``palaestra test``'s oracle and null checks: gold actions score 1, doing nothing scores 0."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import orjson
import pytest

from palaestra import Environment, JsonDict, Session, tool
from palaestra.authoring import EnvironmentReport, Status, check_environment, reference
from palaestra.models.base import ModelStats
from palaestra.types import assistant_message, empty_usage
from tests.support.gold_envs import Counter, Dictation, Ledger, Lenient, Misled

ROOT = Path(__file__).resolve().parents[2]
PAY = [
    {"responses_create_params": {"input": "Pay 5."}, "amount": 5},
    {"responses_create_params": {"input": "Pay 2."}, "amount": 2},
]


def tasks_file(path: Path, rows: list[JsonDict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


def check(env: type[Environment], path: Path) -> EnvironmentReport:
    return check_environment(env, tasks=path, smoke=None)


def test_a_verifier_that_reads_the_state_passes_both_checks(tmp_path: Path) -> None:
    report = check(Ledger, tasks_file(tmp_path / "t.jsonl", PAY))
    oracle, null = report.check("oracle"), report.check("null agent")
    assert oracle.status is Status.PASS and null.status is Status.PASS
    assert oracle.reason == "replaying the gold actions scores 1 on 2 tasks (2 calls)"
    assert null.reason == "doing nothing scores 0 on 2 tasks that require an action"
    assert report.ok


def test_a_verifier_that_rewards_doing_nothing_fails_the_null_check(tmp_path: Path) -> None:
    report = check(Lenient, tasks_file(tmp_path / "t.jsonl", PAY))
    null = report.check("null agent")
    assert null.status is Status.FAIL and not report.ok
    assert null.reason == (
        "task 0: doing nothing scored 1, not 0; task 1: doing nothing scored 1, not 0"
    )
    assert report.check("oracle").status is Status.PASS


def test_gold_actions_that_miss_fail_the_oracle_check_with_the_verdict(tmp_path: Path) -> None:
    oracle = check(Misled, tasks_file(tmp_path / "t.jsonl", PAY[:1])).check("oracle")
    assert oracle.status is Status.FAIL
    assert oracle.reason == "task 0: the gold actions scored 0, not 1 (paid=6)"


def test_a_task_that_needs_no_action_is_left_out_of_the_null_check(tmp_path: Path) -> None:
    nothing = {"responses_create_params": {"input": "Pay nothing."}, "amount": 0}
    report = check(Ledger, tasks_file(tmp_path / "t.jsonl", [*PAY, nothing]))
    assert report.check("oracle").details == {
        "tasks": 3,
        "calls": 2,
        "results": [f"ok   task {n}: the gold actions scored 1" for n in range(3)],
    }
    null = report.check("null agent")
    assert null.details["results"] == [f"ok   task {n}: doing nothing scored 0" for n in range(2)]
    assert null.status is Status.PASS
    assert null.reason.endswith("; 1 task needing no action not checked")


class Lookup(Ledger):
    """Gold actions that look the balance up first; paying nothing needs no action."""

    @tool
    def balance(self, session: Session) -> int:
        """The amount paid so far."""
        return int(session.state["paid"])

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
        look = {"name": "balance", "arguments": {}}
        pay = [{"name": "pay", "arguments": {"amount": task["amount"]}}] if task["amount"] else []
        return [[look, *pay]]

    def requires_action(self, task: JsonDict) -> bool:
        return bool(task["amount"])


def test_an_environment_says_which_tasks_doing_nothing_fails(tmp_path: Path) -> None:
    nothing = {"responses_create_params": {"input": "Pay nothing."}, "amount": 0}
    report = check(Lookup, tasks_file(tmp_path / "t.jsonl", [*PAY, nothing]))
    assert {k: v for k, v in report.check("oracle").details.items() if k != "results"} == {
        "tasks": 3,
        "calls": 5,
    }
    assert report.check("null agent").reason == (
        "doing nothing scores 0 on 2 tasks that require an action; "
        "1 task needing no action not checked"
    )


def test_the_oracle_check_replays_both_turns_of_a_scripted_user(tmp_path: Path) -> None:
    task = {"responses_create_params": {"input": "Write pear."}, "words": ["pear", "plum"]}
    report = check(Dictation, tasks_file(tmp_path / "t.jsonl", [task]))
    assert (
        report.check("oracle").reason == "replaying the gold actions scores 1 on 1 task (2 calls)"
    )
    assert report.check("null agent").status is Status.PASS


class Customer:
    """A user model that has been paid: it says so and is done."""

    name = "customer"

    def __init__(self) -> None:
        self.stats = ModelStats()
        self.calls = 0

    async def respond(self, params: JsonDict) -> JsonDict:
        self.calls += 1
        return {"output": [assistant_message("Thanks. DONE")], "usage": empty_usage()}

    async def check(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


def test_a_user_that_needs_a_model_is_played_by_the_user_model_given(tmp_path: Path) -> None:
    customer = Customer()
    path = tasks_file(tmp_path / "t.jsonl", PAY)
    report = check_environment(Counter, tasks=path, smoke=None, user_model=customer)
    assert report.check("oracle").status is Status.PASS
    assert report.check("null agent").status is Status.PASS
    assert customer.calls == 4  # one user turn in each of 2 oracle and 2 null rollouts


def test_without_a_user_model_the_checks_of_such_a_user_are_skipped(tmp_path: Path) -> None:
    report = check(Counter, tasks_file(tmp_path / "t.jsonl", PAY))
    oracle = report.check("oracle")
    assert oracle.status is Status.SKIP and report.check("null agent").status is Status.SKIP
    assert oracle.reason == (
        "the simulated user needs a user model (pass --user-model): 2 tasks not run (0, 1)"
    )


def test_without_gold_actions_both_checks_are_skipped_with_a_note(tmp_path: Path) -> None:
    class Plain(Environment):
        """No gold actions."""

        def verify(self, session: Session, response: JsonDict) -> float:
            return 1.0

    report = check(Plain, tasks_file(tmp_path / "t.jsonl", PAY))
    for name in ("oracle", "null agent"):
        assert report.check(name).status is Status.SKIP
        assert report.check(name).reason.startswith("no gold actions (implement Environment.")
    untagged = [{"responses_create_params": {"input": "Pay."}}]
    skipped = check(Ledger, tasks_file(tmp_path / "u.jsonl", untagged)).check("oracle")
    assert skipped.status is Status.SKIP and skipped.reason.startswith("no example task has")


def test_gold_actions_that_raise_fail_the_oracle_check_naming_the_task(tmp_path: Path) -> None:
    class Raising(Ledger):
        """gold_actions that break on a task."""

        def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
            raise KeyError("amount")

    report = check(Raising, tasks_file(tmp_path / "t.jsonl", PAY[:1]))
    assert report.check("oracle").reason == "task 0: gold_actions raised KeyError: 'amount'"
    assert report.check("null agent").status is Status.SKIP


@pytest.mark.parametrize(
    ("cls", "code", "oracle", "null"),
    [
        (
            "Ledger",
            0,
            "  PASS oracle: replaying the gold actions scores 1 on 2 tasks (2 calls)",
            "  PASS null agent: doing nothing scores 0 on 2 tasks that require an action",
        ),
        (
            "Lenient",
            1,
            "  PASS oracle: replaying the gold actions scores 1 on 2 tasks (2 calls)",
            "  FAIL null agent: task 0: doing nothing scored 1, not 0; "
            "task 1: doing nothing scored 1, not 0",
        ),
    ],
)
def test_palaestra_test_prints_one_line_per_reference_check(
    tmp_path: Path, cls: str, code: int, oracle: str, null: str
) -> None:
    tasks = tasks_file(tmp_path / "tasks.jsonl", PAY)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    command = ["palaestra", "test", f"tests.support.gold_envs:{cls}", "--input", str(tasks)]
    result = subprocess.run(
        [sys.executable, "-m", *command, "--no-model"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == code, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"{cls.lower()} (tests.support.gold_envs:{cls})"
    assert oracle in lines and null in lines
    below = lines[lines.index(null) + 1 : lines.index(null) + 3]
    wanted = (
        "FAIL task {}: doing nothing scored 1, not 0"
        if code
        else "ok   task {}: doing nothing scored 0"
    )
    assert [line.strip() for line in below] == [wanted.format(n) for n in range(2)]
    assert lines[-1].endswith(f"12 checks, {code} failed, 5 skipped")


@pytest.mark.parametrize("name", ["workplace", "function_calling"])
def test_builtins_with_gold_actions_pass_the_oracle_and_null_checks(name: str) -> None:
    report = check_environment(name, smoke=None)
    oracle, null = report.check("oracle"), report.check("null agent")
    assert (oracle.status, null.status) == (Status.PASS, Status.PASS), (oracle, null)
    assert oracle.details["tasks"] == 5


class Counted(Ledger):
    """A ledger that counts how often its gold actions are asked for."""

    asked = 0

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
        type(self).asked += 1
        return super().gold_actions(task)


def test_each_tasks_gold_actions_are_asked_for_once(tmp_path: Path) -> None:
    # ScienceWorld starts a simulator for a task's gold path: the oracle's rollout takes the
    # gold actions the task list read, never asks again
    report = check(Counted, tasks_file(tmp_path / "t.jsonl", PAY))
    assert report.check("oracle").status is Status.PASS
    assert Counted.asked == 2


class Meeting(Ledger):
    """A ledger whose payments each wait (a few seconds at most) for another one in flight."""

    @tool
    def pay(self, session: Session, amount: int) -> str:
        """Pay an amount into the ledger.

        Args:
            amount: How much to pay.
        """
        MEETING.wait()
        session.state["paid"] += amount
        return f"paid {amount}"


MEETING = threading.Barrier(2, timeout=5)


def test_a_machine_environments_rollouts_run_two_at_a_time_reported_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a box's rollout mostly waits on the box: two run at once, and each payment here passes
    # only when the other task's is in flight
    monkeypatch.setattr(reference, "HarborEnvironment", Meeting)  # a machine, as far as it knows
    report = check(Meeting, tasks_file(tmp_path / "t.jsonl", PAY))
    oracle = report.check("oracle")
    assert oracle.status is Status.PASS, oracle.reason
    assert oracle.details["results"] == [
        f"ok   task {n}: the gold actions scored 1" for n in range(2)
    ]
