"""``palaestra collect`` as a user runs it: a real process against a real HTTP model server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from palaestra.types import JsonDict
from tests.support.scripted_model import (
    ScriptedFault,
    ScriptedModelServer,
    text_response,
    tool_call_response,
)

PALAESTRA = [sys.executable, "-m", "palaestra"]


def weather_script(delay: float = 0.0):  # type: ignore[no-untyped-def]
    def script(params: JsonDict) -> JsonDict | ScriptedFault:
        items = params["input"] if isinstance(params["input"], list) else []
        answered = any(i.get("type") == "function_call_output" for i in items)
        reply = (
            text_response("It is cold, take a coat.")
            if answered
            else tool_call_response("get_weather", '{"city": "Paris"}')
        )
        return ScriptedFault(status=200, body=reply, delay=delay) if delay else reply

    return script


def run_cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PALAESTRA, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200"},
    )


def rows(path: Path) -> list[JsonDict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def many_tasks(path: Path, count: int) -> Path:
    row = {"responses_create_params": {"input": [{"role": "user", "content": "Weather?"}]}}
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for _ in range(count)))
    return path


def test_collect_writes_rollouts_and_sidecars_and_keeps_the_key_secret(tmp_path: Path) -> None:
    with ScriptedModelServer(weather_script()) as server:
        done = run_cli(
            "collect",
            "--env",
            "weather",
            "--model",
            server.url,
            "--output",
            "out/w.jsonl",
            "--repeats",
            "2",
            "--api-key",
            "sk-very-secret-123",
            "--temperature",
            "0.3",
            cwd=tmp_path,
        )
        assert server.authorizations and all(
            a == "Bearer sk-very-secret-123" for a in server.authorizations
        )
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    result = rows(out / "w.jsonl")
    assert sorted((r["_ng_task_index"], r["_ng_rollout_index"]) for r in result) == [
        (t, r) for t in range(5) for r in range(2)
    ]
    assert all(r["reward"] == 1.0 and r["called_tool"] for r in result)
    assert all(r["responses_create_params"]["temperature"] == 0.3 for r in result)
    assert len(rows(out / "w_materialized_inputs.jsonl")) == 10
    assert rows(out / "w_failures.jsonl") == []
    metrics = orjson.loads((out / "w_aggregate_metrics.json").read_bytes())
    assert metrics[0]["key_metrics"]["mean/reward"] == 1.0
    assert "mean reward" in done.stdout and "1.0000" in done.stdout
    for path in out.iterdir():
        assert b"sk-very-secret-123" not in path.read_bytes(), path


def test_sigkill_mid_run_then_resume_gives_exactly_one_row_per_pair(tmp_path: Path) -> None:
    tasks = many_tasks(tmp_path / "tasks.jsonl", 40)
    output = tmp_path / "run.jsonl"
    args = [
        "collect",
        "--env",
        "weather",
        "--input",
        str(tasks),
        "--output",
        str(output),
        "--repeats",
        "2",
        "--concurrency",
        "4",
    ]
    with ScriptedModelServer(weather_script(delay=0.03)) as server:
        process = subprocess.Popen(
            [*PALAESTRA, *args, "--model", server.url],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if output.exists() and output.read_bytes().count(b"\n") >= 10:
                break
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        killed_at = len(rows_tolerant(output))
        assert 10 <= killed_at < 80, "the kill must land mid-run"
        again = run_cli(*args, "--model", server.url, cwd=tmp_path)
        assert again.returncode == 1 and "--resume" in again.stderr
        resumed = run_cli(*args, "--model", server.url, "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    pairs = [(r["_ng_task_index"], r["_ng_rollout_index"]) for r in rows(output)]
    assert sorted(pairs) == [(t, r) for t in range(40) for r in range(2)]
    assert "already done (resumed)" in resumed.stdout


def rows_tolerant(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().split(b"\n")[:-1] if line.strip()]


def test_user_environment_file_runs_end_to_end(tmp_path: Path) -> None:
    (tmp_path / "my_env.py").write_text('''
from palaestra import Environment, Session, Verdict, output_text, tool


class Shout(Environment):
    """Reward when the model says the magic word."""

    @tool
    def magic_word(self) -> str:
        """Tell the magic word."""
        return "please"

    def verify(self, session: Session, response: dict) -> Verdict:
        said = session.task["word"] in output_text(response)
        return Verdict(reward=float(said), metrics={"said": said})
''')
    many_tasks(tmp_path / "tasks.jsonl", 1)
    with ScriptedModelServer(lambda params: text_response("please and thank you")) as server:
        (tmp_path / "tasks.jsonl").write_text(
            '{"responses_create_params": {"input": "the word?"}, "word": "please"}\n'
            '{"responses_create_params": {"input": "the word?"}, "word": "never"}\n'
        )
        done = run_cli(
            "collect",
            "--env",
            "./my_env.py",
            "--input",
            "tasks.jsonl",
            "--output",
            "o.jsonl",
            "--model",
            server.url,
            cwd=tmp_path,
        )
        sent_tools = server.bodies("/v1/responses")[0]["tools"]
    assert done.returncode == 0, done.stderr
    assert sorted(r["reward"] for r in rows(tmp_path / "o.jsonl")) == [0.0, 1.0]
    assert [t["name"] for t in sent_tools] == ["magic_word"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--env", "nowhere"], "unknown environment 'nowhere'"),
        (["--env", "weather", "--input", "missing.jsonl"], "input file not found: missing.jsonl"),
        (["--env", "weather", "--model", "not-a-model"], "not-a-model"),
        (["--env", "weather", "--model", "http://127.0.0.1:9/v1"], "127.0.0.1:9"),
        (["--env", "weather", "--resume", "--overwrite"], "--resume and --overwrite contradict"),
    ],
)
def test_user_errors_are_one_clear_line_not_a_traceback(
    tmp_path: Path, args: list[str], message: str
) -> None:
    done = run_cli("collect", *args, "--output", "o.jsonl", "--max-retries", "0", cwd=tmp_path)
    assert done.returncode == 1
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr


def test_bad_lines_are_reported_and_the_rest_goes_on(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text(
        '{"responses_create_params": {"input": "Weather?"}}\n'
        '{"responses_create_params": {"inputs": "typo"}}\n'
        "not json\n"
        '{"responses_create_params": {"input": "Weather?"}}\n'
    )
    with ScriptedModelServer(weather_script()) as server:
        done = run_cli(
            "collect",
            "--env",
            "weather",
            "--input",
            "t.jsonl",
            "--output",
            "o.jsonl",
            "--model",
            server.url,
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    assert "t.jsonl:2: field 'responses_create_params.input': missing" in done.stderr
    assert "t.jsonl:3: not valid JSON" in done.stderr
    assert len(rows(tmp_path / "o.jsonl")) == 2
    assert len(rows(tmp_path / "o_failures.jsonl")) == 2
    assert "invalid_input 2" in done.stdout


def test_generated_tasks_need_no_input_file_and_resume_on_the_same_tasks(tmp_path: Path) -> None:
    (tmp_path / "gen_env.py").write_text('''
import random

from palaestra import Environment, Session, output_text


class Echo(Environment):
    """Say the generated word back."""

    def generate_tasks(self, count, seed):
        rng = random.Random(seed)
        for _ in range(count):
            word = rng.choice(["alpha", "beta", "gamma", "delta"])
            yield {"responses_create_params": {"input": f"Say {word}"}, "word": word}

    def verify(self, session: Session, response: dict) -> float:
        return float(session.task["word"] in output_text(response))
''')

    def echo(params: JsonDict) -> JsonDict:
        return text_response(str(params["input"]).split("Say ")[-1].split("'")[0])

    args = ["collect", "--env", "./gen_env.py", "--num-tasks", "6", "--seed", "3"]
    with ScriptedModelServer(echo) as server:
        done = run_cli(*args, "--output", "g.jsonl", "--model", server.url, cwd=tmp_path)
        again = run_cli(*args, "--output", "h.jsonl", "--model", server.url, cwd=tmp_path)
        both = run_cli(*args, "--input", "x.jsonl", "--output", "i.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert again.returncode == 0, again.stderr
    generated = rows(tmp_path / "g_tasks.jsonl")
    assert len(generated) == 6
    assert generated == rows(tmp_path / "h_tasks.jsonl")  # same seed, same tasks
    assert [r["reward"] for r in rows(tmp_path / "g.jsonl")] == [1.0] * 6
    assert both.returncode == 1 and "cannot be combined with --input" in both.stderr
    weather = run_cli("collect", "--env", "weather", "--num-tasks", "2", cwd=tmp_path)
    assert weather.returncode == 1
    assert "does not generate tasks: pass --input" in weather.stderr


def test_hosted_tools_reach_the_model_only_with_the_flag(tmp_path: Path) -> None:
    """weather has no network: a task's web_search is kept out unless --hosted-tools."""
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    params = {"input": "Weather?", "tools": [tool, {"type": "web_search"}]}
    (tmp_path / "t.jsonl").write_bytes(orjson.dumps({"responses_create_params": params}) + b"\n")
    args = ["collect", "--env", "weather", "--input", "t.jsonl"]
    with ScriptedModelServer(weather_script()) as server:
        closed = run_cli(*args, "--model", server.url, "--output", "c.jsonl", cwd=tmp_path)
        opened = run_cli(
            *args, "--model", server.url, "--output", "o.jsonl", "--hosted-tools", cwd=tmp_path
        )
        sent = [[t["type"] for t in b["tools"]] for b in server.bodies("/v1/responses")]
    assert closed.returncode == 0 and opened.returncode == 0, closed.stderr + opened.stderr
    assert sent == [["function"]] * 2 + [["function", "web_search"]] * 2
    assert rows(tmp_path / "c.jsonl")[0]["_palaestra"]["closed_book"] is True
    assert rows(tmp_path / "o.jsonl")[0]["_palaestra"]["closed_book"] is False


