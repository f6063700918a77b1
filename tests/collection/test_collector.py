from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from palaestra import Environment, LocalEnvironmentClient, Session, ToolCallingAgent, tool
from palaestra.agents import BoundAgent
from palaestra.collection import collector as collector_module
from palaestra.collection.aggregate import aggregate
from palaestra.collection.collector import CollectConfig, RunSummary, collect
from palaestra.collection.tasks import read_tasks as real_read_tasks
from palaestra.errors import ConfigError, ModelError, ModelUnreachable
from palaestra.types import JsonDict
from tests.support.fake_model import FakeModel, call, outputs_so_far, response, say


class Echo(Environment):
    """Reward 1 when the answer contains the task's expected word."""

    @tool
    def lookup(self, key: str) -> str:
        """Look up a key."""
        return key.upper()

    def verify(self, session: Session, response: JsonDict) -> float:
        from palaestra import output_text

        return float(session.task["expected"] in output_text(response))


class Quiet:
    def __init__(self) -> None:
        self.messages: list[str] = []
        self.updates = 0

    def start(self, summary: RunSummary) -> None:
        self.total = summary.total

    def update(self, summary: RunSummary) -> None:
        self.updates += 1

    def message(self, text: str) -> None:
        self.messages.append(text)

    def stop(self) -> None:
        pass


def tasks_file(tmp_path: Path, count: int, extra_lines: list[str] | None = None) -> Path:
    path = tmp_path / "tasks.jsonl"
    lines = [
        orjson.dumps(
            {"responses_create_params": {"input": f"word{i}"}, "expected": f"WORD{i}"}
        ).decode()
        for i in range(count)
    ]
    path.write_text("\n".join(lines + (extra_lines or [])) + "\n")
    return path


def lookup_then_answer(params: JsonDict) -> JsonDict:
    done = outputs_so_far(params)
    if not done:
        return response(
            call("lookup", orjson.dumps({"key": params["input"][0]["content"]}).decode())
        )
    return say(f"the answer is {done[-1]['output']}")


def written_aggregate(tmp_path: Path) -> list[JsonDict]:
    entries: list[JsonDict] = orjson.loads((tmp_path / "out_aggregate_metrics.json").read_bytes())
    return entries


def failures_path(tmp_path: Path) -> Path:
    return tmp_path / "out_failures.jsonl"


