"""``collect --metrics-port``: the run's metrics, scraped while it runs, add up to its files.

Every run goes over real HTTP to the scripted OpenAI-compatible server, and every scrape is a
real HTTP GET of the port, parsed with ``prometheus_client``'s own parser.
"""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

import palaestra
from palaestra.collection.collector import RunSummary
from palaestra.errors import ConfigError
from palaestra.types import JsonDict, function_calls
from tests.cli.test_collect_cli import PALAESTRA, rows, weather_script
from tests.support.network import free_port
from tests.support.scripted_model import ScriptedFault, ScriptedModelServer, fail_first

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(url: str) -> Samples:
    """Every sample of the text at ``url`` by (name, sorted labels), as the parser reads it."""
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    return parse(text)


def parse(text: str) -> Samples:
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def by_label(samples: Samples, name: str, label: str) -> dict[str, float]:
    return {dict(labels)[label]: value for (seen, labels), value in samples.items() if seen == name}


def tasks_file(path: Path, cities: list[str]) -> Path:
    """One task per entry; "FAIL" makes the scripted model refuse it (HTTP 400), "BAD" is a
    line that is not a task (an invalid_input failure)."""
    lines = []
    for city in cities:
        if city == "BAD":
            lines.append(b'{"responses_create_params": 7}')
            continue
        content = f"Weather in {city}?"
        lines.append(orjson.dumps({"responses_create_params": {"input": content}}))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def failing_weather(delay: float = 0.0):  # type: ignore[no-untyped-def]
    """The weather script; a task asking about FAIL is refused with a 400 (no retry)."""
    weather = weather_script(delay)

    def script(params: JsonDict) -> JsonDict | ScriptedFault:
        if "FAIL" in orjson.dumps(params["input"]).decode():
            return ScriptedFault(status=400, body={"error": {"message": "refused"}})
        reply: JsonDict | ScriptedFault = weather(params)
        return reply

    return script


def function_call_items(path: Path) -> Counter[str]:
    counted: Counter[str] = Counter()
    for row in rows(path):
        response = row.get("response") or {}
        counted.update(str(call.get("name")) for call in function_calls(response))
    return counted


def test_a_run_scraped_at_its_last_rollout_adds_up_to_its_output_files(tmp_path: Path) -> None:
    cities = ["Paris", "FAIL", "Oslo", "BAD", "Rome", "FAIL", "Lima"]
    tasks = tasks_file(tmp_path / "tasks.jsonl", cities)
    out = tmp_path / "out.jsonl"
    url = f"http://127.0.0.1:{free_port()}/metrics"
    port = int(url.split(":")[2].split("/")[0])
    scrapes: list[Samples] = []

    def on_progress(summary: RunSummary) -> None:  # on the run's loop: the server is a thread
        scrapes.append(scrape(url))

    # The first request of the run fails once with a 500 and is retried: one retry counted.
    script = fail_first(1, ScriptedFault(status=500), failing_weather())
    with ScriptedModelServer(script) as server:
        summary = palaestra.collect(
            env="weather",
            model=server.url,
            input=tasks,
            output=out,
            repeats=2,
            concurrency=3,
            metrics_port=port,
            progress=on_progress,
        )
        seen = len(server.bodies("/v1/responses")) + len(server.bodies("/v1/chat/completions"))
    last = scrapes[-1]
    written = rows(out)
    failures = rows(tmp_path / "out_failures.jsonl")
    assert len(written) == summary.done == 8 and len(failures) == 5
    assert last["palaestra_rollouts_finished_total", ()] == len(written)
    failed = by_label(last, "palaestra_rollouts_failed_total", "kind")
    assert failed == dict(Counter(str(row["failure"]["kind"]) for row in failures))
    assert failed == {"model_error": 4, "invalid_input": 1}
    assert last["palaestra_rollouts_started_total", ()] == 12  # the invalid line never started
    assert last["palaestra_rollouts_in_flight", ()] == 0
    calls = by_label(last, "palaestra_model_calls_total", "endpoint")
    retries = by_label(last, "palaestra_model_retries_total", "endpoint")
    errors = by_label(last, "palaestra_model_errors_total", "endpoint")
    assert list(calls) == [server.url] and retries == {server.url: 1}
    assert calls[server.url] + retries[server.url] == seen  # what the server saw
    assert errors == {server.url: 4}
    tools = by_label(last, "palaestra_tool_calls_total", "tool")
    assert tools == dict(function_call_items(out)) == {"get_weather": 8}
    assert by_label(last, "palaestra_tool_errors_total", "tool") == {}
    totals = by_label(last, "palaestra_rollout_phase_seconds_count", "phase")
    assert totals["total"] == totals["seed"] == 12  # every started rollout was timed
    assert totals["tools"] == 8
    assert last["palaestra_reward_mean", ()] == pytest.approx(
        sum(row["reward"] for row in written) / len(written)
    )
    assert last["palaestra_sessions_live", ()] == 0
    assert ("process_cpu_seconds_total", ()) in last
    finished = [s["palaestra_rollouts_finished_total", ()] for s in scrapes]
    assert finished == sorted(finished)  # counters never go back
    with pytest.raises(urllib.error.URLError):  # the server stopped with the run
        scrape(url)


