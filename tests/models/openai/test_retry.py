"""post_json over real HTTP: retries, budgets, timeouts, context-length errors, secrets."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from palaestra.errors import (
    ConfigError,
    ModelAuthError,
    ModelError,
    ModelTimeout,
    ModelUnreachable,
    ServiceUnreachable,
)
from palaestra.models.base import ModelStats
from palaestra.models.openai.retry import (
    ContextLengthExceeded,
    ModelHttpError,
    RetryPolicy,
    Timeouts,
    post_json,
)
from palaestra.transport import HttpClient
from palaestra.types import FailureKind, JsonDict
from tests.support.network import free_port
from tests.support.scripted_model import (
    ScriptedFault,
    ScriptedModelServer,
    Sequence,
    fail_first,
    text_response,
)
from tests.transport.raw_server import Servers, answer, answer_always

FAST = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.05)
ONE_RETRY = RetryPolicy(max_retries=1, base_delay=0.01, max_delay=0.01)
SECRET = "sk-test-very-secret-key"


@pytest.fixture
async def session() -> AsyncIterator[HttpClient]:
    client = HttpClient()
    yield client
    await client.aclose()


async def post(
    session: HttpClient,
    url: str,
    stats: ModelStats,
    *,
    retry: RetryPolicy = FAST,
    timeouts: Timeouts | None = None,
    headers: dict[str, str] | None = None,
) -> JsonDict:
    return await post_json(
        session,
        url + "/responses",
        {"input": "hi"},
        headers=headers or {},
        timeouts=timeouts or Timeouts(connect=2, read=5),
        retry=retry,
        stats=stats,
    )


# --- the retry policy -----------------------------------------------------------------------


def test_backoff_doubles_and_is_capped() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=3.0, jitter=0.0)
    assert [policy.delay(attempt) for attempt in range(4)] == [0.5, 1.0, 2.0, 3.0]


def test_jitter_stretches_within_its_fraction_and_under_the_cap() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=10.0, jitter=0.5)
    assert policy.delay(0, unit=0.0) == 0.5
    assert policy.delay(0, unit=0.999) == pytest.approx(1.499)
    assert policy.delay(4, unit=0.999) == 10.0


def test_retry_after_wins_but_is_capped() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=4.0)
    assert policy.delay(0, retry_after=2.0) == 2.0
    assert policy.delay(0, retry_after=60.0) == 4.0


@pytest.mark.parametrize("bad", [{"max_retries": -1}, {"base_delay": -1.0}, {"jitter": 1.5}])
def test_nonsense_policies_are_config_errors(bad: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        RetryPolicy(**bad)  # type: ignore[arg-type]


# --- requests over HTTP ---------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_transient_statuses_are_retried_and_counted(session: HttpClient, status: int) -> None:
    script = fail_first(2, ScriptedFault(status=status), then=lambda _: text_response("ok"))
    stats = ModelStats()
    with ScriptedModelServer(script) as server:
        answer = await post(session, server.url, stats)
        assert len(server.bodies("/v1/responses")) == 3
    assert answer["output"][0]["content"][0]["text"] == "ok"
    assert (stats.requests, stats.retries, stats.failures) == (1, 2, 0)


async def test_a_spent_budget_raises_model_error_naming_url_status_and_body(
    session: HttpClient,
) -> None:
    fault = ScriptedFault(status=500, body={"error": {"message": "backend on fire"}})
    stats = ModelStats()
    with ScriptedModelServer(lambda _: fault) as server:
        with pytest.raises(ModelError) as caught:
            await post(
                session, server.url, stats, retry=RetryPolicy(max_retries=2, base_delay=0.01)
            )
        assert len(server.bodies("/v1/responses")) == 3
    error = caught.value
    assert type(error) is ModelError
    assert error.kind is FailureKind.MODEL_ERROR
    assert f"{server.url}/responses" in str(error)
    assert "HTTP 500" in str(error)
    assert "backend on fire" in str(error)
    assert (stats.requests, stats.retries, stats.failures) == (1, 2, 1)


async def test_a_numeric_retry_after_is_honoured(session: HttpClient) -> None:
    slow_down = ScriptedFault(status=429, headers={"Retry-After": "0.3"})
    script = Sequence([slow_down, text_response("ok")])
    with ScriptedModelServer(script) as server:
        started = time.monotonic()
        await post(session, server.url, ModelStats(), retry=RetryPolicy(base_delay=0.01))
        assert time.monotonic() - started >= 0.3


async def test_with_pauses_not_waited_a_huge_retry_after_is_capped_by_max_delay(
    session: HttpClient,
) -> None:
    script = Sequence(
        [ScriptedFault(status=429, headers={"Retry-After": "120"}), text_response("ok")]
    )
    stats = ModelStats()
    with ScriptedModelServer(script) as server:
        started = time.monotonic()
        await post(session, server.url, stats, retry=RetryPolicy(max_delay=0.05, pause_deadline=0))
        assert time.monotonic() - started < 5
    assert (stats.retries, stats.paused_calls) == (1, 0)


async def test_client_errors_are_not_retried(session: HttpClient) -> None:
    fault = ScriptedFault(status=422, body={"error": {"message": "bad temperature"}})
    stats = ModelStats()
    with ScriptedModelServer(lambda _: fault) as server:
        with pytest.raises(ModelHttpError) as caught:
            await post(session, server.url, stats)
        assert len(server.bodies("/v1/responses")) == 1
    assert caught.value.status == 422
    assert "HTTP 422" in str(caught.value) and "bad temperature" in str(caught.value)
    assert not isinstance(caught.value, ContextLengthExceeded)
    assert (stats.retries, stats.failures) == (0, 1)


async def test_an_answer_over_the_size_cap_is_a_model_error_without_retry() -> None:
    stats = ModelStats()
    small = HttpClient(max_answer_bytes=64)  # every scripted answer is larger than this
    try:
        with ScriptedModelServer(lambda _: text_response("a" * 500)) as server:
            with pytest.raises(ModelError) as caught:
                await post(small, server.url, stats)
            assert len(server.bodies("/v1/responses")) == 1
    finally:
        await small.aclose()
    assert "64" in str(caught.value)
    assert stats.retries == 0


@pytest.mark.parametrize("status", [401, 403])
async def test_a_rejected_key_is_an_auth_error_at_once_without_retry(
    session: HttpClient, status: int
) -> None:
    fault = ScriptedFault(status=status, body={"error": {"message": "Incorrect API key"}})
    stats = ModelStats()
    with ScriptedModelServer(lambda _: fault) as server:
        with pytest.raises(ModelAuthError) as caught:
            await post(session, server.url, stats)
        assert len(server.bodies("/v1/responses")) == 1
    message = str(caught.value)
    assert message.startswith(f"the endpoint rejected the API key ({status}): Incorrect API key")
    assert f"{server.url}/responses" in message
    assert isinstance(caught.value, ServiceUnreachable)  # the collector stops the run on it
    assert (stats.retries, stats.failures) == (0, 1)


async def test_a_long_server_message_is_left_out_of_the_auth_error(session: HttpClient) -> None:
    fault = ScriptedFault(status=401, raw_body=b"<html>" + b"x" * 2000 + b"</html>")
    with ScriptedModelServer(lambda _: fault) as server, pytest.raises(ModelAuthError) as caught:
        await post(session, server.url, ModelStats())
    assert str(caught.value).startswith("the endpoint rejected the API key (401) [POST ")
    assert "xxx" not in str(caught.value)


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "This model's maximum context length is 2048 tokens. However, you requested 3000"),
        (400, "Prompt is too long"),
        (413, "Too many tokens in the request"),
        (400, "request (5000 tokens) exceeds the available context size (4096 tokens)"),
    ],
)
async def test_context_length_errors_get_their_own_exception(
    session: HttpClient, status: int, message: str
) -> None:
    fault = ScriptedFault(status=status, body={"error": {"message": message}})
    stats = ModelStats()
    with (
        ScriptedModelServer(lambda _: fault) as server,
        pytest.raises(ContextLengthExceeded) as caught,
    ):
        await post(session, server.url, stats)
    assert stats.failures == 0  # the clients turn it into an answer
    assert caught.value.message == message  # the server's own words, not the JSON around them


@pytest.mark.parametrize("raw", [b"<html>bad gateway</html>", b"[1, 2]", b""])
async def test_a_2xx_body_that_is_not_a_json_object_is_a_model_error(
    session: HttpClient, raw: bytes
) -> None:
    with ScriptedModelServer(lambda _: ScriptedFault(status=200, raw_body=raw)) as server:
        with pytest.raises(ModelError, match="model answered invalid JSON"):
            await post(session, server.url, ModelStats())
        assert len(server.bodies("/v1/responses")) == 1


async def test_a_dropped_connection_is_retried(session: HttpClient) -> None:
    stats = ModelStats()
    script = Sequence([ScriptedFault(disconnect=True), text_response("ok")])
    with ScriptedModelServer(script) as server:
        answer = await post(session, server.url, stats)
    assert answer["output"][0]["content"][0]["text"] == "ok"
    assert stats.retries == 1


async def test_read_timeouts_are_retried_then_raise_model_timeout(
    session: HttpClient,
) -> None:
    slow = ScriptedFault(status=200, body=text_response("late"), delay=2.0)
    stats = ModelStats()
    with ScriptedModelServer(lambda _: slow) as server:
        with pytest.raises(ModelTimeout) as caught:
            await post(
                session,
                server.url,
                stats,
                retry=RetryPolicy(max_retries=1, base_delay=0.01, pause_deadline=0),
                timeouts=Timeouts(connect=2, read=0.2),
            )
        assert len(server.bodies("/v1/responses")) == 2
    assert caught.value.kind is FailureKind.TIMEOUT
    assert "timed out" in str(caught.value)
    assert stats.retries == 1


async def test_a_refused_connection_on_every_attempt_is_unreachable(
    session: HttpClient,
) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    stats = ModelStats()
    with pytest.raises(ModelUnreachable) as caught:
        await post(session, url, stats)
    assert f"{url}/responses" in str(caught.value)
    assert (stats.retries, stats.failures) == (FAST.max_retries, 1)


async def test_the_api_key_never_appears_in_errors(session: HttpClient) -> None:
    echoing = ScriptedFault(status=400, body={"error": {"message": f"Incorrect key: {SECRET}"}})
    headers = {"Authorization": f"Bearer {SECRET}"}
    with ScriptedModelServer(lambda _: echoing) as server, pytest.raises(ModelHttpError) as caught:
        await post(session, server.url, ModelStats(), headers=headers)
    assert SECRET not in str(caught.value)
    assert SECRET not in caught.value.excerpt
    assert SECRET not in caught.value.message
    assert "Incorrect key: ***" in str(caught.value)
    rejected = ScriptedFault(status=401, body={"error": {"message": f"Incorrect key: {SECRET}"}})
    with ScriptedModelServer(lambda _: rejected) as server, pytest.raises(ModelAuthError) as auth:
        await post(session, server.url, ModelStats(), headers=headers)
    assert SECRET not in str(auth.value)
    assert "Incorrect key: ***" in str(auth.value)
    with pytest.raises(ModelUnreachable) as unreachable:
        await post(session, f"http://127.0.0.1:{free_port()}/v1", ModelStats(), headers=headers)
    assert SECRET not in str(unreachable.value)


async def test_a_body_that_is_not_json_fails_before_sending(session: HttpClient) -> None:
    with ScriptedModelServer(lambda _: text_response("ok")) as server:
        with pytest.raises(ModelError, match="not JSON"):
            await post_json(
                session,
                server.url + "/responses",
                {"input": {1, 2}},
                headers={},
                timeouts=Timeouts(),
                retry=FAST,
                stats=ModelStats(),
            )
        assert server.requests == []


@pytest.mark.parametrize(
    ("answered", "said"),
    [
        (answer(b"down", status="500 Internal Server Error"), "failed after 2 attempt(s)"),
        (answer(b"no such model", status="404 Not Found"), "answered HTTP 404"),
        (answer(b"[]"), "model answered invalid JSON"),
    ],
    ids=["retried", "refused", "not-an-object"],
)
async def test_a_model_on_a_unix_socket_is_named_by_its_socket_path_in_errors(
    session: HttpClient, tmp_path: Path, answered: bytes, said: str
) -> None:
    servers = Servers()
    socket_path = tmp_path / "model.sock"
    server = await servers.start(answer_always(answered), unix=socket_path)
    try:
        with pytest.raises(ModelError) as caught:
            await post(session, server.url("/v1"), ModelStats(), retry=ONE_RETRY)
    finally:
        await server.close()
    assert f"POST unix:{socket_path}/v1/responses" in str(caught.value)
    assert said in str(caught.value)
    assert "%2F" not in str(caught.value)
