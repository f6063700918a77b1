"""``palaestra.collect`` from Python: the documented example, resume, the saved spec, progress,
environment arguments, and a served agent's rows labelled with its name.

Every run goes over real HTTP to a scripted OpenAI-compatible server.
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

import palaestra
from palaestra import Environment, ModelConfig, RunSummary, Session, collect, collect_async, tool
from palaestra.errors import CallbackError, ConfigError
from palaestra.types import JsonDict, output_text
from tests.cli.test_collect_cli import many_tasks, rows, weather_script
from tests.support.scripted_model import ScriptedModelServer, text_response

ROOT = Path(__file__).parents[2]
EXAMPLE_URL = "http://localhost:8000/v1"


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def collect_example() -> str:
    """The first Python example of docs/collecting.md (and of the README once it has one)."""
    documented = next(b for b in python_blocks(ROOT / "docs/collecting.md") if "collect(" in b)
    in_readme = [b for b in python_blocks(ROOT / "README.md") if "palaestra.collect(" in b]
    if in_readme:  # the README shows the same example, not a drifting copy
        assert in_readme[0] == documented
    return documented


def test_from_palaestra_import_collect_is_the_function() -> None:
    assert callable(collect) and collect.__module__ == "palaestra.run.collect"
    assert palaestra.collect is collect and callable(collect_async)


def test_the_documented_example_collects_and_resumes_in_under_15_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    example = collect_example()
    assert len(example.strip().splitlines()) < 15 and "resume=True" in example
    monkeypatch.chdir(tmp_path)
    many_tasks(tmp_path / "tasks.jsonl", 3)
    with ScriptedModelServer(weather_script()) as server:
        code = example.replace(EXAMPLE_URL, server.url)
        first: dict[str, object] = {}
        exec(compile(code, "example", "exec"), first)
        again: dict[str, object] = {}
        exec(compile(code, "example", "exec"), again)  # the same lines resume: nothing to do
        calls = len(server.bodies("/v1/responses"))
    done, resumed = first["summary"], again["summary"]
    assert isinstance(done, RunSummary) and isinstance(resumed, RunSummary)
    assert (done.done, done.scored, done.mean_reward) == (12, 12, 1.0)
    assert (resumed.done, resumed.skipped, resumed.scored) == (0, 12, 12)
    assert calls == 24  # two model calls per rollout, none on the resume
    written = rows(tmp_path / "runs/weather.jsonl")
    assert sorted((r["_ng_task_index"], r["_ng_rollout_index"]) for r in written) == [
        (t, r) for t in range(3) for r in range(4)
    ]
    assert {r["agent_ref"]["name"] for r in written} == {"weather_tool_calling"}
    for name in ("materialized_inputs.jsonl", "failures.jsonl", "aggregate_metrics.json"):
        assert (tmp_path / f"runs/weather_{name}").exists()
    assert capsys.readouterr().out.startswith("12 1.0")


def test_the_spec_is_saved_without_secrets_and_a_resume_of_another_spec_names_the_difference(
    tmp_path: Path,
) -> None:
    many_tasks(tmp_path / "tasks.jsonl", 2)
    common = {"env": "weather", "input": tmp_path / "tasks.jsonl", "output": tmp_path / "o.jsonl"}
    with ScriptedModelServer(weather_script(), api_key="sk-secret-777") as server:
        summary = collect(
            **common,  # type: ignore[arg-type]
            model=server.url,
            api_key="sk-secret-777",
            agent_options={"max_steps": 3},
            sampling={"temperature": 0.5},
        )
        assert summary.scored == 2
        saved = (tmp_path / "o_run.json").read_bytes()
        assert b"sk-secret-777" not in saved
        spec = orjson.loads(saved)["spec"]
        assert spec["env"] == {"name": "weather", "args": {}, "url": None, "cmd": None}
        assert spec["agent"]["options"] == {"max_steps": 3}
        assert spec["model"]["url"] == server.url and "api_key" not in spec["model"]
        assert spec["model"]["sampling"] == {"temperature": 0.5}
        assert spec["collection"]["concurrency"] == 16
        with pytest.raises(ConfigError) as other:
            collect(
                **common,  # type: ignore[arg-type]
                model=server.url,
                api_key="sk-secret-777",
                agent_options={"max_steps": 4},
                sampling={"temperature": 0.5},
                resume=True,
            )
        # a setting that does not change the rows resumes: nothing left to do
        same = collect(
            **common,  # type: ignore[arg-type]
            model=ModelConfig(url=server.url, max_retries=0, sampling={"temperature": 0.5}),
            api_key="sk-secret-777",
            agent_options={"max_steps": 3},
            concurrency=2,
            resume=True,
        )
    assert "agent.options.max_steps: the run has 3, this command has 4" in str(other.value)
    assert "\n" not in str(other.value)
    assert (same.skipped, same.done) == (2, 0)


class Target(Environment):
    """Reward 1 when the answer names the target number the environment was built with."""

    def __init__(self, target: int, *, strict: bool = False) -> None:
        self.target, self.strict = target, strict

    @tool
    def hint(self) -> str:
        """A hint."""
        return "think of a number"

    def verify(self, session: Session, response: JsonDict) -> float:
        return float(str(self.target) in output_text(response))


def test_environment_arguments_reach_the_constructor_and_a_wrong_one_is_one_line(
    tmp_path: Path,
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"responses_create_params": {"input": "Which number?"}}\n')
    with ScriptedModelServer(lambda params: text_response("It is 7.")) as server:
        seven = collect(
            env=Target, env_args={"target": 7}, model=server.url, input=tasks,
            output=tmp_path / "seven.jsonl", agent="single_turn",
        )  # fmt: skip
        eight = collect(
            env=Target, env_args={"target": 8}, model=server.url, input=tasks,
            output=tmp_path / "eight.jsonl", agent="single_turn",
        )  # fmt: skip
        with pytest.raises(ConfigError) as unknown:
            collect(
                env=Target, env_args={"target": 7, "colour": "red"}, model=server.url,
                input=tasks, output=tmp_path / "x.jsonl",
            )  # fmt: skip
        with pytest.raises(ConfigError) as missing:
            collect(env=Target, model=server.url, input=tasks, output=tmp_path / "y.jsonl")
    assert (seven.mean_reward, eight.mean_reward) == (1.0, 0.0)
    identity = orjson.loads((tmp_path / "seven_run.json").read_bytes())
    assert identity["env"] == {
        "name": "target",
        "version": 1,
        "args": {"target": 7, "strict": False},
    }
    assert str(unknown.value) == (
        "environment 'target' takes no argument 'colour' (it takes: target, strict)"
    )
    assert "environment 'target' needs the argument 'target'" in str(missing.value)
    assert not (tmp_path / "x.jsonl").exists()


async def test_collect_async_runs_inside_a_loop_and_reports_progress(tmp_path: Path) -> None:
    many_tasks(tmp_path / "tasks.jsonl", 3)
    seen: list[tuple[int, int]] = []
    with ScriptedModelServer(weather_script()) as server:
        summary = await collect_async(
            env="weather",
            model=server.url,
            input=tmp_path / "tasks.jsonl",
            output=tmp_path / "o.jsonl",
            progress=lambda s: seen.append((s.total, s.done)),
        )
        with pytest.raises(RuntimeError, match=r"await palaestra.collect_async"):
            collect(env="weather", model=server.url, output=tmp_path / "p.jsonl")
    assert summary.scored == 3
    assert seen[0] == (3, 0) and seen[-1] == (3, 3) and len(seen) == 4


def test_a_progress_callback_that_raises_stops_the_run_naming_it_and_keeps_the_rows(
    tmp_path: Path,
) -> None:
    many_tasks(tmp_path / "tasks.jsonl", 6)
    output = tmp_path / "o.jsonl"
    common = {"env": "weather", "input": tmp_path / "tasks.jsonl", "output": output}

    def impatient(summary: RunSummary) -> None:
        if summary.done == 3:
            raise ValueError("enough")

    line = impatient.__code__.co_firstlineno + 2
    with ScriptedModelServer(weather_script()) as server:
        with pytest.raises(CallbackError) as stopped:
            collect(**common, model=server.url, concurrency=1, progress=impatient)  # type: ignore[arg-type]
        assert len(rows(output)) == 3
        resumed = collect(**common, model=server.url, resume=True)  # type: ignore[arg-type]
    assert str(stopped.value) == (
        f"the progress callback {impatient.__qualname__} raised ValueError: enough (at "
        f"{__file__}:{line} in impatient): the run stopped; the rows so far are kept in "
        f"{output} (resume=True continues)"
    )
    assert isinstance(stopped.value.__cause__, ValueError)
    assert (resumed.skipped, resumed.done) == (3, 3)


async def test_a_served_agents_rows_carry_its_name(tmp_path: Path) -> None:
    from palaestra.agents import ToolCallingAgent
    from palaestra.environment.running.client import LocalEnvironmentClient
    from palaestra.envs.weather.environment import Weather
    from palaestra.http.runner import BackgroundServer
    from palaestra.models.openai.responses import OpenAIResponsesModel
    from palaestra.serve.agent_app import agent_app

    many_tasks(tmp_path / "tasks.jsonl", 2)
    with ScriptedModelServer(weather_script()) as model:
        app = agent_app(
            ToolCallingAgent(), LocalEnvironmentClient(Weather()), OpenAIResponsesModel(model.url)
        )
        with BackgroundServer(app) as agent:
            summary = await collect_async(
                agent_url=agent.url, input=tmp_path / "tasks.jsonl", output=tmp_path / "o.jsonl"
            )
    assert summary.scored == 2
    written = rows(tmp_path / "o.jsonl")
    assert {r["agent_ref"]["name"] for r in written} == {"weather_tool_calling"}  # not remote_*
    aggregate = orjson.loads((tmp_path / "o_aggregate_metrics.json").read_bytes())
    assert aggregate[0]["agent_ref"]["name"] == "weather_tool_calling"


def test_bad_keyword_values_are_one_line_and_unknown_keywords_a_type_error() -> None:
    with pytest.raises(ConfigError, match=r"^collect: field .repeats.: Input should be greater"):
        palaestra.run_spec(env="weather", repeats=0)
    with pytest.raises(TypeError, match=r"unknown argument 'repeat'"):
        palaestra.run_spec(env="weather", repeat=2)  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match=r"unknown environment 'wether'"):
        collect(env="wether")


def test_a_named_split_runs_its_tasks_and_is_refused_beside_an_input(tmp_path: Path) -> None:
    module = tmp_path / "guess.py"
    module.write_text(
        "from palaestra import Environment, output_text\n\n\n"
        "class Guess(Environment):\n"
        '    """Reward 1 when the answer names the task\'s number."""\n\n'
        "    def verify(self, session, response):\n"
        '        return float(str(session.task["number"]) in output_text(response))\n'
    )
    (tmp_path / "splits").mkdir()
    row = '{{"responses_create_params": {{"input": "Which number?"}}, "number": {}}}\n'
    (tmp_path / "splits" / "smoke.jsonl").write_text(row.format(7) + row.format(8))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(row.format(7))
    with ScriptedModelServer(lambda params: text_response("It is 7.")) as server:
        smoke = collect(
            env=str(module), split="smoke", model=server.url, output=tmp_path / "smoke.jsonl",
            agent="single_turn",
        )  # fmt: skip
        with pytest.raises(ConfigError) as both:
            collect(
                env=str(module), split="smoke", input=tasks, model=server.url,
                output=tmp_path / "both.jsonl",
            )  # fmt: skip
    assert (smoke.scored, smoke.mean_reward) == (2, 0.5)
    assert [r["number"] for r in rows(tmp_path / "smoke.jsonl")] == [7, 8]
    assert "cannot be combined with --input" in str(both.value)
