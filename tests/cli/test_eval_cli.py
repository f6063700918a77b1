"""``palaestra eval`` as a user runs it: real processes, a scripted model over real HTTP.

Two fast environments (mcqa, weather; see ``tests.run.test_eval`` for the
script): the figures of each and overall, the report, the exit status, and an evaluation
interrupted with Ctrl-C in its second environment that ``--resume`` finishes without doing
again what was done.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import orjson

from tests.cli.test_collect_cli import PALAESTRA, rows, run_cli
from tests.run.test_eval import TwoEnvironments
from tests.support.processes import interruptible
from tests.support.scripted_model import ScriptedModelServer


def test_eval_prints_each_environment_and_overall_with_intervals(tmp_path: Path) -> None:
    with ScriptedModelServer(TwoEnvironments()) as server:
        args = ["--env", "mcqa", "--env", "weather", "--model", server.url, "--repeats", "2"]
        done = run_cli("eval", *args, "--output-dir", "ev", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [" ".join(line.split()) for line in done.stdout.splitlines()]
    mcqa = "mcqa mean reward 0.750 [0.301, 0.954] n=4 tasks/8 rollouts, 2 failed (excluded)"
    assert mcqa in lines  # Wilson's interval over the 4 scored tasks
    assert "pass^2 1.000 [0.566, 1.000] n=5 tasks/10 rollouts" in lines  # weather's
    overall = "overall mean reward 0.889 [0.565, 0.980] n=9 tasks/18 rollouts, 2 failed (excluded)"
    assert overall in lines
    assert "overall: every environment's tasks pooled" in done.stdout
    assert "report: ev/report.md" in done.stdout
    assert (tmp_path / "ev" / "report.html").is_file()
    assert {p.name for p in (tmp_path / "ev").glob("*.jsonl")} >= {"mcqa.jsonl", "weather.jsonl"}


def test_eval_json_and_a_second_eval_without_resume_is_one_line(tmp_path: Path) -> None:
    with ScriptedModelServer(TwoEnvironments()) as server:
        args = ["--env", "mcqa", "--env", "weather", "--model", server.url, "--limit", "2"]
        done = run_cli("eval", *args, "--output-dir", "ev", "--json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        result = orjson.loads(done.stdout)
        assert [env["name"] for env in result["environments"]] == ["mcqa", "weather"]
        assert result["figures"][0]["name"] == "mean reward" and result["figures"][0]["tasks"] == 3
        again = run_cli("eval", *args, "--output-dir", "ev", cwd=tmp_path)
    assert again.returncode == 1
    assert again.stderr.strip().splitlines() == [
        "error: ev/mcqa.jsonl already exists (environment mcqa): pass --resume to continue the "
        "evaluation or --overwrite to start over"
    ]


def test_an_interrupted_eval_resumes_where_it_stopped(tmp_path: Path) -> None:
    script = TwoEnvironments(delay=0.2)
    with ScriptedModelServer(script) as server:
        args = ["eval", "--env", "mcqa", "--env", "weather", "--model", server.url]
        args += ["--repeats", "2", "--concurrency", "1", "--output-dir", "ev"]
        process = subprocess.Popen(
            [*PALAESTRA, *args],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
            preexec_fn=interruptible,
        )
        weather = tmp_path / "ev" / "weather.jsonl"
        deadline = time.monotonic() + 60
        while not (weather.is_file() and len(rows(weather)) >= 2):
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130, stderr
        assert "--resume" in stderr
        done_before = len(rows(weather))
        assert 2 <= done_before < 10
        assert not (tmp_path / "ev" / "report.md").exists()  # no report of half an evaluation
        calls = script.calls.copy()

        resumed = run_cli(*args, "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    # mcqa was finished: only its two failed rollouts (task 1, a 400) are tried again
    assert script.calls["mcqa"] - calls["mcqa"] == 2
    # weather: the rollouts left, two calls each (a tool call, then the answer), no more
    assert script.calls["weather"] - calls["weather"] == 2 * (10 - done_before)
    pairs = [(row["_ng_task_index"], row["_ng_rollout_index"]) for row in rows(weather)]
    assert sorted(pairs) == [(task, repeat) for task in range(5) for repeat in range(2)]
    assert "weather" in resumed.stdout and "overall" in resumed.stdout
    assert (tmp_path / "ev" / "report.md").is_file()