VERSIONED_ENV = '''
from palaestra import Environment, Session, Verdict, output_text


class Echo(Environment):
    """Say yes, unless the task cannot be scored."""

    version = {version}

    def verify(self, session: Session, response: dict) -> Verdict:
        if session.task.get("unscorable"):
            return Verdict.failed("no gold answer")
        return Verdict(reward=float("yes" in output_text(response)))
'''


def test_rows_record_the_environment_version_and_a_resume_after_a_bump_is_refused(
    tmp_path: Path,
) -> None:
    (tmp_path / "echo.py").write_text(VERSIONED_ENV.format(version=1))
    task = {"responses_create_params": {"input": "Say yes."}}
    tasks = [task, {**task, "unscorable": True}]
    (tmp_path / "tasks.jsonl").write_bytes(b"".join(orjson.dumps(t) + b"\n" for t in tasks))
    args = ["collect", "--env", "./echo.py", "--input", "tasks.jsonl", "--output", "o.jsonl"]
    with ScriptedModelServer(lambda params: text_response("yes")) as server:
        first = run_cli(*args, "--model", server.url, "--repeats", "1", cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        (tmp_path / "echo.py").write_text(VERSIONED_ENV.format(version=2))
        bumped = run_cli(*args, "--model", server.url, "--repeats", "1", "--resume", cwd=tmp_path)
    for written in ("o.jsonl", "o_failures.jsonl"):  # a scored rollout, then a failed one
        assert [r["_palaestra"]["env_version"] for r in rows(tmp_path / written)] == [1]
    assert orjson.loads((tmp_path / "o_run.json").read_bytes())["env"]["version"] == 1
    assert bumped.returncode == 1
    assert "env.version: the run has 1, this command has 2" in bumped.stderr
    assert len(bumped.stderr.strip().splitlines()) == 1, bumped.stderr
