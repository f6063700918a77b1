"""``--model`` repeated: ``palaestra collect`` over a pool of real scripted endpoints."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.cli.test_collect_cli import many_tasks, rows, run_cli, weather_script
from tests.support.scripted_model import ScriptedModelServer

RESPONSES = "/v1/responses"


def test_collect_spreads_rollouts_over_repeated_model_flags(tmp_path: Path) -> None:
    many_tasks(tmp_path / "tasks.jsonl", 8)
    with (
        ScriptedModelServer(weather_script(delay=0.02)) as a,
        ScriptedModelServer(weather_script(delay=0.02)) as b,
    ):
        done = run_cli(
            "collect", "--env", "weather", "--model", a.url, "--model", b.url,
            "--input", "tasks.jsonl", "--output", "out.jsonl", "--concurrency", "4",
            cwd=tmp_path,
        )  # fmt: skip
        served = {a.url: len(a.bodies(RESPONSES)), b.url: len(b.bodies(RESPONSES))}
    assert done.returncode == 0, done.stderr
    written = rows(tmp_path / "out.jsonl")
    assert len(written) == 8
    for row in written:  # each rollout's two calls went to one endpoint
        assert row["_palaestra"]["endpoints"] in ([a.url], [b.url])
    assert all(count > 0 for count in served.values())
    [entry] = orjson.loads((tmp_path / "out_aggregate_metrics.json").read_bytes())
    counted = {endpoint["url"]: endpoint["calls"] for endpoint in entry["model_endpoints"]}
    assert counted == served
    recorded = orjson.loads((tmp_path / "out_run.json").read_bytes())
    assert recorded["spec"]["model"]["urls"] == [a.url, b.url]


def test_a_configured_pool_is_one_model_name(tmp_path: Path) -> None:
    many_tasks(tmp_path / "tasks.jsonl", 2)
    with ScriptedModelServer(weather_script()) as a, ScriptedModelServer(weather_script()) as b:
        (tmp_path / "palaestra_models.yaml").write_text(f"replicas: [{a.url}, {b.url}]\n")
        done = run_cli(
            "collect", "--env", "weather", "--model", "replicas",
            "--input", "tasks.jsonl", "--output", "out.jsonl",
            cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = rows(tmp_path / "out.jsonl")
    assert len(written) == 2
    assert {url for row in written for url in row["_palaestra"]["endpoints"]} <= {a.url, b.url}


def test_several_models_that_are_not_urls_are_one_clear_line(tmp_path: Path) -> None:
    many_tasks(tmp_path / "tasks.jsonl", 1)
    done = run_cli(
        "collect", "--env", "weather", "--model", "local", "--model", "http://127.0.0.1:9/v1",
        "--input", "tasks.jsonl", "--output", "out.jsonl",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if "'local'" in line]
    assert "several models must all be http(s) base URLs" in line
    assert not (tmp_path / "out.jsonl").exists()
