"""Reading a served benchmark's tasks from the server (NeMo Evaluator's protocol)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from palaestra.collection.served_tasks import served_tasks, task_from_seed
from palaestra.collection.tasks import load_dataset
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.mcqa.environment import MultipleChoice
from palaestra.errors import ConfigError
from palaestra.http.runner import BackgroundServer
from palaestra.serve.env_app import environment_app
from palaestra.transport import unix_url
from tests.cli.test_collect_cli import rows, run_cli
from tests.cli.test_serve_cli import Served
from tests.support.scripted_model import ScriptedModelServer, text_response
from tests.transport.raw_server import Handler, Peer, Servers, answer, parse_request


def test_a_seed_with_messages_becomes_a_row_with_those_messages_and_its_answer() -> None:
    seed = {
        "prompt": "What is 2 + 2?",
        "expected_answer": "4",
        "metadata": {"a": 2, "b": 2},
        "messages": [
            {"role": "system", "content": "You add."},
            {"role": "user", "content": "What is 2 + 2?"},
        ],
        "system": "You add.",
    }
    assert task_from_seed(seed) == {
        "responses_create_params": {"input": seed["messages"]},
        "expected_answer": "4",
        "metadata": {"a": 2, "b": 2},
    }


def test_a_seed_without_messages_becomes_its_system_and_prompt() -> None:
    row = task_from_seed({"prompt": "Q?", "expected_answer": "A", "system": "Be brief."})
    assert row["responses_create_params"]["input"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Q?"},
    ]
    assert "metadata" not in row


async def test_a_palaestra_server_gives_its_tasks_in_order_and_keeps_no_session(
    tmp_path: Path,
) -> None:
    dataset = load_dataset(find_environment("mcqa").example_tasks)
    # one live session at most: a seed whose session stayed open would refuse the next (503)
    app = environment_app(MultipleChoice(), dataset=dataset, max_sessions=1)
    with BackgroundServer(app) as server:
        path = await served_tasks(server.url, tmp_path / "tasks.jsonl", in_flight=1)
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    assert len(dataset) >= 2
    assert rows == dataset  # the server's own rows, whole: it answers the row it was asked for


def _app(routes: dict[str, tuple[Any, ...]]) -> Starlette:
    """A server answering each route's fixed JSON (and status)."""

    def answer(value: object, status: int = 200) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Response:
            return JSONResponse(value, status_code=status)

        return handler

    return Starlette(
        routes=[
            Route(path, answer(*spec), methods=["GET", "POST"]) for path, spec in routes.items()
        ]
    )


@pytest.mark.parametrize(
    ("routes", "said"),
    [
        ({}, "serves no /dataset_size (not a NeMo Evaluator benchmark server): pass --input"),
        ({"/dataset_size": ({"size": "many"},)}, "/dataset_size answered no usable 'size'"),
        ({"/dataset_size": ({"size": 0},)}, "says the server holds no tasks"),
        (
            {"/dataset_size": ({"size": 2},), "/seed_session": ({"detail": "no"}, 400)},
            "/seed_session {idx: 0} answered 400",
        ),
        (
            {"/dataset_size": ({"size": 1},), "/seed_session": ({"metadata": {}},)},
            "answered no 'prompt' or 'messages'",
        ),
    ],
    ids=["no-size-route", "bad-size", "empty", "seed-refused", "seed-without-prompt"],
)
async def test_a_server_that_cannot_give_its_tasks_is_one_line_naming_the_route(
    tmp_path: Path, routes: dict[str, tuple[Any, ...]], said: str
) -> None:
    with BackgroundServer(_app(routes)) as server, pytest.raises(ConfigError) as raised:
        await served_tasks(server.url, tmp_path / "tasks.jsonl")
    assert said in str(raised.value) and "\n" not in str(raised.value)
    assert not (tmp_path / "tasks.jsonl").exists()


async def test_an_unreachable_server_is_one_line(tmp_path: Path) -> None:
    from tests.support.network import free_port

    with pytest.raises(ConfigError, match=r"cannot read the tasks of http://127\.0\.0\.1:"):
        await served_tasks(f"http://127.0.0.1:{free_port()}", tmp_path / "tasks.jsonl")


def _routed(answers: dict[str, bytes]) -> Handler:
    """A raw server's handler answering each request path with its fixed bytes (else 404)."""

    async def handle(peer: Peer) -> None:
        while (raw := await peer.read_request()) is not None:
            path = parse_request(raw)[0].split(" ")[1]
            peer.send(answers.get(path, answer(b"{}", status="404 Not Found")))

    return handle


@pytest.mark.parametrize(
    ("answers", "said"),
    [
        ({}, "{base} serves no /dataset_size"),
        ({"/dataset_size": answer(b'{"size": 0}')}, "{base}/dataset_size says the server holds"),
        (
            {
                "/dataset_size": answer(b'{"size": 1}'),
                "/seed_session": answer(b'{"detail": "no"}', status="400 Bad Request"),
            },
            "{base}/seed_session {{idx: 0}} answered 400",
        ),
        (
            {"/dataset_size": answer(b'{"size": 1}'), "/seed_session": answer(b"{}")},
            "{base}/seed_session {{idx: 0}} answered no 'prompt' or 'messages'",
        ),
    ],
    ids=["no-size-route", "empty", "seed-refused", "seed-without-prompt"],
)
async def test_a_server_on_a_unix_socket_is_named_by_its_socket_path(
    tmp_path: Path, answers: dict[str, bytes], said: str
) -> None:
    servers = Servers()
    socket_path = tmp_path / "bench.sock"
    server = await servers.start(_routed(answers), unix=socket_path)
    try:
        with pytest.raises(ConfigError) as raised:
            await served_tasks(server.url(""), tmp_path / "tasks.jsonl")
    finally:
        await server.close()
    assert said.format(base=f"unix:{socket_path}") in str(raised.value)
    assert "%2F" not in str(raised.value) and server.errors == []


async def test_an_unreachable_unix_socket_is_named_by_its_path(tmp_path: Path) -> None:
    socket_path = tmp_path / "none.sock"
    with pytest.raises(ConfigError) as raised:
        await served_tasks(unix_url(str(socket_path)), tmp_path / "tasks.jsonl")
    assert str(raised.value).startswith(f"cannot read the tasks of unix:{socket_path}: ")
    assert "%2F" not in str(raised.value)


@pytest.mark.parametrize("env", ["counter", "bfcl_multi_turn"])
def test_a_collect_from_palaestras_own_server_without_input_runs_the_whole_task_rows(
    env: str, tmp_path: Path
) -> None:
    examples = find_environment(env).example_tasks
    assert examples is not None
    dataset = load_dataset(examples)
    served = Served("env", env, cwd=tmp_path)
    try:
        with ScriptedModelServer(lambda params: text_response("Done.")) as model:
            output = tmp_path / "rows.jsonl"
            collect = ("collect", "--env-url", served.url, "--model", model.url)
            done = run_cli(*collect, "--output", str(output), cwd=tmp_path, timeout=600)
    finally:
        served.stop()
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (tmp_path / "rows_failures.jsonl").read_bytes().strip()
    written = rows(output)
    assert len(written) == len(dataset) and all(isinstance(r["reward"], float) for r in written)
    # The rows run were the server's own, task fields and offered tools included.
    tasks = rows(tmp_path / "rows_tasks.jsonl")
    assert tasks == dataset
