"""A remote model's calls name the rollout they belong to, so a pooled model server can tell."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaestra.errors import ConfigError, ModelError, ModelUnreachable
from palaestra.http.json import JSONResponse
from palaestra.http.runner import BackgroundServer
from palaestra.models.affinity import rollout_scope
from palaestra.models.openai.responses import OpenAIResponsesModel
from palaestra.spec import ModelConfig
from palaestra.wire.protocol import ROLLOUT_HEADER, SESSION_ID_HEADER
from tests.support.scripted_model import text_response
from tests.transport.raw_server import Servers, answer, answer_always


class Recorder:
    """A model server that answers every call the same and keeps each call's headers."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []

    def app(self) -> Starlette:
        async def responses(request: Request) -> Response:
            self.headers.append(dict(request.headers))
            return JSONResponse(text_response("ok"))

        return Starlette(routes=[Route("/v1/responses", responses, methods=["POST"])])


@pytest.fixture
def recorder() -> Iterator[tuple[Recorder, str]]:
    recorder = Recorder()
    with BackgroundServer(recorder.app()) as server:
        yield recorder, f"{server.url}/v1"


async def test_a_model_call_names_its_rollout_only_inside_one(
    recorder: tuple[Recorder, str],
) -> None:
    seen, url = recorder
    model = OpenAIResponsesModel(ModelConfig(url=url, model="m", api_key="sk-secret"))
    try:
        await model.respond({"input": "outside"})
        for _ in range(2):
            with rollout_scope():
                await model.respond({"input": "one"})
                await model.respond({"input": "two"})
    finally:
        await model.aclose()
    keys = [headers.get(ROLLOUT_HEADER) for headers in seen.headers]
    assert keys[0] is None  # no rollout, no header
    assert keys[1] is not None and keys[1] == keys[2]  # one rollout, one key
    assert keys[3] is not None and keys[3] == keys[4] and keys[3] != keys[1]
    assert [headers.get(SESSION_ID_HEADER) for headers in seen.headers] == keys
    for headers in seen.headers:  # the framed headers keep the key and the content type
        assert headers["authorization"] == "Bearer sk-secret"
        assert headers["content-type"] == "application/json"


async def test_a_model_on_a_unix_socket_is_named_by_its_socket_path_when_it_fails(
    tmp_path: Path,
) -> None:
    servers = Servers()
    socket_path = tmp_path / "model.sock"
    server = await servers.start(answer_always(answer(b"{}")), unix=socket_path)
    model = OpenAIResponsesModel(ModelConfig(url=server.url("/v1"), model="m", max_retries=0))
    where = re.escape(str(socket_path))
    try:
        with pytest.raises(ModelError, match=f"^POST unix:{where}/v1/responses answered"):
            await model.respond({"input": "hi"})
        await server.close()  # nobody listens any more
        with pytest.raises(ModelUnreachable, match=f"^cannot reach the model at unix:{where}"):
            await model.endpoint.check()
    finally:
        await model.aclose()
        await server.close()


async def test_a_model_on_a_unix_socket_without_a_model_name_is_named_by_its_socket_path(
    tmp_path: Path,
) -> None:
    servers = Servers()
    socket_path = tmp_path / "model.sock"
    server = await servers.start(answer_always(answer(b"{}")), unix=socket_path)
    model = OpenAIResponsesModel(ModelConfig(url=server.url("/v1"), max_retries=0))
    try:
        assert model.name == f"unix:{socket_path}/v1"
        assert model.endpoint.base_url == server.url("/v1")  # what it calls is unchanged
    finally:
        await model.aclose()
        await server.close()


def test_a_model_url_with_a_password_is_refused_without_showing_it() -> None:
    with pytest.raises(ConfigError) as refused:
        OpenAIResponsesModel("http://user:secret@127.0.0.1:9/v1")
    assert "secret" not in str(refused.value)
    assert "http://***@127.0.0.1:9/v1" in str(refused.value)
    assert "api_key_env" in str(refused.value)


async def test_a_key_in_a_model_url_query_is_in_no_error() -> None:
    config = ModelConfig(url="http://127.0.0.1:9/v1?api_key=secret", max_retries=0)
    model = OpenAIResponsesModel(config)
    try:
        with pytest.raises(ModelUnreachable) as unreachable:
            await model.check()
        assert "secret" not in str(unreachable.value)
        with pytest.raises(ModelError) as failed:
            await model.respond({"model": "m", "input": "hi"})
        assert "secret" not in str(failed.value)
        assert "api_key=***" in str(failed.value)
    finally:
        await model.aclose()
    assert "secret" not in model.name
