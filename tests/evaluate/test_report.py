"""A run's report (``palaestra.evaluate.report``): real runs of mcqa against scripted models.

The run: five mcqa tasks, three repeats each; the scripted model answers task 0 wrong (reward
0), answers task 1 with an HTTP 400 (a ``model_error`` failure, "too long") and the other
three with their golden answers (reward 1).
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

import palaestra
from palaestra.evaluate import load_run, run_figures, write_report
from palaestra.evaluate.report import bars, build_report, spread
from tests.cli.test_compare_cli import answer
from tests.evaluate.synthetic import write_run
from tests.support.scripted_model import ScriptedModelServer

EXTERNAL = re.compile(r"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//""", re.IGNORECASE)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("report") / "mcqa.jsonl"
    with ScriptedModelServer(lambda params: answer(params, worse=True)) as server:
        summary = palaestra.collect(env="mcqa", model=server.url, output=output, repeats=3)
    assert (summary.scored, summary.failed) == (12, 3)
    return output


def test_the_report_goes_beside_the_run_with_the_figures_of_run_figures(run: Path) -> None:
    written = write_report(run)
    assert written.markdown == run.with_name("mcqa_report.md")
    assert written.html == run.with_name("mcqa_report.html")
    markdown = written.markdown.read_text()
    html = written.html.read_text()
    figures = run_figures(load_run(run))
    for figure in figures.figures:
        assert figure.interval is not None and figure.value is not None
        line = (
            f"| {figure.name} | {figure.value:.4f} | [{figure.interval.low:.4f}, "
            f"{figure.interval.high:.4f}] | {figure.interval.method} | {figure.tasks} | "
            f"{figure.rollouts} | {figure.failed} (excluded) |"
        )
        assert line in markdown
        assert f"[{figure.interval.low:.4f}, {figure.interval.high:.4f}]" in html
    assert "mean reward | 0.7500 | [0.3006, 0.9544] | wilson | 4 | 12 | 3 (excluded) |" in markdown
    assert "failed rollouts are left out of the figures" in markdown
    assert "5 tasks, 15 rollouts: 12 scored, 3 failed (3 masked)" in markdown


def test_the_html_page_is_self_contained(run: Path) -> None:
    html = write_report(run).html.read_text()
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert EXTERNAL.search(html) is None
    assert "<script" not in html and "<link" not in html and "@import" not in html
    assert "<style>" in html and html.count("<svg") >= 3  # figures, rewards, pass rates
    # every chart is drawn here: bars for the rewards (9 of 1, 3 of 0) with their counts
    assert "<title>1: 9 reward</title>" in html and "<title>0: 3 reward</title>" in html


def test_failure_kinds_come_with_their_reasons(run: Path) -> None:
    written = write_report(run)
    markdown, html = written.markdown.read_text(), written.html.read_text()
    row = next(line for line in markdown.splitlines() if line.startswith("| `model_error`"))
    assert "| 3 | 3 |" in row and "3 x POST" in row and "HTTP 400" in row and "too long" in row
    assert "<code>model_error</code>" in html and "too long" in html
    assert "3 &times; POST" in html


def test_distributions_tasks_timing_and_tokens(run: Path) -> None:
    report = build_report(run).runs[0]
    assert [(bar.label, bar.count) for bar in report.rewards] == [("0", 3), ("1", 9)]
    assert [(bar.label, bar.count) for bar in report.pass_rates] == [("0", 1), ("1", 3)]
    assert [task.index for task in report.tasks][:1] == [0]  # the hardest first
    assert report.tasks[-1].index == 1 and report.tasks[-1].pass_rate is None  # all failed
    assert [timing.name for timing in report.timings] == ["seed", "model", "verify", "total"]
    assert all(timing.rollouts == 12 for timing in report.timings)
    usage = {found.name: found for found in report.usage}
    assert usage["input_tokens"].total == 120 and usage["output_tokens"].mean == 5
    markdown = write_report(run).markdown.read_text()
    assert "| input_tokens | 12 | 10 | 10 | 10 | 10 | 120 |" in markdown
    assert "## Time per phase" in markdown and "| model | 12 |" in markdown


def test_the_report_states_the_reading_of_failures(run: Path, tmp_path: Path) -> None:
    written = write_report(
        run, markdown=tmp_path / "zero.md", html=tmp_path / "zero.html", failures_as_zero=True
    )
    markdown = written.markdown.read_text()
    assert "failed rollouts are read as reward 0" in markdown
    assert "| mean reward | 0.6000 |" in markdown and "3 (as 0)" in markdown
    assert (written.markdown, written.html) == (tmp_path / "zero.md", tmp_path / "zero.html")