def test_the_command_serves_metrics_while_it_runs_between_what_is_written(
    tmp_path: Path,
) -> None:
    tasks = tasks_file(tmp_path / "tasks.jsonl", ["Paris"] * 12)
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    out = tmp_path / "w.jsonl"
    with ScriptedModelServer(weather_script(delay=0.05)) as server:
        command = [*PALAESTRA, "collect", "--env", "weather", "--model", server.url]
        command += ["--input", str(tasks), "--output", str(out), "--concurrency", "2"]
        command += ["--metrics-port", str(port)]
        process = subprocess.Popen(
            command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        bounds: list[tuple[int, float, int]] = []
        try:
            while process.poll() is None:
                before = len(rows(out)) if out.exists() else 0
                try:
                    samples = scrape(url)
                except (urllib.error.URLError, ConnectionError):
                    time.sleep(0.02)  # not listening yet, or just stopped
                    continue
                after = len(rows(out)) if out.exists() else 0  # serving before the file is made
                bounds.append((before, samples["palaestra_rollouts_finished_total", ()], after))
                time.sleep(0.05)
        finally:
            _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert f"metrics: http://127.0.0.1:{port}/metrics" in stderr
    assert len(bounds) >= 3  # the run lasts about 0.6 s: scraped several times while it ran
    assert all(before <= finished <= after for before, finished, after in bounds)
    assert any(0 < finished < 12 for _, finished, _ in bounds)
    with pytest.raises(urllib.error.URLError):  # the process is gone, and its port with it
        scrape(url)


def test_a_metrics_port_in_use_is_one_line_before_anything_runs(tmp_path: Path) -> None:
    tasks = tasks_file(tmp_path / "tasks.jsonl", ["Paris"])
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=rf"127\.0\.0\.1:{port} .*in use"):
            palaestra.collect(
                env="weather",
                model="http://127.0.0.1:9/v1",
                input=tasks,
                output=tmp_path / "o.jsonl",
                metrics_port=port,
            )
    assert not (tmp_path / "o.jsonl").exists()


def test_a_busy_metrics_port_is_one_line_naming_it_before_the_url_or_anything_starts(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "env-server-started"
    env_cmd = f"touch {marker}; exec sleep 300"  # an environment server slow to come up
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        refused = subprocess.run(
            [
                *PALAESTRA, "collect", "--env-cmd", env_cmd, "--env-cmd-timeout", "5",
                "--model", "http://127.0.0.1:9/v1", "--output", "o.jsonl",
                "--metrics-port", str(port),
            ],
            cwd=tmp_path, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    [line] = refused.stderr.strip().splitlines()  # before: the URL printed first
    assert line.startswith(f"error: cannot serve metrics on 127.0.0.1:{port} ")
    assert "in use" in line
    assert not marker.exists()  # bound first: before, the server started (and was waited for)


def test_a_pool_of_endpoints_is_scraped_per_endpoint(tmp_path: Path) -> None:
    tasks = tasks_file(tmp_path / "tasks.jsonl", ["Paris", "Oslo", "Rome", "Lima"])
    port = free_port()
    scrapes: list[Samples] = []
    url = f"http://127.0.0.1:{port}/metrics"
    with (
        ScriptedModelServer(weather_script()) as first,
        ScriptedModelServer(weather_script()) as second,
    ):
        palaestra.collect(
            env="weather",
            model=[first.url, second.url],
            input=tasks,
            output=tmp_path / "out.jsonl",
            repeats=2,
            concurrency=4,
            metrics_port=port,
            progress=lambda summary: scrapes.append(scrape(url)),
        )
        seen = {server.url: len(server.bodies("/v1/responses")) for server in (first, second)}
    calls = by_label(scrapes[-1], "palaestra_model_calls_total", "endpoint")
    assert calls == seen and sum(calls.values()) == 16  # two calls per rollout
    healthy = by_label(scrapes[-1], "palaestra_model_endpoint_healthy", "endpoint")
    assert healthy == {first.url: 1.0, second.url: 1.0}
