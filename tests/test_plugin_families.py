"""A third-party package adds an agent and a model backend by entry point, without touching
palaestra: ``palaestra.collect`` and the command line both run a rollout with them, and
``palaestra plugins`` lists them (and one line for a broken one)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

import palaestra
from palaestra import Environment, ModelConfig, Session, output_text
from palaestra.agents import make_agent
from palaestra.errors import ConfigError
from palaestra.types import JsonDict
from tests.support.distribution import on_sys_path, write_distribution

AGENTS = '''
from palaestra import AgentResult


class AskTwice:
    """Asks the model twice and keeps the second answer."""

    name = "ask_twice"

    def __init__(self, *, times: int = 2) -> None:
        if times < 1:
            raise ValueError("times must be at least 1")
        self.times = times

    async def run(self, task, env, model):
        session = await env.seed(task)
        try:
            params = dict(task["responses_create_params"])
            for _ in range(self.times):
                response = await model.respond(params)
            verdict = await env.verify(session, task, response)
            return AgentResult(response=response, verdict=verdict, model_calls=self.times)
        finally:
            await env.close(session)
'''

BACKEND = '''
from palaestra.models.base import ModelStats


class Echo:
    """Answers the prompt back after a prefix."""

    def __init__(self, config, *, http=None):
        self.name = config.model or "echo"
        self.prefix = config.options.get("prefix", "")
        self.stats = ModelStats()

    async def respond(self, params):
        self.stats.requests += 1
        text = params["input"] if isinstance(params["input"], str) else "?"
        message = {"type": "message", "id": "m", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": self.prefix + text,
                                "annotations": []}]}
        return {"id": "r", "object": "response", "model": self.name, "status": "completed",
                "output": [message], "usage": {"input_tokens": 1, "output_tokens": 1,
                "total_tokens": 2}}

    async def check(self):
        return None

    async def aclose(self):
        return None
'''

PARROT = '''
from palaestra import Environment, output_text


class Parrot(Environment):
    """Rewards an answer that repeats the question after 'echo: '."""

    def verify(self, session, response):
        return float(output_text(response) == "echo: " + session.task["question"])
'''


class Parrot(Environment):
    """Rewards an answer that repeats the question after 'echo: '."""

    def verify(self, session: Session, response: JsonDict) -> float:
        return float(output_text(response) == "echo: " + session.task["question"])


@pytest.fixture
def acme(tmp_path: Path) -> Iterator[Path]:
    """``acme-palaestra``: an agent and a model backend (and a broken agent) by entry point."""
    site = tmp_path / "site"
    write_distribution(
        site,
        "acme-palaestra",
        modules={"acme/__init__.py": "", "acme/agents.py": AGENTS, "acme/models.py": BACKEND},
        entry_points={
            "palaestra.agents": {
                "ask_twice": "acme.agents:AskTwice",
                "ghost": "acme.nowhere:Ghost",
            },
            "palaestra.models": {"echo": "acme.models:Echo"},
        },
    )
    (tmp_path / "parrot.py").write_text(PARROT)
    (tmp_path / "tasks.jsonl").write_bytes(
        b"".join(
            orjson.dumps({"question": q, "responses_create_params": {"input": q}}) + b"\n"
            for q in ("hello", "goodbye", "again")
        )
    )
    with on_sys_path(site):
        yield tmp_path


def test_a_plugin_agent_and_backend_run_a_collection_from_python(acme: Path) -> None:
    summary = palaestra.collect(
        env=Parrot,
        model=ModelConfig(backend="echo", model="parrot-1", options={"prefix": "echo: "}),
        agent="ask_twice",
        agent_options={"times": 3},
        input=acme / "tasks.jsonl",
        output=acme / "o.jsonl",
        repeats=2,
    )
    assert (summary.scored, summary.mean_reward, summary.failed) == (6, 1.0, 0)
    rows = [orjson.loads(line) for line in (acme / "o.jsonl").read_bytes().splitlines()]
    assert {r["agent_ref"]["name"] for r in rows} == {"parrot_ask_twice"}
    assert {r["_palaestra"]["model_calls"] for r in rows} == {3}
    identity = orjson.loads((acme / "o_run.json").read_bytes())
    assert identity["agent"] == {"name": "ask_twice", "options": {"times": 3}}
    assert identity["model"]["backend"] == "echo"


def test_a_plugin_agents_bad_option_or_value_is_one_line(acme: Path) -> None:
    with pytest.raises(ConfigError) as unknown:
        make_agent("ask_twice", max_steps=4)
    assert str(unknown.value) == (
        "agent 'ask_twice' (plug-in acme.agents:AskTwice) takes no argument 'max_steps' "
        "(it takes: times)"
    )
    with pytest.raises(ConfigError, match=r"could not be built: ValueError: times must be"):
        make_agent("ask_twice", times=0)
    with pytest.raises(ConfigError, match=r"agent 'ghost' \(acme.nowhere:Ghost\) failed to load"):
        make_agent("ghost")


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    site = str(cwd / "site")
    environ = {**os.environ, "PYTHONPATH": site, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "palaestra", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_command_line_runs_them_and_lists_them(acme: Path) -> None:
    done = cli(
        "collect",
        *("--env", "./parrot.py", "--input", "tasks.jsonl", "--output", "o.jsonl"),
        *("--model", "echo", "--model-option", "prefix=echo: "),
        *("--agent", "ask_twice", "--agent-arg", "times=2"),
        cwd=acme,
    )
    assert done.returncode == 0, done.stderr
    rows = [orjson.loads(line) for line in (acme / "o.jsonl").read_bytes().splitlines()]
    assert [r["reward"] for r in rows] == [1.0] * 3
    assert {r["_palaestra"]["model_calls"] for r in rows} == {2}

    wrong = cli(
        *("collect", "--env", "./parrot.py", "--input", "tasks.jsonl", "--output", "w.jsonl"),
        *("--model", "echo", "--agent", "ask_twice", "--max-steps", "3"),
        cwd=acme,
    )
    assert wrong.returncode == 1 and "Traceback" not in wrong.stderr
    assert wrong.stderr.strip().splitlines() == [
        "error: agent 'ask_twice' (plug-in acme.agents:AskTwice) takes no argument "
        "'max_steps' (it takes: times)"
    ]

    listed = cli("plugins", cwd=acme)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert any("ask_twice" in line and "plug-in acme.agents:AskTwice" in line for line in lines)
    assert any("model backend" in line and "acme.models:Echo" in line for line in lines)
    assert any(line.split()[:2] == ["agent", "step"] and "built-in" in line for line in lines)
    assert any(line.split()[:2] == ["environment", "weather"] for line in lines)
    warnings = listed.stderr.strip().splitlines()
    assert len(warnings) == 1 and "agent 'ghost' (acme.nowhere:Ghost) failed to load" in warnings[0]
