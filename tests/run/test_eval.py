"""``palaestra.eval``: two environments (mcqa, weather) against one scripted model over HTTP.

The model answers mcqa's task 0 wrong, task 1 with an HTTP 400 (a ``model_error``) and the
others right; it calls ``get_weather`` once for every weather task and then answers.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest

import palaestra
from palaestra.evaluate import combine_runs, load_run, run_figures
from palaestra.types import JsonDict
from tests.cli.test_collect_cli import weather_script
from tests.cli.test_compare_cli import answer
from tests.support.scripted_model import ScriptedFault, ScriptedModelServer


class TwoEnvironments:
    """The script, counting the calls it answered for each environment."""

    def __init__(self, delay: float = 0.0) -> None:
        self.weather = weather_script(delay)
        self.calls: Counter[str] = Counter()

    def __call__(self, params: JsonDict) -> JsonDict | ScriptedFault:
        asked = orjson.dumps(params["input"]).decode()
        if "get_weather" in asked or "function_call" in asked:
            self.calls["weather"] += 1
            reply: JsonDict | ScriptedFault = self.weather(params)
            return reply
        self.calls["mcqa"] += 1
        return answer(params, worse=True)


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> palaestra.Evaluation:
    where = tmp_path_factory.mktemp("eval")
    with ScriptedModelServer(TwoEnvironments()) as server:
        return palaestra.eval(["mcqa", "weather"], model=server.url, repeats=2, output_dir=where)


def test_each_environment_is_a_run_of_its_own_and_the_report_covers_them(
    evaluated: palaestra.Evaluation,
) -> None:
    where = evaluated.output_dir
    assert [env.name for env in evaluated.environments] == ["mcqa", "weather"]
    assert [env.output for env in evaluated.environments] == [
        where / "mcqa.jsonl",
        where / "weather.jsonl",
    ]
    mcqa, weather = evaluated.environments
    assert mcqa.summary is not None and (mcqa.summary.done, mcqa.summary.failed) == (8, 2)
    assert weather.summary is not None and weather.summary.done == 10
    assert evaluated.report is not None
    assert evaluated.report.markdown == where / "report.md"
    markdown = evaluated.report.markdown.read_text()
    assert "## mcqa" in markdown and "## weather" in markdown and "**overall**" in markdown
    assert "pools the tasks of every environment" in markdown
    assert "too long" in markdown  # mcqa's failure reason
    assert "<svg" in evaluated.report.html.read_text()


def test_figures_are_those_of_each_run_and_of_their_tasks_pooled(
    evaluated: palaestra.Evaluation,
) -> None:
    mcqa, weather = evaluated.environments
    for env in (mcqa, weather):
        expected = run_figures(env.output)
        assert env.figure("pass@2").value == expected.figure("pass@2").value
        assert env.figure().interval == expected.figure("mean reward").interval
    pooled = run_figures(combine_runs([load_run(mcqa.output), load_run(weather.output)]))
    overall = evaluated.figure("mean reward")
    assert overall.value == pytest.approx(8 / 9)  # 3 of mcqa's 4 scored tasks, weather's 5
    assert overall.tasks == 9 and overall.failed == 2
    assert overall.interval == pooled.figure("mean reward").interval
    assert evaluated.overall is not None
    names = [figure.name for figure in evaluated.overall.figures]
    assert names == ["mean reward", "pass@1", "pass@2", "pass^2"]
    assert mcqa.figure("majority@2").value == 0.75  # only mcqa reports answers
    as_json = evaluated.to_json()
    assert as_json["figures"][0]["name"] == "mean reward"
    assert as_json["environments"][1]["figures"]["tasks"] == 5


def test_an_earlier_evaluation_is_refused_before_anything_runs(
    evaluated: palaestra.Evaluation,
) -> None:
    with pytest.raises(palaestra.ConfigError, match=r"mcqa.jsonl already exists.*--resume"):
        palaestra.eval(
            ["mcqa", "weather"], model="http://127.0.0.1:9/v1", output_dir=evaluated.output_dir
        )


def test_an_evaluation_that_left_only_unfinished_rollouts_is_refused_too(tmp_path: Path) -> None:
    (tmp_path / "mcqa_checkpoints.jsonl").write_bytes(
        b'{"task": 0, "rollout": 0, "epoch": 1, "checkpoint": {}}\n'
    )
    with pytest.raises(palaestra.ConfigError, match=r"mcqa_checkpoints.jsonl holds unfinished"):
        palaestra.eval(["mcqa"], model="http://127.0.0.1:9/v1", output_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mcqa_checkpoints.jsonl"]


def test_a_progress_callback_that_raises_stops_the_evaluation_naming_it(tmp_path: Path) -> None:
    def shown(name: str, summary: palaestra.RunSummary) -> None:
        if summary.done:
            raise KeyError(name)

    with (
        ScriptedModelServer(TwoEnvironments()) as server,
        pytest.raises(palaestra.CallbackError) as stopped,
    ):
        palaestra.eval(["weather", "mcqa"], model=server.url, output_dir=tmp_path, progress=shown)
    message = str(stopped.value)
    assert message.startswith(
        f"the progress callback {shown.__qualname__} raised KeyError: 'weather' (at {__file__}:"
    )
    assert message.endswith(f"kept in {tmp_path / 'weather.jsonl'} (resume=True continues)")
    assert len((tmp_path / "weather.jsonl").read_bytes().splitlines()) >= 1
    assert not (tmp_path / "mcqa.jsonl").exists()


def test_mistakes_are_caught_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(palaestra.ConfigError, match="two environments are named 'mcqa'"):
        palaestra.eval(["mcqa", "mcqa"], output_dir=tmp_path)
    with pytest.raises(palaestra.ConfigError, match="nope"):
        palaestra.eval(["mcqa", "nope"], output_dir=tmp_path)
    with pytest.raises(TypeError, match="not output="):
        palaestra.eval(["mcqa"], output=tmp_path / "x.jsonl")
    with pytest.raises(palaestra.ConfigError, match="input= names one environment"):
        palaestra.eval(["mcqa", "weather"], input=tmp_path / "tasks.jsonl", output_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_mapping_names_the_environments(tmp_path: Path) -> None:
    with ScriptedModelServer(TwoEnvironments()) as server:
        result = palaestra.eval(
            {"quiz": "mcqa", "quiz-again": "mcqa"}, model=server.url, output_dir=tmp_path, limit=2
        )
    assert [env.output.name for env in result.environments] == ["quiz.jsonl", "quiz-again.jsonl"]
    overall = result.figure()  # per run: task 0 answered wrong, task 1 failed (excluded)
    assert (overall.tasks, overall.value, overall.failed) == (2, 0.0, 2)
    assert result.stopped_reason is None


def test_a_stopped_run_ends_the_evaluation_and_the_report_says_so(tmp_path: Path) -> None:
    rejected = ScriptedFault(status=401, body={"error": {"message": "invalid key"}})
    with ScriptedModelServer(lambda params: rejected) as server:
        result = palaestra.eval(["mcqa", "weather"], model=server.url, output_dir=tmp_path)
    assert result.stopped_reason is not None and result.stopped_reason.startswith("mcqa: ")
    assert result.environments[1].summary is None  # weather never ran
    assert not (tmp_path / "weather.jsonl").exists()
    assert (
        result.report is not None and "stopped early (mcqa: " in result.report.markdown.read_text()
    )
