"""``palaestra.eval`` with ``env_args`` keyed by environment, workers and a metrics port.

The environment with an argument is a file written in the test's directory (``scaled.py``: one
weather tool, the reward its ``reward`` argument); the model is the scripted weather model over
real HTTP.
"""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path

import pytest

import palaestra
from tests.cli.test_collect_cli import rows, weather_script
from tests.support.network import free_port
from tests.support.scripted_model import ScriptedModelServer

SCALED = '''
import os

from palaestra import Environment, Session, Verdict, tool


class Scaled(Environment):
    """The weather tool; every finished rollout's reward is the ``reward`` argument, and its
    ``pid`` metric the process that ran it."""

    name = "scaled"

    def __init__(self, reward: float = 1.0) -> None:
        self.reward = reward

    @tool
    async def get_weather(self, city: str) -> str:
        """The weather in a city.

        Args:
            city: The city.
        """
        return f"The weather in {city} is cold."

    async def verify(self, session: Session, response: dict) -> Verdict:
        return Verdict(reward=self.reward, metrics={"pid": os.getpid()})
'''

TASK = b'{"responses_create_params": {"input": [{"role": "user", "content": "Weather?"}]}}\n'


def scaled_env(directory: Path, tasks: int = 3) -> Path:
    """``scaled.py`` in ``directory``, with ``tasks`` example tasks beside it."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tasks.jsonl").write_bytes(TASK * tasks)
    path = directory / "scaled.py"
    path.write_text(SCALED)
    return path


def rewards(path: Path) -> list[float]:
    return [row["reward"] for row in rows(path)]


def test_env_args_keyed_by_environment_reach_that_environment_only(tmp_path: Path) -> None:
    scaled = str(scaled_env(tmp_path / "env"))
    with ScriptedModelServer(weather_script()) as server:
        result = palaestra.eval(
            [scaled, "weather"],
            model=server.url,
            output_dir=tmp_path / "ev",
            env_args={scaled: {"reward": 0.5}},
        )
    assert rewards(tmp_path / "ev" / "scaled.jsonl") == [0.5] * 3
    assert rewards(tmp_path / "ev" / "weather.jsonl") == [1.0] * 5
    assert result.environment("scaled").figure().value == 0.5


def test_a_mapping_of_environments_keys_their_args_by_its_names(tmp_path: Path) -> None:
    scaled = str(scaled_env(tmp_path / "env", tasks=2))
    with ScriptedModelServer(weather_script()) as server:
        result = palaestra.eval(
            {"half": scaled, "quarter": scaled, "whole": scaled},
            model=server.url,
            output_dir=tmp_path / "ev",
            env_args={"half": {"reward": 0.5}, "quarter": {"reward": 0.25}},
        )
    assert [env.figure().value for env in result.environments] == [0.5, 0.25, 1.0]


def test_env_args_of_no_environment_or_not_taken_are_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    scaled = str(scaled_env(tmp_path / "env"))
    out = tmp_path / "ev"
    with pytest.raises(
        palaestra.ConfigError,
        match=r"^env_args names 'reward', which is not one of the environments \('weather', ",
    ):
        palaestra.eval(["weather", scaled], output_dir=out, env_args={"reward": 0.5})
    with pytest.raises(palaestra.ConfigError, match=r"env_args\['weather'\] must be a mapping"):
        palaestra.eval(["weather"], output_dir=out, env_args={"weather": 3})
    # the second environment's argument is checked before the first environment runs
    with pytest.raises(
        palaestra.ConfigError, match="environment 'weather' takes no argument 'reward'"
    ):
        palaestra.eval(
            [scaled, "weather"],
            model="http://127.0.0.1:9/v1",
            output_dir=out,
            env_args={"weather": {"reward": 0.5}},
        )
    assert not out.exists()


def test_a_resume_with_other_env_args_is_refused_as_collect_refuses_it(tmp_path: Path) -> None:
    scaled = str(scaled_env(tmp_path / "env", tasks=2))
    out = tmp_path / "ev"
    with ScriptedModelServer(weather_script()) as server:
        palaestra.eval(
            [scaled], model=server.url, output_dir=out, env_args={scaled: {"reward": 0.5}}
        )
        with pytest.raises(palaestra.ConfigError, match=r"cannot resume: .*reward"):
            palaestra.eval(
                [scaled],
                model=server.url,
                output_dir=out,
                resume=True,
                env_args={scaled: {"reward": 0.25}},
            )
        again = palaestra.eval(
            [scaled],
            model=server.url,
            output_dir=out,
            resume=True,
            env_args={scaled: {"reward": 0.5}},
        )
    assert again.figure().value == 0.5 and rewards(out / "scaled.jsonl") == [0.5, 0.5]


def test_two_workers_give_each_environment_the_rows_one_process_gives(tmp_path: Path) -> None:
    scaled = str(scaled_env(tmp_path / "env", tasks=4))
    with ScriptedModelServer(weather_script()) as server:
        here, there = [
            palaestra.eval(
                [scaled, "weather"],
                model=server.url,
                output_dir=tmp_path / where,
                env_args={scaled: {"reward": 0.5}},
                repeats=2,
                concurrency=4,
                workers=workers,
            )
            for where, workers in (("here", 1), ("there", 2))
        ]
    for name in ("scaled", "weather"):
        a, b = here.environment(name), there.environment(name)
        assert a.summary is not None and b.summary is not None
        assert (b.summary.done, b.summary.failed) == (a.summary.done, a.summary.failed)
        assert sorted(rewards(b.output)) == sorted(rewards(a.output))
        assert b.figure("pass@2").value == a.figure("pass@2").value
    assert rewards(there.environment("scaled").output) == [0.5] * 8
    assert {row["pid"] for row in rows(here.environment("scaled").output)} == {os.getpid()}
    assert (
        len({row["pid"] for row in rows(there.environment("scaled").output)} - {os.getpid()}) == 2
    )


def test_the_metrics_port_is_served_by_each_environment_s_run_in_turn(tmp_path: Path) -> None:
    scaled = str(scaled_env(tmp_path / "env", tasks=3))
    port = free_port()
    seen: dict[str, list[float]] = {}

    def scrape(name: str, summary: object) -> None:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
            text = answer.read().decode()
        line = next(
            x for x in text.splitlines() if x.startswith("palaestra_rollouts_started_total")
        )
        seen.setdefault(name, []).append(float(line.split()[-1]))

    with ScriptedModelServer(weather_script()) as server:
        result = palaestra.eval(
            {"first": scaled, "second": scaled},
            model=server.url,
            output_dir=tmp_path / "ev",
            concurrency=1,
            metrics_port=port,
            progress=scrape,
        )
    assert result.stopped_reason is None
    assert set(seen) == {"first", "second"}
    # each environment's counters start at 0: its run serves them, not the evaluation
    assert seen["first"][0] == seen["second"][0] == 0.0
    assert max(seen["first"]) == max(seen["second"]) == 3.0
