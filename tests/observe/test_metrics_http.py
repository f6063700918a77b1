"""``GET /metrics`` of every server: scraped over real HTTP after real traffic, the numbers add
up to the rows written and the requests the scripted model saw; a set token is required."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import orjson
import pytest
from prometheus_client import generate_latest

import palaestra
from palaestra import LocalEnvironmentClient, ToolCallingAgent, tool
from palaestra.envs.weather.environment import Weather
from palaestra.http.guard import Guard
from palaestra.http.runner import BackgroundServer
from palaestra.models import build_model
from palaestra.models.affinity import rollout_scope
from palaestra.models.openai.responses import OpenAIResponsesModel
from palaestra.observe.metrics import Source, model_families, registry_of
from palaestra.observe.sources import local_sources
from palaestra.serve.agent_app import agent_app
from palaestra.serve.env_app import environment_app
from palaestra.serve.model_app import model_app
from palaestra.spec import ModelConfig
from palaestra.stack.head import head_app
from palaestra.types import JsonDict
from tests.cli.test_collect_cli import rows, weather_script
from tests.run.test_metrics import (
    Samples,
    by_label,
    function_call_items,
    parse,
    tasks_file,
)
from tests.sandbox import pool_tasks
from tests.support.scripted_model import (
    ScriptedFault,
    ScriptedModelServer,
    text_response,
    tool_call_response,
)
from tests.transport.raw_server import Peer, Servers
from tests.transport.raw_server import answer as raw_answer

TOKEN = "metrics-secret"


def scraped(source: Source) -> Samples:
    """The samples ``source`` gives, as a scrape would read them."""
    return parse(generate_latest(registry_of([source])).decode())


def get(url: str, token: str | None = TOKEN) -> Samples:
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.headers["content-type"].startswith("text/plain")
        return parse(answer.read().decode())


def refused(url: str, token: str | None) -> int:
    with pytest.raises(urllib.error.HTTPError) as caught:
        get(url, token)
    return caught.value.code


def mistaken_weather(params: JsonDict) -> JsonDict | ScriptedFault:
    """The weather script, but a task about Atlantis first calls the tool with a wrong
    argument name (rejected, the error fed back), then calls it right."""
    items = params["input"] if isinstance(params["input"], list) else []
    outputs = [i for i in items if i.get("type") == "function_call_output"]
    if "Atlantis" in orjson.dumps(params["input"]).decode() and not outputs:
        return tool_call_response("get_weather", '{"town": "Atlantis"}')
    if "Atlantis" in orjson.dumps(params["input"]).decode() and len(outputs) == 1:
        return tool_call_response("get_weather", '{"city": "Atlantis"}')
    reply: JsonDict | ScriptedFault = weather_script()(params)
    return reply


def test_an_env_server_under_load_counts_every_tool_call_the_rows_hold(tmp_path: Path) -> None:
    tasks = tasks_file(tmp_path / "tasks.jsonl", ["Paris", "Atlantis", "Oslo"] * 8)
    env = BackgroundServer(Guard(environment_app(Weather()), token=TOKEN))
    with ScriptedModelServer(mistaken_weather) as model, env:
        summary = palaestra.collect(
            env_url=env.url,
            server_token=TOKEN,
            model=model.url,
            input=tasks,
            output=tmp_path / "out.jsonl",
            concurrency=12,
        )
        samples = get(f"{env.url}/metrics")
        assert refused(f"{env.url}/metrics", None) == 401
        assert refused(f"{env.url}/metrics", "wrong") == 401
    assert summary.done == 24 and summary.failed == 0
    calls = by_label(samples, "palaestra_tool_calls_total", "tool")
    assert calls == dict(function_call_items(tmp_path / "out.jsonl")) == {"get_weather": 32}
    errors = {
        (dict(labels)["tool"], dict(labels)["kind"]): value
        for (name, labels), value in samples.items()
        if name == "palaestra_tool_errors_total"
    }
    assert errors == {("get_weather", "rejected"): 8}
    assert samples["palaestra_sessions_live", ()] == 0  # every rollout closed its session
    assert samples["palaestra_sessions_expired_total", ()] == 0
    assert samples["palaestra_sessions_refused_total", ()] == 0
    assert ("process_resident_memory_bytes", ()) in samples


class ShortLived(Weather):
    session_ttl: ClassVar[float] = 0.05


def test_an_env_server_counts_sessions_live_expired_and_refused_at_its_cap() -> None:
    app = environment_app(ShortLived(), max_sessions=2)
    with BackgroundServer(app) as env:

        def seed() -> int:
            request = urllib.request.Request(f"{env.url}/seed_session", data=b"{}")
            try:
                with urllib.request.urlopen(request, timeout=10) as answer:
                    return int(answer.status)
            except urllib.error.HTTPError as error:
                return error.code

        assert (seed(), seed()) == (200, 200)
        assert get(f"{env.url}/metrics", None)["palaestra_sessions_live", ()] == 2
        time.sleep(0.1)  # both outlive their time to live
        assert seed() == 200  # the seed sweeps the two expired sessions
        app.state.caps.max_sessions = 1
        assert seed() == 503  # over the cap (the live one is not expired yet)
        samples = get(f"{env.url}/metrics", None)
    assert samples["palaestra_sessions_live", ()] == 1
    assert samples["palaestra_sessions_expired_total", ()] == 2
    assert samples["palaestra_sessions_refused_total", ()] == 1
    assert samples["palaestra_sessions_max", ()] == 1


def test_an_agent_server_counts_its_rollouts_model_calls_and_tools(tmp_path: Path) -> None:
    tasks = tasks_file(tmp_path / "tasks.jsonl", ["Paris", "FAIL", "Oslo", "Rome"])

    def script(params: JsonDict) -> JsonDict | ScriptedFault:
        if "FAIL" in orjson.dumps(params["input"]).decode():
            return ScriptedFault(status=400, body={"error": {"message": "refused"}})
        reply: JsonDict | ScriptedFault = weather_script()(params)
        return reply

    with ScriptedModelServer(script) as model:
        app = agent_app(
            ToolCallingAgent(),
            LocalEnvironmentClient(Weather()),
            OpenAIResponsesModel(model.url),
        )
        with BackgroundServer(Guard(app, token=TOKEN)) as agent:
            palaestra.collect(
                agent_url=agent.url,
                server_token=TOKEN,
                input=tasks,
                output=tmp_path / "out.jsonl",
                repeats=2,
            )
            samples = get(f"{agent.url}/metrics")
            assert refused(f"{agent.url}/metrics", None) == 401
        seen = len(model.bodies("/v1/responses"))
    written = rows(tmp_path / "out.jsonl")
    failures = rows(tmp_path / "out_failures.jsonl")
    assert samples["palaestra_rollouts_finished_total", ()] == len(written) == 6
    assert by_label(samples, "palaestra_rollouts_failed_total", "kind") == {
        "model_error": len(failures)
    }
    assert samples["palaestra_rollouts_in_flight", ()] == 0
    assert by_label(samples, "palaestra_model_calls_total", "endpoint") == {model.url: seen}
    assert by_label(samples, "palaestra_tool_calls_total", "tool") == dict(
        function_call_items(tmp_path / "out.jsonl")
    )
    totals = by_label(samples, "palaestra_rollout_phase_seconds_count", "phase")
    assert totals["total"] == 8 and totals["verify"] == 6


def test_a_model_server_counts_requests_by_route_and_its_own_calls() -> None:
    with ScriptedModelServer(lambda params: text_response("hi")) as upstream:
        app = model_app(OpenAIResponsesModel(upstream.url), model_id="m")
        with BackgroundServer(Guard(app, token=TOKEN)) as server:
            for route, body in (
                ("/v1/responses", {"input": "hello"}),
                ("/v1/responses", {"input": "again"}),
                ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]}),
            ):
                request = urllib.request.Request(f"{server.url}{route}", orjson.dumps(body))
                request.add_header("Authorization", f"Bearer {TOKEN}")
                request.add_header("Content-Type", "application/json")
                urllib.request.urlopen(request, timeout=10).close()
            samples = get(f"{server.url}/metrics")
            assert refused(f"{server.url}/metrics", None) == 401
        seen = len(upstream.bodies("/v1/responses"))
    served = by_label(samples, "palaestra_model_requests_served_total", "route")
    assert served == {"responses": 2, "chat_completions": 1}
    assert by_label(samples, "palaestra_model_calls_total", "endpoint") == {upstream.url: seen}


def test_a_stack_head_says_which_servers_are_up() -> None:
    servers: list[JsonDict] = [
        {"name": "weather", "kind": "env", "status": "ready", "url": "http://127.0.0.1:1"},
        {"name": "policy", "kind": "model", "status": "dead", "url": None},
    ]
    with BackgroundServer(Guard(head_app(lambda: servers, stack="s"), token=TOKEN)) as head:
        samples = get(f"{head.url}/metrics")
        assert refused(f"{head.url}/metrics", None) == 401
    up = {
        dict(labels)["name"]: value
        for (name, labels), value in samples.items()
        if name == "palaestra_stack_server_up"
    }
    assert up == {"weather": 1.0, "policy": 0.0}


class Pooled(Weather):
    """A tool that runs in the worker pool; a city called Slow overruns its time limit."""

    pool_workers: ClassVar[int | None] = 1

    @tool
    async def forecast(self, city: str) -> str:
        """Tomorrow's forecast.

        Args:
            city: The city.
        """
        seconds = 5.0 if city == "Slow" else 0.0
        return await self.run_in_pool(pool_tasks.sleep, seconds, timeout=0.5)


def test_the_worker_pool_reports_workers_limit_hits_cpu_and_memory() -> None:
    async def scenario() -> tuple[Samples, Any]:
        client = LocalEnvironmentClient(Pooled())
        session = await client.seed({"responses_create_params": {"input": "x"}})
        with pytest.raises(palaestra.RolloutFailure):
            await client.call_tool(session, "forecast", {"city": "Slow"})
        await client.call_tool(session, "forecast", {"city": "Paris"})  # on the new worker
        text = generate_latest(registry_of(local_sources(client))).decode()
        await client.aclose()
        return parse(text), client

    samples, _ = asyncio.run(scenario())
    assert samples["palaestra_pool_workers", ()] == 1
    assert samples["palaestra_pool_workers_alive", ()] == 1  # the overrun worker was replaced
    assert by_label(samples, "palaestra_pool_limit_hits_total", "kind") == {"timeout": 2}
    assert samples["palaestra_pool_tasks_total", ()] == 2
    assert samples["palaestra_pool_restarts_total", ()] >= 2
    assert samples["palaestra_pool_peak_memory_bytes", ()] > 1_000_000  # an interpreter's
    assert samples["palaestra_pool_cpu_seconds", ()] >= 0
    assert by_label(samples, "palaestra_tool_errors_total", "kind") == {"timeout": 1}


def test_every_family_a_server_can_serve_is_in_the_docs_page() -> None:
    from palaestra.observe import metrics
    from palaestra.observe.metrics_counts import RolloutCounts, StalenessCounts
    from palaestra.sandbox import Sandbox
    from palaestra.sandbox.pool import WorkerPool
    from palaestra.serve.env_app import SessionCaps

    client = LocalEnvironmentClient(Pooled())
    sources = [
        metrics.rollout_families(RolloutCounts()),
        metrics.staleness_families(StalenessCounts()),
        metrics.model_families(OpenAIResponsesModel("http://127.0.0.1:9/v1")),
        metrics.environment_families(client),
        metrics.session_cap_families(SessionCaps(4, None)),
        metrics.pool_families(WorkerPool(1)),
        metrics.served_families({"responses": 1}),
        metrics.stack_families(lambda: [{"name": "a", "kind": "env", "status": "ready"}]),
        metrics.sandbox_families(SimpleNamespace(sandbox=Sandbox())),
        metrics.children_families,
    ]
    names = {family.name for source in sources for family in source()}
    page = (Path(__file__).parents[2] / "docs/metrics.md").read_text()
    assert len(names) > 30
    assert sorted(name for name in names if f"`{name}`" not in page) == []


def test_an_environments_sandbox_reports_runs_limit_hits_and_its_childrens_cpu() -> None:
    from palaestra.sandbox import Limit, Limits, Sandbox

    runs = Path(tempfile.mkdtemp(prefix="palaestra-test-runs-"))
    runs.chmod(0o711)  # the sandbox's uid must be able to enter it

    class Coding(Weather):
        def __init__(self) -> None:
            super().__init__()
            self.sandbox = Sandbox(Limits(wall_time=0.5), isolation="bubblewrap", root_dir=runs)

        @tool
        async def run_code(self, code: str) -> str:
            """Run Python code.

            Args:
                code: The program.
            """
            result = await self.sandbox.run_python(code)
            return f"{result.stdout}{result.limit or ''}"

    async def scenario() -> Samples:
        client = LocalEnvironmentClient(Coding())
        session = await client.seed({"responses_create_params": {"input": "x"}})
        assert await client.call_tool(session, "run_code", {"code": "print(6 * 7)"}) == "42\n"
        spun = await client.call_tool(session, "run_code", {"code": "while True: pass"})
        assert spun == str(Limit.WALL_TIME)
        text = generate_latest(registry_of(local_sources(client))).decode()
        await client.aclose()
        return parse(text)

    try:
        samples = asyncio.run(scenario())
    finally:
        shutil.rmtree(runs)
    assert samples["palaestra_sandbox_runs_total", ()] == 2
    assert by_label(samples, "palaestra_sandbox_limit_hits_total", "kind") == {"wall_time": 1}
    assert samples["palaestra_children_cpu_seconds_total", ()] > 0  # the spinning run's
    assert samples["palaestra_children_peak_memory_bytes", ()] > 1_000_000


class Metered(Weather):
    @tool
    def metrics(self) -> str:
        """The station's metrics."""
        return "wind 3 m/s"


