"""``palaestra collect`` as a user meets its guarantees: one line per mistake, honest exits.

Each runs the real command against a real HTTP model server (``ScriptedModelServer``).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from pathlib import Path

import orjson
import pytest

from palaestra.types import JsonDict
from tests.cli.test_collect_cli import PALAESTRA, many_tasks, rows, run_cli, weather_script
from tests.support.scripted_model import ScriptedFault, ScriptedModelServer, text_response


def one_line_error(done: subprocess.CompletedProcess[str], code: int = 1) -> str:
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr
    return done.stderr


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        ("empty", ["--input", "t.jsonl"], "t.jsonl holds no tasks"),
        ("blank", ["--input", "t.jsonl"], "t.jsonl holds no tasks"),
        ("binary", ["--input", "t.jsonl"], "t.jsonl:1: binary data"),
        ("none", ["--input", "-"], "--input - (standard input) is not supported"),
        ("fifo", ["--input", "p"], "is not a regular file"),
        ("none", ["--output", "/proc/palaestra/o.jsonl"], "cannot write /proc/palaestra/o.jsonl"),
        ("file", ["--output", "f/o.jsonl"], "cannot write f/o.jsonl"),
    ],
)
def test_unusable_inputs_and_outputs_are_one_line_before_any_rollout(
    tmp_path: Path, setup: str, args: list[str], message: str
) -> None:
    if setup in ("empty", "blank", "binary"):
        content = {"empty": b"", "blank": b"\n \n", "binary": b"\x00\x01\x02\n" * 3000}
        (tmp_path / "t.jsonl").write_bytes(content[setup])
    elif setup == "fifo":
        os.mkfifo(tmp_path / "p")
    elif setup == "file":
        (tmp_path / "f").write_text("a file, not a directory")
    with ScriptedModelServer(weather_script()) as server:
        done = run_cli("collect", "--env", "weather", "--model", server.url, *args, cwd=tmp_path)
        assert server.bodies("/v1/responses") == []
    assert message in one_line_error(done)


def test_a_second_collector_on_a_running_output_is_refused_in_one_line(tmp_path: Path) -> None:
    tasks = many_tasks(tmp_path / "tasks.jsonl", 200)
    args = ["collect", "--env", "weather", "--input", str(tasks), "--output", "o.jsonl"]
    with ScriptedModelServer(weather_script(delay=0.05)) as server:
        first = subprocess.Popen(
            [*PALAESTRA, *args, "--model", server.url, "--concurrency", "2"],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_rows(tmp_path / "o.jsonl", 2)
            second = run_cli(*args, "--model", server.url, "--resume", cwd=tmp_path)
        finally:
            first.kill()
            first.wait(10)
    assert f"being written by another collector (pid {first.pid})" in one_line_error(second)


def test_a_resume_with_another_input_is_refused_naming_the_difference(tmp_path: Path) -> None:
    many_tasks(tmp_path / "a.jsonl", 3)
    (tmp_path / "b.jsonl").write_text(
        '{"responses_create_params": {"input": "Weather in Oslo?"}}\n' * 3
    )
    base = ["collect", "--env", "weather", "--output", "o.jsonl"]
    with ScriptedModelServer(weather_script()) as server:
        first = run_cli(*base, "--input", "a.jsonl", "--model", server.url, cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        other = run_cli(
            *base, "--input", "b.jsonl", "--model", server.url, "--resume", cwd=tmp_path
        )
        more = run_cli(
            *base,
            *("--input", "a.jsonl", "--repeats", "2", "--model", server.url, "--resume"),
            cwd=tmp_path,
        )
    assert "cannot resume" in one_line_error(other) and "input.sha256" in other.stderr
    assert "repeats: the run has 1, this command has 2" in one_line_error(more)
    assert len(rows(tmp_path / "o.jsonl")) == 3


def test_a_run_in_which_every_rollout_failed_exits_non_zero_with_its_reasons(
    tmp_path: Path,
) -> None:
    (tmp_path / "strict_env.py").write_text('''
from palaestra import Environment, Session


class Strict(Environment):
    """Its verifier cannot score anything: the answer key is missing."""

    def verify(self, session: Session, response: dict) -> float:
        raise KeyError("answer_key")
''')
    many_tasks(tmp_path / "t.jsonl", 3)
    with ScriptedModelServer(lambda params: text_response("42")) as server:
        done = run_cli(
            "collect",
            *("--env", "./strict_env.py", "--input", "t.jsonl", "--output", "o.jsonl"),
            *("--model", server.url),
            cwd=tmp_path,
        )
    assert done.returncode == 4, done.stderr
    assert "nothing was scored" in done.stderr
    assert "3  verifier_error:" in done.stdout and "answer_key" in done.stdout
    assert len(rows(tmp_path / "o_failures.jsonl")) == 3


def test_a_rejected_api_key_stops_at_once_says_401_and_writes_no_failure(tmp_path: Path) -> None:
    many_tasks(tmp_path / "t.jsonl", 30)
    with ScriptedModelServer(weather_script(), api_key="right-key") as server:
        done = run_cli(
            "collect",
            *("--env", "weather", "--input", "t.jsonl", "--output", "o.jsonl"),
            *("--model", server.url, "--api-key", "wrong-key", "--api", "responses"),
            cwd=tmp_path,
        )
        requests = len(server.requests)
    assert "rejected the API key (401)" in one_line_error(done)
    assert requests <= 2
    assert not (tmp_path / "o_failures.jsonl").exists() or rows(tmp_path / "o_failures.jsonl") == []


def test_a_rollout_that_hits_max_steps_is_marked_and_counted_in_the_summary(
    tmp_path: Path,
) -> None:
    def always_a_tool_call(params: JsonDict) -> JsonDict:
        from tests.support.scripted_model import tool_call_response

        return tool_call_response("get_weather", '{"city": "Paris"}')

    many_tasks(tmp_path / "t.jsonl", 2)
    with ScriptedModelServer(always_a_tool_call) as server:
        done = run_cli(
            "collect",
            *("--env", "weather", "--input", "t.jsonl", "--output", "o.jsonl"),
            *("--model", server.url, "--max-steps", "2", "--max-calls-per-turn", "4"),
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    assert [r["_palaestra"]["truncated"] for r in rows(tmp_path / "o.jsonl")] == ["max_steps"] * 2
    assert "hit --max-steps" in done.stdout
    metrics = orjson.loads((tmp_path / "o_aggregate_metrics.json").read_bytes())
    assert metrics[0]["key_metrics"]["truncated"] == 2
    identity = orjson.loads((tmp_path / "o_run.json").read_bytes())
    # The agent's every keyword, the defaults too (max_user_turns): a changed default is a
    # changed run.
    options = {"max_steps": 2, "max_calls_per_turn": 4, "max_user_turns": 30}
    assert identity["agent"] == {"name": "tool_calling", "options": options}


def test_sigterm_ends_collect_like_ctrl_c_saved_resumable_and_aggregated(tmp_path: Path) -> None:
    tasks = many_tasks(tmp_path / "tasks.jsonl", 40)
    output = tmp_path / "run.jsonl"
    args = ["collect", "--env", "weather", "--input", str(tasks), "--output", str(output)]
    with ScriptedModelServer(weather_script(delay=0.03)) as server:
        process = subprocess.Popen(
            [*PALAESTRA, *args, "--model", server.url, "--concurrency", "2"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_for_rows(output, 5)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == 143, stderr
        assert "terminated (SIGTERM)" in stderr and "--resume" in stderr
        assert "Traceback" not in stderr
        written = rows(output)
        metrics = orjson.loads(output.with_name("run_aggregate_metrics.json").read_bytes())
        assert metrics[0]["key_metrics"]["rollouts"] == len(written)
        resumed = run_cli(*args, "--model", server.url, "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(r["_ng_task_index"] for r in rows(output)) == list(range(40))


def test_a_full_disk_stops_the_run_in_one_line_and_leaves_no_torn_row(tmp_path: Path) -> None:
    """The file size limit (RLIMIT_FSIZE) fails writes as a full disk does: short, then EFBIG."""
    tasks = many_tasks(tmp_path / "tasks.jsonl", 30)
    args = ["collect", "--env", "weather", "--input", str(tasks), "--output", "o.jsonl"]

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (12_000, resource.RLIM_INFINITY))

    with ScriptedModelServer(weather_script()) as server:
        full = subprocess.run(
            [*PALAESTRA, *args, "--model", server.url, "--concurrency", "1"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=small_files,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert full.returncode == 3, full.stderr
        assert "Traceback" not in full.stderr + full.stdout
        assert "cannot write" in full.stdout and "File too large" in full.stdout
        assert "--resume" in full.stdout
        output = (tmp_path / "o.jsonl").read_bytes()
        assert output.endswith(b"\n")  # every line whole: nothing for resume to repair
        assert len(rows(tmp_path / "o.jsonl")) < 30
        resumed = run_cli(*args, "--model", server.url, "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(r["_ng_task_index"] for r in rows(tmp_path / "o.jsonl")) == list(range(30))


def wait_for_rows(path: Path, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} did not reach {count} rows")


def context_length_error(params: JsonDict) -> ScriptedFault:
    """What an OpenAI-compatible server answers a prompt past the model's context."""
    message = "This model's maximum context length is 4096 tokens; the prompt has 9000."
    return ScriptedFault(status=400, body={"error": {"message": message, "code": None}})


