"""``kill -9`` of a real ``palaestra collect`` of a stateful multi-turn environment, then
``--resume``: each unfinished rollout continues from its last completed turn, and no side
effect (a deposit in an external ledger) happens twice."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest

from tests.cli.test_collect_cli import PALAESTRA, rows, run_cli
from tests.support import durable_ledger
from tests.support.durable_ledger import ledger_lines, ledger_script, ledger_tasks
from tests.support.scripted_model import ScriptedModelServer

TASKS, TURNS = 6, 6
ENV = str(Path(durable_ledger.__file__))


def killed_mid_episode(
    tmp_path: Path,
    env_class: str,
    server: ScriptedModelServer,
    how: int = signal.SIGKILL,
    deposits: int = 2,
) -> list[str]:
    """Start a collection whose model answers slowly, and kill it (``kill -9``) when every
    rollout has made ``deposits`` deposits or more (none has finished); the resume's
    arguments."""
    tasks = ledger_tasks(tmp_path / "tasks.jsonl", tmp_path / "ledger.jsonl", TASKS, TURNS)
    output = tmp_path / "run.jsonl"
    args = ["collect", "--env", f"{ENV}:{env_class}", "--input", str(tasks)]
    args += ["--output", str(output), "--concurrency", str(TASKS), "--max-steps", "20"]
    process = subprocess.Popen(
        [*PALAESTRA, *args, "--model", server.url],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "200"},
    )
    ledger = tmp_path / "ledger.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        made = Counter(row["task"] for row in ledger_lines(ledger))
        if len(made) == TASKS and min(made.values()) >= deposits:
            break
        time.sleep(0.02)
    process.send_signal(how)
    process.wait(30)
    assert not output.exists() or rows(output) == [], "the kill must land mid-episode"
    return [*args, "--model", server.url]


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_a_killed_collection_resumes_every_rollout_with_no_side_effect_twice(
    tmp_path: Path, how: int
) -> None:
    with ScriptedModelServer(ledger_script(delay=0.25)) as server:
        args = killed_mid_episode(tmp_path, "DurableLedger", server, how)
        before = Counter(row["task"] for row in ledger_lines(tmp_path / "ledger.jsonl"))
        resumed = run_cli(*args, "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "continued mid-episode" in resumed.stdout
    written = rows(tmp_path / "run.jsonl")
    assert sorted(r["_ng_task_index"] for r in written) == list(range(TASKS))
    for row in written:
        assert row["reward"] == 1.0
        facts = row["_palaestra"]
        assert facts["resumed"]["attempts"] == 2
        done = before[row["_ng_task_index"]]  # a kill between a deposit and its checkpoint:
        assert done - 1 <= facts["resumed"]["from_turn"] <= done  # that turn is done again
        output = row["response"]["output"]
        calls = [i["call_id"] for i in output if i["type"] == "function_call"]
        outputs = [i["call_id"] for i in output if i["type"] == "function_call_output"]
        assert calls == outputs == [f"call_{n}" for n in range(TURNS)]  # one trajectory
        assert len(facts["producers"]) == len(output)
    ledger = ledger_lines(tmp_path / "ledger.jsonl")
    each = Counter((r["task"], r["seq"]) for r in ledger)
    assert each == Counter({(t, s): 1 for t in range(TASKS) for s in range(TURNS)})
    assert not (tmp_path / "run_checkpoints.jsonl").exists()


def test_a_collection_killed_during_the_first_turn_makes_no_deposit_twice(
    tmp_path: Path,
) -> None:
    with ScriptedModelServer(ledger_script()) as server:
        # Killed while every rollout's first deposit is done and its turn not yet over.
        args = killed_mid_episode(tmp_path, "SlowFirstDeposit", server, deposits=1)
        before = Counter(row["task"] for row in ledger_lines(tmp_path / "ledger.jsonl"))
        resumed = run_cli(*args, "--resume", cwd=tmp_path)
    assert before == Counter(dict.fromkeys(range(TASKS), 1))
    assert resumed.returncode == 0, resumed.stderr
    ledger = ledger_lines(tmp_path / "ledger.jsonl")
    each = Counter((r["task"], r["seq"]) for r in ledger)
    assert each == Counter({(t, s): 1 for t in range(TASKS) for s in range(TURNS)})
    written = rows(tmp_path / "run.jsonl")
    assert len(written) == TASKS and all(r["reward"] == 1.0 for r in written)
    assert all(r["_palaestra"]["resumed"]["from_turn"] == 0 for r in written)
    redone = ledger_lines(tmp_path / "ledger.jsonl.suppressed")  # the first turn, done again
    assert sorted((r["task"], r["seq"]) for r in redone) == [(t, 0) for t in range(TASKS)]


def test_kill_9_of_an_environment_that_cannot_restore_restarts_its_rollouts(
    tmp_path: Path,
) -> None:
    with ScriptedModelServer(ledger_script(delay=0.25)) as server:
        args = killed_mid_episode(tmp_path, "RestartingLedger", server)
        lost = len(ledger_lines(tmp_path / "ledger.jsonl"))
        resumed = run_cli(*args, "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    written = rows(tmp_path / "run.jsonl")
    assert len(written) == TASKS and all("resumed" not in r["_palaestra"] for r in written)
    ledger = ledger_lines(tmp_path / "ledger.jsonl")
    assert len(ledger) == lost + TASKS * TURNS  # the lost attempts' deposits, then all again
    assert not (tmp_path / "run_checkpoints.jsonl").exists()
    assert orjson.loads((tmp_path / "run_run.json").read_bytes())["repeats"] == 1