def test_a_tool_named_metrics_still_answers_its_post_beside_the_get() -> None:
    with BackgroundServer(environment_app(Metered())) as env:
        seed = urllib.request.Request(f"{env.url}/seed_session", data=b"{}")
        with urllib.request.urlopen(seed, timeout=10) as answer:
            token = answer.headers["x-palaestra-session"]
        call = urllib.request.Request(f"{env.url}/metrics", data=b"{}")
        call.add_header("x-palaestra-session", token)
        with urllib.request.urlopen(call, timeout=10) as answer:
            assert orjson.loads(answer.read()) == "wind 3 m/s"
        samples = get(f"{env.url}/metrics", None)
    assert by_label(samples, "palaestra_tool_calls_total", "tool") == {"metrics": 1}


async def answer_ok(peer: Peer) -> None:
    """A raw model server's handler: every call answered with one assistant message."""
    while await peer.read_request() is not None:
        peer.send(raw_answer(orjson.dumps(text_response("ok")), "Content-Type: application/json"))


async def test_a_model_on_a_unix_socket_is_labelled_by_its_socket_path_and_a_pool_row_by_its_url(
    tmp_path: Path,
) -> None:
    servers = Servers()
    paths = [tmp_path / "a.sock", tmp_path / "b.sock"]
    started = [await servers.start(answer_ok, unix=p) for p in paths]
    one = OpenAIResponsesModel(ModelConfig(url=started[0].url("/v1"), model="m"))
    pool = build_model(
        ModelConfig(urls=[s.url("/v1") for s in started], model="m", api="responses")
    )
    try:
        await one.respond({"input": "hi"})
        with rollout_scope() as scope:
            await pool.respond({"input": "hi"})
        labels = [
            by_label(scraped(model_families(model)), "palaestra_model_calls_total", "endpoint")
            for model in (one, pool)
        ]
    finally:
        await one.aclose()
        await pool.aclose()
        for server in started:
            await server.close()
    assert labels[0] == {f"unix:{paths[0]}/v1": 1}
    assert sorted(labels[1]) == [f"unix:{p}/v1" for p in paths] and sum(labels[1].values()) == 1
    # The pool's own url stays the one a row's ``_palaestra.endpoints`` names: the key the
    # workers' counts are added up by, compared as it is.
    stats = {entry["url"]: entry["calls"] for entry in pool.endpoint_stats()}  # type: ignore[attr-defined]
    assert scope.urls is not None and stats[scope.urls[0]] == 1