def read_jsonl(path: Path) -> list[JsonDict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


async def run(tmp_path: Path, model: FakeModel, **config: object) -> RunSummary:
    options: dict[str, object] = {
        "input": tmp_path / "tasks.jsonl",
        "output": tmp_path / "out.jsonl",
        "agent_ref": {"type": "responses_api_agents", "name": "echo"},
    }
    options.update(config)
    runner = BoundAgent(ToolCallingAgent(), LocalEnvironmentClient(Echo()), model)
    return await collect(runner, CollectConfig(**options), Quiet())  # type: ignore[arg-type]


async def test_one_verified_row_per_task_and_rollout_with_sidecars(tmp_path: Path) -> None:
    tasks_file(tmp_path, 3)
    summary = await run(
        tmp_path,
        FakeModel(lookup_then_answer),
        repeats=2,
        concurrency=4,
        overrides={"temperature": 0.5},
    )
    rows = read_jsonl(tmp_path / "out.jsonl")
    assert sorted((r["_ng_task_index"], r["_ng_rollout_index"]) for r in rows) == [
        (t, r) for t in range(3) for r in range(2)
    ]
    for row in rows:
        assert row["reward"] == 1.0
        assert row["agent_ref"] == {"type": "responses_api_agents", "name": "echo"}
        assert row["responses_create_params"]["temperature"] == 0.5
        assert row["response"]["output"][-1]["type"] == "message"
        assert row["_palaestra"]["attempt"] == 1
        assert row["expected"] == f"WORD{row['_ng_task_index']}"
    inputs = read_jsonl(tmp_path / "out_materialized_inputs.jsonl")
    assert len(inputs) == 6 and all("response" not in r for r in inputs)
    assert read_jsonl(tmp_path / "out_failures.jsonl") == []
    [metrics] = orjson.loads((tmp_path / "out_aggregate_metrics.json").read_bytes())
    assert metrics["key_metrics"]["mean/reward"] == 1.0
    assert metrics["key_metrics"]["pass@2"] == 1.0
    assert summary.done == 6 and summary.mean_reward == 1.0 and not summary.failures


async def test_bad_rows_and_failed_rollouts_go_to_the_sidecar_not_to_reward_zero(
    tmp_path: Path,
) -> None:
    tasks_file(tmp_path, 4, extra_lines=['{"responses_create_params": 5}', "{oops"])

    def flaky(params: JsonDict) -> JsonDict:
        if params["input"][0]["content"] == "word1":
            raise ModelError("HTTP 500 after 3 retries")
        return lookup_then_answer(params)

    summary = await run(tmp_path, FakeModel(flaky))
    rows = read_jsonl(tmp_path / "out.jsonl")
    assert sorted(r["_ng_task_index"] for r in rows) == [0, 2, 3]
    failures = read_jsonl(tmp_path / "out_failures.jsonl")
    kinds = sorted((f["_ng_task_index"], f["failure"]["kind"]) for f in failures)
    assert kinds == [(1, "model_error"), (4, "invalid_input"), (5, "invalid_input")]
    model_failure = next(f for f in failures if f["_ng_task_index"] == 1)
    assert model_failure["source"] == {"path": str(tmp_path / "tasks.jsonl"), "line": 2}
    bad = next(f for f in failures if f["_ng_task_index"] == 4)
    assert bad["source"] == {
        "path": str(tmp_path / "tasks.jsonl"),
        "line": 5,
        "field": "responses_create_params",
    }
    assert summary.mean_reward == 1.0  # the failure is not averaged in as 0
    assert summary.failures == {"model_error": 1, "invalid_input": 2}
    assert written_aggregate(tmp_path) == aggregate(tmp_path / "out.jsonl", failures_path(tmp_path))
    [metrics] = written_aggregate(tmp_path)
    assert metrics["failures_by_kind"] == {"model_error": 1, "invalid_input": 2}


async def test_resume_skips_finished_pairs_and_retries_failures(tmp_path: Path) -> None:
    tasks_file(tmp_path, 4)
    broken = {"word2"}

    def sometimes(params: JsonDict) -> JsonDict:
        if params["input"][0]["content"] in broken:
            raise ModelError("overloaded")
        return lookup_then_answer(params)

    await run(tmp_path, FakeModel(sometimes), repeats=2)
    out = tmp_path / "out.jsonl"
    with out.open("ab") as file:  # a run killed mid-write leaves a torn line
        file.write(b'{"_ng_task_index": 3, "_ng_rollo')
    with pytest.raises(ConfigError, match="--resume"):
        await run(tmp_path, FakeModel(sometimes), repeats=2)
    broken.clear()
    model = FakeModel(sometimes)
    summary = await run(tmp_path, model, repeats=2, resume=True)
    assert summary.skipped == 6 and summary.done == 2
    rows = read_jsonl(out)
    pairs = [(r["_ng_task_index"], r["_ng_rollout_index"]) for r in rows]
    assert sorted(pairs) == [(t, r) for t in range(4) for r in range(2)]
    assert len(set(pairs)) == len(pairs)
    retried = [r for r in rows if r["_ng_task_index"] == 2]
    assert all(r["_palaestra"]["attempt"] == 2 for r in retried)
    assert read_jsonl(tmp_path / "out_failures.jsonl") == []
    assert len(read_jsonl(tmp_path / "out_failures_history.jsonl")) == 2
    # The aggregate covers the rows of both runs, as if computed from the file afresh.
    [metrics] = written_aggregate(tmp_path)
    assert metrics["key_metrics"]["rollouts"] == 8 and metrics["key_metrics"]["failures"] == 0
    assert written_aggregate(tmp_path) == aggregate(out, failures_path(tmp_path))


async def test_overwrite_starts_over(tmp_path: Path) -> None:
    tasks_file(tmp_path, 2)
    await run(tmp_path, FakeModel(lookup_then_answer))
    summary = await run(tmp_path, FakeModel(lookup_then_answer), overwrite=True, limit=1)
    assert summary.done == 1
    assert len(read_jsonl(tmp_path / "out.jsonl")) == 1


async def test_unreachable_model_stops_the_run_cleanly(tmp_path: Path) -> None:
    tasks_file(tmp_path, 50)

    def down(params: JsonDict) -> JsonDict:
        raise ModelUnreachable("cannot connect to http://127.0.0.1:9/v1")

    summary = await run(tmp_path, FakeModel(down), concurrency=1)
    assert summary.stopped_reason is not None and "unreachable" in summary.stopped_reason
    assert sum(summary.failures.values()) == 3  # stopped, not 50 doomed attempts


async def test_only_a_bounded_window_of_rollouts_is_resident(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks_file(tmp_path, 200)
    in_flight = 0
    peak = 0
    dispatched_ahead: list[int] = []
    taken = 0

    def counted_read_tasks(*args: Any, **kwargs: Any) -> Iterator[Any]:
        nonlocal taken
        for item in real_read_tasks(*args, **kwargs):
            taken += 1
            yield item

    monkeypatch.setattr(collector_module, "read_tasks", counted_read_tasks)

    def lines(name: str) -> int:
        path = tmp_path / name
        return path.read_bytes().count(b"\n") if path.exists() else 0

    class Slow(FakeModel):
        async def respond(self, params: JsonDict) -> JsonDict:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            dispatched_ahead.append(taken - lines("out.jsonl"))
            await asyncio.sleep(0)
            in_flight -= 1
            return say("no")

    summary = await run(tmp_path, Slow(lambda p: say("x")), concurrency=7)
    assert summary.done == 200
    assert peak == 7
    # tasks are taken from the input only as rollouts finish: never more than 7 ahead
    assert max(dispatched_ahead) == 7
