"""The collector's guarantees: a rollout's trouble stays in that rollout, runs do not mix.

A scripted ``RolloutRunner`` hands the collector exactly the result (or the exception) each
task asks for, so these tests reach the collector's own defences whatever the agent does.
"""

from __future__ import annotations

import asyncio
import io
import math
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from rich.console import Console

from palaestra.agents.base import RolloutRunner
from palaestra.agents.context import NO_CONTEXT, RolloutContext
from palaestra.cli.progress import summary_table
from palaestra.collection.aggregate import aggregate
from palaestra.collection.collector import CollectConfig, RunSummary, collect
from palaestra.collection.lock import OutputLock
from palaestra.errors import (
    ConfigError,
    EnvironmentUnreachable,
    ModelAuthError,
    ModelError,
    RolloutFailure,
    RunStopped,
)
from palaestra.observe.metrics_counts import RolloutCounts
from palaestra.types import AgentResult, Failure, FailureKind, JsonDict, Verdict
from tests.collection.test_collector import Quiet, read_jsonl

Outcome = Callable[[JsonDict], AgentResult]


class Scripted(RolloutRunner):
    """A runner whose result for a task is ``outcome(task)``; an exception is raised."""

    def __init__(self, outcome: Outcome, *, check_error: Exception | None = None) -> None:
        self.outcome = outcome
        self.check_error = check_error
        self.runs = 0
        self.gate: asyncio.Event | None = None

    async def check(self) -> None:
        if self.check_error is not None:
            raise self.check_error

    async def run(self, task: JsonDict, context: RolloutContext = NO_CONTEXT) -> AgentResult:
        self.runs += 1
        if self.gate is not None:
            await self.gate.wait()
        return self.outcome(task)


def scored(reward: Any, **metrics: Any) -> AgentResult:
    return AgentResult(
        response={"output": [], "usage": {"input_tokens": 3}},
        verdict=Verdict(reward=reward, metrics=metrics),
        model_calls=1,
    )


