"""The ORS server of an environment over real HTTP: sessions, streams and refusals."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import pytest

from palaestra import LocalEnvironmentClient
from palaestra.envs.counter.environment import Counter
from palaestra.envs.weather.environment import Weather
from palaestra.errors import ConfigError
from palaestra.http.guard import Guard
from palaestra.http.runner import BackgroundServer
from palaestra.serve.ors_app import ApiKeyAsBearer, ors_app, served_splits
from palaestra.types import JsonDict
from palaestra.wire import ors

TASK = {"responses_create_params": {"input": "Add 3."}, "initial_value": 1, "target_value": 4}


@contextmanager
def served() -> Iterator[str]:
    app = ors_app(
        LocalEnvironmentClient(Counter()), {"test": [TASK]}, name="counter", turn_based=False
    )
    with BackgroundServer(app) as server:
        yield server.url


def post(url: str, body: JsonDict, sid: str | None = None) -> tuple[int, bytes]:
    headers = {"Content-Type": "application/json", **({"X-Session-ID": sid} if sid else {})}
    request = urllib.request.Request(url, orjson.dumps(body), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def session(url: str) -> str:
    _, stream = post(f"{url}/create_session", {})
    (sid,) = [data for event, data in ors.sse_events(stream) if event == "task_id"]
    assert post(f"{url}/create", {"split": "test", "index": 0}, sid)[0] == 200
    return sid


def call(url: str, sid: str, body: JsonDict) -> tuple[str, Any]:
    status, stream = post(f"{url}/counter/call", body, sid)
    assert status == 200
    event, data = ors.stream_result(ors.sse_events(stream))
    return event, orjson.loads(data) if event == "end" else data


def test_a_broken_stream_asked_again_by_its_task_id_answers_without_running_twice() -> None:
    with served() as url:
        sid = session(url)
        _, stream = post(f"{url}/counter/call", {"name": "increment", "input": {"amount": 3}}, sid)
        (task_id,) = [data for event, data in ors.sse_events(stream) if event == "task_id"]
        again = call(url, sid, {"name": "increment", "input": {"amount": 3}, "task_id": task_id})
        assert again == ("end", ors.call_success("4", metadata=None))
        assert (
            call(url, sid, {"name": "read_counter", "input": {}})[1]["output"]["blocks"][0]["text"]
            == "4"
        )  # one increment, not two
        assert call(url, sid, {"name": "x", "input": {}, "task_id": "nope"}) == (
            "error",
            "unknown task_id",
        )


def test_a_call_is_answered_again_only_to_the_session_that_made_it() -> None:
    with served() as url:
        mine, theirs = session(url), session(url)
        _, stream = post(f"{url}/counter/call", {"name": "increment", "input": {}}, mine)
        (task_id,) = [data for event, data in ors.sse_events(stream) if event == "task_id"]
        asked = {"name": "increment", "input": {}, "task_id": task_id}
        assert call(url, theirs, asked) == ("error", "unknown task_id")
        assert call(url, mine, asked)[0] == "end"


@pytest.mark.parametrize(
    ("path", "body", "session_header", "status", "said"),
    [
        ("/counter/call", {"name": "increment"}, "no-such", 404, "Active environment not found"),
        ("/create", {"split": "test"}, "s1", 400, "give either task_spec or both split and"),
        ("/create", {"task_spec": {}, "toolset_name": "codex"}, "s2", 400, "toolsets are not"),
        ("/create", {"task_spec": [1]}, "s3", 400, "task_spec must be a JSON object"),
        ("/create", {"split": "test", "index": 0, "seed": 1}, "s4", 400, "unknown field 'seed'"),
        ("/create", {"task_spec": {"x": 1}}, "s5", 400, "the task is not usable"),
        ("/create", {"split": "test", "index": 0}, None, 400, "X-Session-ID header is required"),
        ("/counter/task_range", {"split": "test", "start": "a"}, None, 400, "start 'a' is not"),
    ],
)
def test_a_wrong_request_is_refused_with_its_status_and_a_detail(
    path: str, body: JsonDict, session_header: str | None, status: int, said: str
) -> None:
    with served() as url:
        answered, raw = post(url + path, body, session_header)
    assert answered == status
    assert said in orjson.loads(raw)["detail"]


def test_a_call_with_input_that_is_no_object_is_refused_before_any_tool_runs() -> None:
    with served() as url:
        sid = session(url)
        status, raw = post(f"{url}/counter/call", {"name": "increment", "input": [3]}, sid)
        assert (status, orjson.loads(raw)) == (
            400,
            {"detail": "call: 'input' must be a JSON object"},
        )


def test_with_a_token_the_sdks_api_key_header_carries_it() -> None:
    app = ors_app(LocalEnvironmentClient(Counter()), {"test": [TASK]}, name="c", turn_based=False)
    with BackgroundServer(ApiKeyAsBearer(Guard(app, token="s3cret"))) as server:

        def status(headers: dict[str, str]) -> int:
            request = urllib.request.Request(f"{server.url}/splits", headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=10) as answer:
                    return int(answer.status)
            except urllib.error.HTTPError as error:
                return error.code

        assert status({"X-API-Key": "s3cret"}) == 200
        assert status({"Authorization": "Bearer s3cret"}) == 200
        assert status({"X-API-Key": "wrong"}) == 401
        assert status({}) == 401


def test_an_environment_with_neither_tasks_nor_a_generator_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match=r"^environment 'weather' has no example tasks: serve"):
        served_splits({}, None, Weather())