@pytest.mark.parametrize(
    "env_args",
    [
        ("--env", "tau2", "--env-arg", "user=gold"),
        ("--env", "long_context", "--env-arg", "family=niah", "--env-arg", "length=1024"),
    ],
    ids=["tau2", "long_context"],
)
def test_a_prompt_past_the_models_context_is_a_truncation_counted_in_the_summary(
    tmp_path: Path, env_args: tuple[str, ...]
) -> None:
    with ScriptedModelServer(context_length_error) as server:
        done = run_cli(
            "collect",
            *env_args,
            *("--num-tasks", "2", "--output", "o.jsonl", "--model", server.url),
            cwd=tmp_path,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    written = rows(tmp_path / "o.jsonl")
    assert [row["_palaestra"].get("truncated") for row in written] == ["context_exceeded"] * 2
    assert [row["reward"] for row in written] == [0.0, 0.0]  # scored as it stood: nothing
    assert all(row["response"]["status"] == "incomplete" for row in written)
    assert "2 truncated (2 outgrew the model's context" in done.stdout
    metrics = orjson.loads((tmp_path / "o_aggregate_metrics.json").read_bytes())
    assert metrics[0]["key_metrics"]["truncated"] == 2
    assert metrics[0]["key_metrics"]["truncated/context_exceeded"] == 2