def write_tasks(path: Path, rows: list[JsonDict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def numbered(count: int, **extra: Any) -> list[JsonDict]:
    return [{"responses_create_params": {"input": f"q{i}"}, "n": i, **extra} for i in range(count)]


async def run(
    tmp_path: Path, runner: Scripted, *, tasks: str = "tasks.jsonl", **config: Any
) -> RunSummary:
    options: dict[str, Any] = {
        "input": tmp_path / tasks,
        "output": tmp_path / "out.jsonl",
        "agent_ref": {"type": "responses_api_agents", "name": "scripted"},
        "concurrency": 2,
    }
    options.update(config)
    return await collect(runner, CollectConfig(**options), Quiet())


def pairs(path: Path) -> list[tuple[int, int]]:
    return sorted((r["_ng_task_index"], r["_ng_rollout_index"]) for r in read_jsonl(path))


async def test_a_reward_that_is_not_a_finite_number_fails_that_rollout_only(
    tmp_path: Path,
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", numbered(6))
    rewards: list[Any] = [1.0, "x", math.nan, math.inf, -math.inf, "1.0"]

    summary = await run(tmp_path, Scripted(lambda task: scored(rewards[task["n"]])))

    assert [r["reward"] for r in read_jsonl(tmp_path / "out.jsonl")] == [1.0]
    failures = read_jsonl(tmp_path / "out_failures.jsonl")
    assert sorted(f["_ng_task_index"] for f in failures) == [1, 2, 3, 4, 5]
    assert {f["failure"]["kind"] for f in failures} == {"verifier_error"}
    assert all("not a finite number" in f["failure"]["reason"] for f in failures)
    assert summary.mean_reward == 1.0
    [entry] = orjson.loads((tmp_path / "out_aggregate_metrics.json").read_bytes())
    assert entry["key_metrics"]["mean/reward"] == 1.0


async def test_a_verdict_that_cannot_be_written_as_json_fails_that_rollout_not_the_run(
    tmp_path: Path,
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", numbered(3))

    def outcome(task: JsonDict) -> AgentResult:
        return scored(1.0, detail=object() if task["n"] == 1 else "fine")

    summary = await run(tmp_path, Scripted(outcome))

    assert pairs(tmp_path / "out.jsonl") == [(0, 0), (2, 0)]
    [failure] = read_jsonl(tmp_path / "out_failures.jsonl")
    assert failure["_ng_task_index"] == 1
    assert failure["failure"]["kind"] == "internal_error"
    assert "row cannot be written" in failure["failure"]["reason"]
    assert summary.done == 2


async def test_every_failure_record_of_a_rerun_rollout_says_it_was_rerun(tmp_path: Path) -> None:
    write_tasks(tmp_path / "tasks.jsonl", numbered(5))

    def rerun(result: AgentResult) -> AgentResult:
        result.worker_reruns = 1
        return result

    def outcome(task: JsonDict) -> AgentResult:
        n = task["n"]
        if n in (0, 1, 4):  # raised, as a worker's failure comes back (not on task 4: ran once)
            failure = (EnvironmentUnreachable if n == 1 else RolloutFailure)(f"failed {n}")
            failure.worker_reruns = 0 if n == 4 else 1
            raise failure
        if n == 2:  # a verdict whose row cannot be written: recorded without its result
            return rerun(scored(1.0, detail=object()))
        failed = AgentResult(  # a failure whose trajectory cannot be written: kept without it
            response={"output": [object()]}, failure=Failure(FailureKind.TOOL_ERROR, "broke")
        )
        return rerun(failed)

    await run(tmp_path, Scripted(outcome))

    failures = {f["n"]: f for f in read_jsonl(tmp_path / "out_failures.jsonl")}
    assert {n: f["_palaestra"].get("worker_reruns") for n, f in failures.items()} == {
        0: 1, 1: 1, 2: 1, 3: 1, 4: None,
    }  # fmt: skip
    assert "response" not in failures[3] and failures[3]["failure"]["kind"] == "tool_error"


async def test_a_rollout_that_ran_out_of_steps_is_scored_marked_and_counted(
    tmp_path: Path,
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", numbered(3))

    def outcome(task: JsonDict) -> AgentResult:
        result = scored(0.0)
        result.truncated = "max_steps" if task["n"] == 2 else None
        return result

    summary = await run(tmp_path, Scripted(outcome))

    rows = {r["_ng_task_index"]: r for r in read_jsonl(tmp_path / "out.jsonl")}
    assert rows[2]["_palaestra"]["truncated"] == "max_steps"
    assert "truncated" not in rows[0]["_palaestra"]
    assert summary.truncated == 1
    [entry] = orjson.loads((tmp_path / "out_aggregate_metrics.json").read_bytes())
    assert entry["key_metrics"]["truncated"] == 1
    assert "hit --max-steps" in _text(summary)


async def test_a_second_collector_on_the_same_output_is_refused_while_the_first_runs(
    tmp_path: Path,
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", numbered(4))
    first = Scripted(lambda task: scored(1.0))
    first.gate = asyncio.Event()
    running = asyncio.create_task(run(tmp_path, first))
    while first.runs == 0:
        await asyncio.sleep(0.001)

    second = Scripted(lambda task: scored(1.0))
    with pytest.raises(ConfigError, match="being written by another collector"):
        await run(tmp_path, second, resume=True)
    assert second.runs == 0

    first.gate.set()
    await running
    assert pairs(tmp_path / "out.jsonl") == [(t, 0) for t in range(4)]
    again = await run(tmp_path, second, resume=True)  # the lock went with the first run
    assert again.skipped == 4


async def test_a_resume_of_another_run_is_refused_naming_the_difference(tmp_path: Path) -> None:
    write_tasks(tmp_path / "tasks.jsonl", numbered(3))
    write_tasks(tmp_path / "other.jsonl", numbered(3, extra="changed"))
    always = Scripted(lambda task: scored(1.0))
    await run(tmp_path, always, run_facts={"env": "echo", "agent": {"name": "tool_calling"}})

    refused: dict[str, dict[str, Any]] = {
        "input.sha256": {"tasks": "other.jsonl"},
        "repeats": {"repeats": 2},
        "agent.name": {"run_facts": {"env": "echo", "agent": {"name": "single_turn"}}},
        "env": {"run_facts": {"env": "weather", "agent": {"name": "tool_calling"}}},
        "sampling.temperature": {"overrides": {"temperature": 0.5}},
    }
    for field, change in refused.items():
        options: dict[str, Any] = {
            "run_facts": {"env": "echo", "agent": {"name": "tool_calling"}},
            **change,
        }
        with pytest.raises(ConfigError, match=rf"cannot resume: .*{field}: the run has"):
            await run(tmp_path, always, resume=True, **options)
    assert always.runs == 3  # nothing of another run was collected into this output

    moved = tmp_path / "moved.jsonl"
    moved.write_bytes((tmp_path / "tasks.jsonl").read_bytes())  # same tasks, another path
    same = {"env": "echo", "agent": {"name": "tool_calling"}}
    summary = await run(tmp_path, always, resume=True, tasks="moved.jsonl", run_facts=same)
    assert summary.skipped == 3
    recorded = orjson.loads((tmp_path / "out_run.json").read_bytes())
    assert recorded["env"] == "echo" and recorded["repeats"] == 1
    assert recorded["input"]["path"] == str(moved.resolve())
    assert len(recorded["input"]["sha256"]) == 64 and "palaestra_version" in recorded


async def test_a_run_without_an_identity_file_adopts_the_current_one_on_resume(
    tmp_path: Path,
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", numbered(2))
    always = Scripted(lambda task: scored(1.0))
    await run(tmp_path, always)
    (tmp_path / "out_run.json").unlink()  # a run from before identities, or a deliberate reset
    summary = await run(tmp_path, always, resume=True, repeats=2)
    assert summary.skipped == 2 and summary.done == 2
    assert orjson.loads((tmp_path / "out_run.json").read_bytes())["repeats"] == 2


async def test_the_summary_after_a_resume_gives_the_files_figures_and_this_runs_apart(
    tmp_path: Path,
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", numbered(4))
    broken = {2, 3}

    def outcome(task: JsonDict) -> AgentResult:
        if task["n"] in broken:
            raise ModelError("HTTP 500 after 3 retries")
        return scored(1.0)

    await run(tmp_path, Scripted(outcome))
    broken.clear()
    summary = await run(tmp_path, Scripted(lambda task: scored(0.0)), resume=True)

    assert summary.mean_reward == 0.5  # the file's 4 rollouts, not this run's two zeros
    assert summary.done == 2 and summary.skipped == 2
    assert summary.scored == 4
    text = _text(summary)
    assert "4 in the output file" in text and "0.5000" in text
    assert "this run" in text and "2 scored, 0 failed" in text


async def test_materialized_inputs_keep_one_row_per_pair_across_kills_and_resumes(
    tmp_path: Path,
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", numbered(3))
    broken = {1}

    def outcome(task: JsonDict) -> AgentResult:
        if task["n"] in broken:
            raise ModelError("overloaded")
        return scored(1.0)

    await run(tmp_path, Scripted(outcome), repeats=2)
    inputs = tmp_path / "out_materialized_inputs.jsonl"
    with inputs.open("ab") as file:  # a kill: (2, 1) was dispatched again and in flight
        file.write(orjson.dumps({"_ng_task_index": 2, "_ng_rollout_index": 1}) + b"\n")
        file.write(b'{"_ng_task_index": 2, "_ng_rol')
    broken.clear()
    await run(tmp_path, Scripted(outcome), repeats=2, resume=True)

    expected = [(t, r) for t in range(3) for r in range(2)]
    assert pairs(tmp_path / "out.jsonl") == expected
    assert pairs(inputs) == expected  # one row per (task, rollout), no duplicates


async def test_task_fields_are_not_averaged_as_verifier_metrics(tmp_path: Path) -> None:
    write_tasks(tmp_path / "tasks.jsonl", numbered(3, id=7, weight=2.5))
    await run(
        tmp_path,
        Scripted(lambda task: scored(1.0, correct=True, length=task["n"], score=math.nan)),
    )
    written = orjson.loads((tmp_path / "out_aggregate_metrics.json").read_bytes())
    metrics = written[0]["agent_metrics"]
    assert {"mean/reward", "mean/correct", "mean/length", "mean/input_tokens"} <= set(metrics)
    assert not {"mean/id", "mean/weight", "mean/n", "mean/score"} & set(metrics)
    assert metrics["mean/length"] == 1.0
    # read back from the files (as a resume does), the aggregate is the same
    assert written == aggregate(tmp_path / "out.jsonl", tmp_path / "out_failures.jsonl")


async def test_a_rejected_api_key_stops_the_run_at_once_and_writes_no_failure(
    tmp_path: Path,
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", numbered(50))

    def rejected(task: JsonDict) -> AgentResult:
        raise ModelAuthError("the endpoint rejected the API key (401): Incorrect API key")

    runner = Scripted(rejected)
    summary = await run(tmp_path, runner)
    assert summary.stopped_reason is not None
    assert "rejected the API key (401)" in summary.stopped_reason
    assert runner.runs <= 2  # the rollouts already in flight, no more
    assert read_jsonl(tmp_path / "out_failures.jsonl") == []
    assert read_jsonl(tmp_path / "out.jsonl") == []

    at_check = Scripted(
        lambda task: scored(1.0),
        check_error=ModelAuthError("the endpoint rejected the API key (403)"),
    )
    with pytest.raises(ModelAuthError, match="403"):
        await run(tmp_path, at_check, output=tmp_path / "fresh.jsonl")
    assert at_check.runs == 0
    assert not (tmp_path / "fresh.jsonl").exists()
    assert not (tmp_path / "fresh_failures.jsonl").exists()


async def test_an_unreachable_environment_server_stops_the_run_and_names_it(
    tmp_path: Path,
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", numbered(50))

    def down(task: JsonDict) -> AgentResult:
        raise EnvironmentUnreachable("seed_session: cannot connect to http://127.0.0.1:9")

    summary = await run(tmp_path, Scripted(down), concurrency=1)
    assert summary.stopped_reason is not None
    assert summary.stopped_reason.startswith("the environment server is unreachable")
    assert summary.failures == {"env_error": 3}


async def test_the_most_common_failure_reasons_are_counted_for_the_summary(
    tmp_path: Path,
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", numbered(5))

    def outcome(task: JsonDict) -> AgentResult:
        if task["n"] < 3:
            raise ModelError("HTTP 500 after 3 retries")
        return AgentResult(verdict=Verdict.failed(FailureKind.VERIFIER_ERROR, "no answer key"))

    summary = await run(tmp_path, Scripted(outcome))
    assert summary.done == 0
    assert summary.reasons.most_common() == [
        ("model_error: HTTP 500 after 3 retries", 3),
        ("verifier_error: no answer key", 2),
    ]
    text = _text(summary)
    assert "3  model_error: HTTP 500 after 3 retries" in text


def test_the_output_lock_is_released_by_the_kernel_when_its_holder_dies(tmp_path: Path) -> None:
    lock = tmp_path / "out.jsonl.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from palaestra.collection.lock import OutputLock\n"
            f"OutputLock.acquire(Path({str(lock)!r}), Path('out.jsonl'))\n"
            "print('locked', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(ConfigError, match=rf"another collector \(pid {holder.pid}\)"):
            OutputLock.acquire(lock, tmp_path / "out.jsonl")
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(10)
        OutputLock.acquire(lock, tmp_path / "out.jsonl").release()
    finally:
        if holder.poll() is None:
            holder.kill()


def _text(summary: RunSummary) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(summary_table(summary, 1.0))
    return console.export_text()


@pytest.mark.parametrize(
    "stop",
    [ModelAuthError("the endpoint rejected the API key (401)"), RunStopped("workers keep dying")],
)
async def test_a_run_stopped_under_its_rollouts_leaves_none_counted_in_flight(
    tmp_path: Path, stop: Exception
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", numbered(6))

    def stopping(task: JsonDict) -> AgentResult:
        if task["n"] >= 2:
            raise stop
        return scored(1.0)

    counts = RolloutCounts()
    summary = await run(tmp_path, Scripted(stopping), observer=counts)
    assert summary.stopped_reason is not None
    assert counts.started >= 3 and counts.finished == 2
    assert counts.in_flight == 0  # the stopped rollouts ended, with no record
    assert counts.abandoned == counts.started - 2 and counts.failed == {}
