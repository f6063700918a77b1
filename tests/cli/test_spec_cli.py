"""What one run specification gives a user of the command line: environment arguments on every
command, the same model flags on ``collect``, ``serve agent`` and ``serve model``, and a stack
that runs any agent with its options."""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.request
from pathlib import Path

import orjson
import pytest

from tests.cli.test_collect_cli import PALAESTRA, rows, run_cli
from tests.cli.test_run_cli import read_until
from tests.cli.test_serve_cli import Served
from tests.support.scripted_model import ScriptedModelServer, text_response

TARGET_ENV = '''
from palaestra import Environment, output_text


class Target(Environment):
    """Reward 1 when the answer names the number the environment was built with."""

    def __init__(self, target: int, label: str = "") -> None:
        self.target = target

    def verify(self, session, response):
        return float(str(self.target) in output_text(response))
'''

QUESTION = '{"responses_create_params": {"input": "Which number?"}}\n'


def says_seven(params: object) -> dict[str, object]:
    return text_response("It is 7.")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "target_env.py").write_text(TARGET_ENV)
    (tmp_path / "t.jsonl").write_text(QUESTION * 2)
    return tmp_path


def test_env_args_reach_the_environment_and_a_wrong_one_is_one_line(project: Path) -> None:
    base = ["collect", "--env", "./target_env.py", "--input", "t.jsonl", "--agent", "single_turn"]
    with ScriptedModelServer(says_seven) as server:
        seven = run_cli(*base, "--env-arg", "target=7", "--output", "a.jsonl",
                        "--model", server.url, cwd=project)  # fmt: skip
        eight = run_cli(*base, "--env-arg", "target=8", "--output", "b.jsonl",
                        "--model", server.url, cwd=project)  # fmt: skip
        wrong = run_cli(*base, "--env-arg", "target=7", "--env-arg", "colour=red",
                        "--model", server.url, "--output", "c.jsonl", cwd=project)  # fmt: skip
        bare = run_cli(*base, "--model", server.url, "--output", "d.jsonl", cwd=project)
    assert seven.returncode == 0, seven.stderr
    assert [r["reward"] for r in rows(project / "a.jsonl")] == [1.0, 1.0]
    assert eight.returncode == 0 and [r["reward"] for r in rows(project / "b.jsonl")] == [0.0] * 2
    for refused, message in (
        (wrong, "environment 'target' takes no argument 'colour' (it takes: target, label)"),
        (bare, "environment 'target' needs the argument 'target' (it takes: target, label)"),
    ):
        assert refused.returncode == 1 and refused.stderr.strip() == f"error: {message}"


def test_serve_agent_and_serve_model_take_the_model_flags_of_collect(project: Path) -> None:
    key = {"ACME_KEY": "sk-acme-1", "OPENAI_API_KEY": "not-this-one"}
    with ScriptedModelServer(says_seven, api_key="sk-acme-1") as server:
        model_flags = ["--model", server.url, "--api-key-env", "ACME_KEY", "--max-retries", "0"]
        agent = Served(
            "agent", "--env", "./target_env.py", "--env-arg", "target=7",
            "--agent", "single_turn", *model_flags, "--request-timeout", "30",
            env=key, cwd=project,
        )  # fmt: skip
        proxy = Served("model", *model_flags, "--model-id", "proxied", env=key, cwd=project)
        try:
            done = run_cli(
                *("collect", "--agent-url", agent.url, "--input", "t.jsonl"),
                *("--output", "o.jsonl"),
                cwd=project,
            )
            status, body = proxy.get("/v1/models")
        finally:
            agent.stop()
            proxy.stop()
        sent = set(server.authorizations)
    assert done.returncode == 0, done.stderr
    assert [r["reward"] for r in rows(project / "o.jsonl")] == [1.0, 1.0]
    assert {r["agent_ref"]["name"] for r in rows(project / "o.jsonl")} == {"target_single_turn"}
    assert status == 200 and orjson.loads(body)["data"][0]["id"] == "proxied"
    assert sent == {"Bearer sk-acme-1"}


def test_a_stack_runs_the_step_agent_with_its_options_and_env_args(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PALAESTRA_STATE_DIR", str(project / "state"))
    guess = Path(__file__).parents[2] / "palaestra/envs/number_guess/tasks.jsonl"
    with ScriptedModelServer(says_seven) as server:
        (project / "stack.yaml").write_text(f"""
servers:
  game: {{kind: env, env: number_guess}}
  player: {{kind: agent, env: game, model: "{server.url}", agent: step, options: {{max_steps: 2}}}}
  target: {{kind: env, env: ./target_env.py, args: {{target: 7}}}}
""")
        stack = subprocess.Popen(
            [*PALAESTRA, "run", "stack.yaml"],
            cwd=project,
            text=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "COLUMNS": "200"},
        )
        try:
            read_until(stack, "ready in")
            state = orjson.loads((project / ".palaestra" / "stack.json").read_bytes())
            with urllib.request.urlopen(f"{state['head']}/servers") as answer:
                urls = {s["name"]: s["url"] for s in orjson.loads(answer.read())["servers"]}
            played = run_cli(
                *("collect", "--agent-url", urls["player"], "--input", str(guess)),
                *("--limit", "1", "--output", "g.jsonl"),
                cwd=project,
            )
            targeted = run_cli(
                *("collect", "--env-url", urls["target"], "--model", server.url),
                *("--agent", "single_turn", "--input", "t.jsonl", "--output", "t_out.jsonl"),
                cwd=project,
            )
            stack.send_signal(signal.SIGINT)
            assert stack.wait(30) == 0
        finally:
            if stack.poll() is None:
                stack.kill()
    assert played.returncode == 0, played.stderr
    [row] = rows(project / "g.jsonl")
    assert row["_palaestra"]["truncated"] == "max_steps" and row["_palaestra"]["model_calls"] == 2
    assert row["agent_ref"]["name"].endswith("_step")
    assert targeted.returncode == 0, targeted.stderr
    assert [r["reward"] for r in rows(project / "t_out.jsonl")] == [1.0, 1.0]
