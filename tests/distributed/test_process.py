"""``--workers N``: rollouts in N worker processes, written by the one collector.

Real processes, real HTTP to a scripted model; the environment (``envs.Numbered``) rewards by
task number, notes which process ran each rollout, and can be slowed down or made deadly.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import orjson
import pytest

from palaestra import collect
from palaestra.collection.collector import RunSummary
from palaestra.collection.lock import OutputLock
from palaestra.distributed.process import ProcessWorker
from palaestra.errors import ConfigError
from palaestra.types import JsonDict
from tests.cli.test_collect_cli import rows, weather_script
from tests.distributed.envs import Numbered, numbered_tasks
from tests.run.test_metrics import (
    Samples,
    by_label,
    failing_weather,
    function_call_items,
    scrape,
    tasks_file,
)
from tests.support.network import free_port
from tests.support.scripted_model import ScriptedFault, ScriptedModelServer, fail_first

ROOT = Path(__file__).parents[2]
ENV = "tests.distributed.envs:Numbered"


def pairs(path: Path) -> Counter[tuple[int, int]]:
    return Counter((r["_ng_task_index"], r["_ng_rollout_index"]) for r in rows(path))


def same_fields(path: Path) -> list[tuple[int, int, float, str]]:
    return sorted(
        (r["_ng_task_index"], r["_ng_rollout_index"], r["reward"], r["agent_ref"]["name"])
        for r in rows(path)
    )


class Killer(threading.Thread):
    """SIGKILLs the first process that notes a rollout in ``pids`` (once)."""

    def __init__(self, pids: Path) -> None:
        super().__init__(daemon=True)
        self.pids, self.killed = pids, 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.02):
            notes = list(self.pids.glob("*.jsonl"))
            if notes:
                self.killed = int(notes[0].stem)
                os.kill(self.killed, signal.SIGKILL)
                return


def collect_killing_a_worker(
    tmp_path: Path, count: int, delay: float, env_args: JsonDict | None = None, **options: object
) -> tuple[RunSummary, Path, int]:
    """``collect`` of ``count`` numbered tasks (each rollout ``delay`` s, ``env_args`` for the
    rest) into ``out.jsonl``, the first worker to note a rollout SIGKILLed; the summary, the
    notes and the killed pid."""
    tasks = numbered_tasks(tmp_path / "tasks.jsonl", count)
    pids = tmp_path / "pids"
    pids.mkdir()
    killer = Killer(pids)
    with ScriptedModelServer(weather_script()) as server:
        killer.start()
        summary = collect(
            env=ENV, env_args={"delay": delay, "pids": str(pids), **(env_args or {})},
            model=server.url,
            input=tasks, output=tmp_path / "out.jsonl", **options,  # type: ignore[arg-type]
        )  # fmt: skip
        killer.done.set()
    return summary, pids, killer.killed


def test_two_worker_processes_write_the_rows_a_run_in_process_writes(tmp_path: Path) -> None:
    tasks = numbered_tasks(tmp_path / "tasks.jsonl", 6)
    common = {"env": ENV, "input": tasks, "repeats": 2, "concurrency": 4}
    with ScriptedModelServer(weather_script()) as server:
        here = collect(**common, model=server.url, output=tmp_path / "here.jsonl")  # type: ignore[arg-type]
        there = collect(
            **common,  # type: ignore[arg-type]
            model=server.url,
            output=tmp_path / "there.jsonl",
            workers=2,
        )
    assert (here.done, there.done, there.failed) == (12, 12, 0)
    assert same_fields(tmp_path / "there.jsonl") == same_fields(tmp_path / "here.jsonl")
    ran_in = {r["pid"] for r in rows(tmp_path / "there.jsonl")}
    assert len(ran_in) == 2 and os.getpid() not in ran_in  # spread over both workers
    assert {r["pid"] for r in rows(tmp_path / "here.jsonl")} == {os.getpid()}
    assert there.mean_reward == pytest.approx(here.mean_reward)  # (summed in another order)


def test_a_worker_killed_mid_run_leaves_exactly_one_row_per_task_and_rollout(
    tmp_path: Path,
) -> None:
    summary, _, killed = collect_killing_a_worker(
        tmp_path, 8, 0.3, repeats=2, concurrency=8, workers=2
    )
    assert killed  # a worker died with rollouts in flight (each sleeps 0.3 s)
    assert killed not in {r["pid"] for r in rows(tmp_path / "out.jsonl")}
    expected = Counter((t, r) for t in range(8) for r in range(2))
    assert pairs(tmp_path / "out.jsonl") == expected
    assert rows(tmp_path / "out_failures.jsonl") == []
    assert (summary.done, summary.failed, summary.stopped_reason) == (16, 0, None)
    dispatched = Counter(
        (r["_ng_task_index"], r["_ng_rollout_index"])
        for r in rows(tmp_path / "out_materialized_inputs.jsonl")
    )
    assert dispatched == expected  # rerun on another worker, not dispatched again


def test_a_rollout_rerun_after_its_worker_died_says_so_in_its_row(tmp_path: Path) -> None:
    _, pids, killed = collect_killing_a_worker(tmp_path, 6, 0.3, concurrency=6, workers=2)
    assert killed
    notes = (pids / f"{killed}.jsonl").read_bytes().splitlines()
    lost = {orjson.loads(line)["n"] for line in notes}
    reruns = {r["n"]: r["_palaestra"].get("worker_reruns") for r in rows(tmp_path / "out.jsonl")}
    assert lost and all(reruns[n] == 1 for n in lost)  # in flight on the killed worker
    assert set(reruns.values()) <= {None, 1}  # absent from the rows that ran once
    assert None in reruns.values()


def test_a_rerun_rollout_whose_failure_is_raised_says_it_was_rerun_in_its_failure_record(
    tmp_path: Path,
) -> None:
    # Every verdict is unwritable: each worker sends its rollout's failure raised, not a result.
    _, pids, killed = collect_killing_a_worker(
        tmp_path, 6, 0.3, {"unwritable": True}, concurrency=6, workers=2
    )
    assert killed
    lost = {orjson.loads(line)["n"] for line in (pids / f"{killed}.jsonl").read_bytes().split()}
    failures = rows(tmp_path / "out_failures.jsonl")
    assert rows(tmp_path / "out.jsonl") == [] and len(failures) == 6
    assert all("row cannot be written" in f["failure"]["reason"] for f in failures)
    reruns = {f["n"]: f["_palaestra"].get("worker_reruns") for f in failures}
    assert lost and all(reruns[n] == 1 for n in lost)  # in flight on the killed worker
    # A rollout sent to the killed worker may die before it notes itself: rerun, not in lost.
    assert set(reruns.values()) <= {None, 1} and None in reruns.values()


def test_a_task_that_kills_its_worker_every_time_is_a_worker_crash_and_the_others_finish(
    tmp_path: Path,
) -> None:
    tasks = numbered_tasks(tmp_path / "tasks.jsonl", 6, crash={2})
    with ScriptedModelServer(weather_script()) as server:
        summary = collect(
            env=ENV, env_args={"delay": 0.1}, model=server.url, input=tasks,
            output=tmp_path / "out.jsonl", concurrency=4, workers=2,
        )  # fmt: skip
    assert sorted(pairs(tmp_path / "out.jsonl")) == [(n, 0) for n in (0, 1, 3, 4, 5)]
    (failure,) = rows(tmp_path / "out_failures.jsonl")
    assert (failure["_ng_task_index"], failure["failure"]["kind"]) == (2, "worker_crash")
    assert "alone" in failure["failure"]["reason"]
    assert failure["_palaestra"]["worker_reruns"] == 1  # it ran twice: the second was a rerun
    assert summary.failures == Counter({"worker_crash": 1}) and summary.stopped_reason is None


def test_workers_that_keep_dying_stop_the_run_resumably_instead_of_looping(tmp_path: Path) -> None:
    # the deadly task also leaves a file that makes every new worker die while it starts
    tasks = numbered_tasks(tmp_path / "tasks.jsonl", 4, crash={0})
    doom = tmp_path / "doom"
    with ScriptedModelServer(weather_script()) as server:
        summary = collect(
            env=ENV, env_args={"delay": 0.2, "doom": str(doom)}, model=server.url, input=tasks,
            output=tmp_path / "out.jsonl", concurrency=4, workers=2,
        )  # fmt: skip
    assert doom.exists()
    assert summary.stopped_reason is not None
    assert "workers died or failed to start" in summary.stopped_reason
    assert "--resume" in summary.stopped_reason
    written = pairs(tmp_path / "out.jsonl") + pairs(tmp_path / "out_failures.jsonl")
    assert all(count == 1 for count in written.values())  # nothing twice
    assert len(written) < 4  # and the rest is left for --resume


def test_a_resume_may_change_the_number_of_workers(tmp_path: Path) -> None:
    tasks = numbered_tasks(tmp_path / "tasks.jsonl", 4)
    common = {"env": ENV, "input": tasks, "output": tmp_path / "out.jsonl", "concurrency": 2}
    with ScriptedModelServer(weather_script()) as server:
        first = collect(**common, model=server.url, workers=2, limit=2)  # type: ignore[arg-type]
        more = collect(**common, model=server.url, resume=True, limit=2)  # type: ignore[arg-type]
    assert (first.done, more.done, more.skipped, more.stopped_reason) == (2, 0, 2, None)


@pytest.mark.parametrize("refusal", ["not resumed", "another run", "locked"])
def test_a_refused_run_starts_no_worker_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refusal: str
) -> None:
    tasks = numbered_tasks(tmp_path / "tasks.jsonl", 2)
    output = tmp_path / "out.jsonl"
    started: list[str] = []
    real_start = ProcessWorker.start

    async def start(worker: ProcessWorker) -> JsonDict:
        started.append(worker.name)
        return await real_start(worker)

    monkeypatch.setattr(ProcessWorker, "start", start)
    common = {"env": ENV, "input": tasks, "output": output}
    with ScriptedModelServer(weather_script()) as server:
        collect(**common, model=server.url, workers=1)  # type: ignore[arg-type]
        again = {
            "resume": refusal != "not resumed",
            "repeats": 2 if refusal == "another run" else 1,
        }
        with contextlib.ExitStack() as stack:
            if refusal == "locked":
                stack.enter_context(OutputLock.acquire(tmp_path / "out.jsonl.lock", output))
            with pytest.raises(ConfigError):
                collect(**common, **again, model=server.url, workers=2)  # type: ignore[arg-type]
    assert started == []


def test_an_environment_object_workers_cannot_receive_is_one_clear_line(tmp_path: Path) -> None:
    numbered_tasks(tmp_path / "tasks.jsonl", 1)

    class Local(Numbered):  # defined in a function: a worker process cannot import it
        pass

    with pytest.raises(
        ConfigError, match=r"^test_an_.*<locals>\.Local is defined inside a function"
    ):
        collect(
            env=Local, model="http://127.0.0.1:9/v1", input=tmp_path / "tasks.jsonl",
            output=tmp_path / "out.jsonl", workers=2,
        )  # fmt: skip
    assert not (tmp_path / "out.jsonl").exists()


def test_the_collect_command_runs_on_two_workers(tmp_path: Path) -> None:
    tasks = numbered_tasks(tmp_path / "tasks.jsonl", 4)
    with ScriptedModelServer(weather_script()) as server:
        done = subprocess.run(
            [sys.executable, "-m", "palaestra", "collect", "--env", ENV, "--input", str(tasks),
             "--output", str(tmp_path / "out.jsonl"), "--model", server.url, "--repeats", "2",
             "--workers", "2", "--concurrency", "4"],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert pairs(tmp_path / "out.jsonl") == Counter((t, r) for t in range(4) for r in range(2))
    assert len({r["pid"] for r in rows(tmp_path / "out.jsonl")}) == 2
    assert "Traceback" not in done.stderr


def test_a_model_pool_s_counts_over_two_workers_add_up_as_one_process_reports_them(
    tmp_path: Path,
) -> None:
    tasks = numbered_tasks(tmp_path / "tasks.jsonl", 6)
    common = {"env": ENV, "input": tasks, "repeats": 2, "concurrency": 4}
    with ScriptedModelServer(weather_script()) as a, ScriptedModelServer(weather_script()) as b:
        here = collect(**common, model=[a.url, b.url], output=tmp_path / "here.jsonl")  # type: ignore[arg-type]
        there = collect(
            **common,  # type: ignore[arg-type]
            model=[a.url, b.url],
            output=tmp_path / "there.jsonl",
            workers=2,
        )
        served = len(a.bodies("/v1/responses")) + len(b.bodies("/v1/responses"))
    assert served == 2 * 2 * 12  # two model calls per rollout, two runs
    for summary in (here, there):
        assert [e["url"] for e in summary.endpoints] == [a.url, b.url]
        assert sum(e["calls"] for e in summary.endpoints) == 24
        assert sum(e["rollouts"] for e in summary.endpoints) == 12
    assert {e["workers"] for e in there.endpoints} == {2}
    aggregate = orjson.loads((tmp_path / "there_aggregate_metrics.json").read_bytes())
    written = [entry for entry in aggregate if "model_endpoints" in entry]
    assert written and written[0]["model_endpoints"] == there.endpoints


def test_metrics_of_a_run_on_two_workers_count_the_model_and_tool_calls_made_in_them(
    tmp_path: Path,
) -> None:
    tasks = tasks_file(tmp_path / "tasks.jsonl", ["Paris", "FAIL", "Oslo", "Rome", "Lima"])
    port = free_port()
    scrapes: list[Samples] = []

    def on_progress(summary: RunSummary) -> None:  # on the run's loop: the server is a thread
        scrapes.append(scrape(f"http://127.0.0.1:{port}/metrics"))

    script = fail_first(1, ScriptedFault(status=500), failing_weather())
    with ScriptedModelServer(script) as server:
        summary = collect(
            env="weather", model=server.url, input=tasks, output=tmp_path / "out.jsonl",
            repeats=2, concurrency=4, workers=2, metrics_port=port, progress=on_progress,
        )  # fmt: skip
        seen = len(server.bodies("/v1/responses"))
    last = scrapes[-1]  # at the last rollout's record
    assert (summary.done, summary.failed) == (8, 2)
    calls = by_label(last, "palaestra_model_calls_total", "endpoint")
    retries = by_label(last, "palaestra_model_retries_total", "endpoint")
    errors = by_label(last, "palaestra_model_errors_total", "endpoint")
    assert calls[server.url] + retries[server.url] == seen  # what the model saw, over 2 workers
    assert (retries, errors) == ({server.url: 1}, {server.url: 2})
    tools = by_label(last, "palaestra_tool_calls_total", "tool")
    assert tools == dict(function_call_items(tmp_path / "out.jsonl")) == {"get_weather": 8}
    assert last["palaestra_sessions_live", ()] == 0
    assert last["palaestra_rollouts_in_flight", ()] == 0
    made = [s.get(("palaestra_tool_calls_total", (("tool", "get_weather"),)), 0) for s in scrapes]
    assert made == sorted(made)  # counters never go back


def test_a_durable_rollout_whose_worker_died_continues_from_its_last_turn_elsewhere(
    tmp_path: Path,
) -> None:
    from tests.support import durable_ledger
    from tests.support.durable_ledger import ledger_lines, ledger_script, ledger_tasks

    count, turns = 4, 5
    ledger = tmp_path / "ledger.jsonl"
    tasks = ledger_tasks(tmp_path / "tasks.jsonl", ledger, count, turns)
    killed: list[int] = []

    def kill_a_worker_mid_episode() -> None:
        while not killed:
            deposits = Counter(row["task"] for row in ledger_lines(ledger))
            if len(deposits) == count and min(deposits.values()) >= 2:
                killed.append(ledger_lines(ledger)[-1]["pid"])
                os.kill(killed[0], signal.SIGKILL)
            threading.Event().wait(0.02)

    with ScriptedModelServer(ledger_script(delay=0.2)) as server:
        killer = threading.Thread(target=kill_a_worker_mid_episode, daemon=True)
        killer.start()
        summary = collect(
            env=f"{durable_ledger.__file__}:DurableLedger", model=server.url, input=tasks,
            output=tmp_path / "out.jsonl", concurrency=count, workers=2,
            agent_options={"max_steps": 20},
        )  # fmt: skip
    assert killed and (summary.done, summary.failed) == (count, 0)
    on_it = {r["task"] for r in ledger_lines(ledger) if r["pid"] == killed[0]}
    for row in rows(tmp_path / "out.jsonl"):
        facts = row["_palaestra"]
        if row["_ng_task_index"] in on_it:
            assert facts["worker_reruns"] == 1
            assert facts["resumed"]["attempts"] == 2 and facts["resumed"]["from_turn"] >= 1
        else:
            assert "resumed" not in facts
        assert row["reward"] == 1.0
    each = Counter((r["task"], r["seq"]) for r in ledger_lines(ledger))
    assert each == Counter({(t, s): 1 for t in range(count) for s in range(turns)})
    assert summary.continued == len(on_it) >= 1