def test_a_model_pool_shows_its_endpoints(tmp_path: Path) -> None:
    script = lambda params: answer(params, worse=False)  # noqa: E731
    with ScriptedModelServer(script) as one, ScriptedModelServer(script) as two:
        palaestra.collect(
            env="mcqa", model=[one.url, two.url], output=tmp_path / "pool.jsonl", repeats=2
        )
        urls = {one.url, two.url}
    aggregate = orjson.loads((tmp_path / "pool_aggregate_metrics.json").read_bytes())
    assert {e["url"] for e in aggregate[0]["model_endpoints"]} == urls
    written = write_report(tmp_path / "pool.jsonl")
    markdown, html = written.markdown.read_text(), written.html.read_text()
    assert "## Model endpoints" in markdown and "Model endpoints" in html
    for url in urls:
        assert f"| {url} |" in markdown and url in html
    assert EXTERNAL.search(html) is None  # the endpoints are text, not links


def test_several_runs_have_overall_figures_over_their_pooled_tasks(run: Path) -> None:
    report = build_report({"first": run, "second": run})
    assert report.overall is not None
    mean = report.overall.figure("mean reward")
    assert mean.tasks == 8 and mean.value == pytest.approx(0.75)
    assert [f.name for f in report.overall.figures] == [
        "mean reward",
        "pass@1",
        "pass@3",
        "pass^3",
        "majority@3",
    ]
    assert [run.name for run in report.runs] == ["first", "second"]
    with pytest.raises(ValueError, match="markdown= and html="):
        write_report([run, run])


def test_a_malformed_run_is_one_input_error_naming_the_line(tmp_path: Path, run: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(run.read_bytes() + b"{oops\n")
    with pytest.raises(palaestra.InputError, match=r"broken.jsonl:13: not JSON"):
        write_report(broken)
    assert not (tmp_path / "broken_report.md").exists()


def test_bars_give_each_level_a_bar_and_bin_many_values() -> None:
    assert [(b.label, b.count) for b in bars([0.0, 1.0, 1.0, 0.5])] == [
        ("0", 1),
        ("0.5", 1),
        ("1", 2),
    ]
    spread_out = [i / 100 for i in range(101)]
    binned = bars(spread_out)
    assert len(binned) == 10 and sum(b.count for b in binned) == 101
    assert binned[0].label == "[0, 0.1)" and binned[-1].label == "[0.9, 1]"
    assert binned[-1].count == 11  # 0.9 .. 1.0, the last bin closed
    assert bars([]) == []


def test_spread_is_nearest_rank() -> None:
    found = spread("model", [float(i) for i in range(1, 11)])
    assert (found.median, found.p90, found.maximum, found.total) == (5.0, 9.0, 10.0, 55.0)


def test_a_run_still_being_written_is_reported_with_a_note_on_its_torn_line(
    tmp_path: Path,
) -> None:
    out = write_run(tmp_path / "live.jsonl", {0: [1.0, "timeout"], 1: [0.0, 1.0]})
    out.write_bytes(out.read_bytes() + b'{"_ng_task_index": 2, "reward": 1')
    failures = tmp_path / "live_failures.jsonl"
    failures.write_bytes(failures.read_bytes() + b'{"_ng_task_index": 1, "fail')
    written = write_report(out)
    assert written.report.runs[0].figures.scored == 3
    markdown = written.markdown.read_text()
    for path, line in ((out, 4), (failures, 2)):
        assert f"{path}:{line}: the last line is incomplete" in markdown
        assert f"{path}:{line}: the last line is incomplete" in written.html.read_text()


def test_a_truncated_rollout_is_counted_whatever_cut_it_short(tmp_path: Path) -> None:
    """One rollout cut short by the model's context (not --max-steps): one, in the singular,
    and no claim that max_steps did it."""
    run = write_run(tmp_path / "cut.jsonl", {0: [1.0, 0.0], 1: [1.0, 1.0]})
    rows = [orjson.loads(line) for line in run.read_bytes().splitlines()]
    rows[1]["_palaestra"]["truncated"] = "context_exceeded"
    run.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    written = write_report(run)
    markdown, html = written.markdown.read_text(), written.html.read_text()
    line = "1 scored rollout was cut short (truncated: --max-steps, the user's turns"
    assert line in markdown and "max_steps (truncated)" not in markdown
    assert "1 scored rollout was cut short" in html
