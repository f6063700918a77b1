"""The HTTP machinery of remote models: JSON requests with timeouts and a bounded retry budget.

Every request has a finite timeout; transient failures (429, 5xx, dropped connections, read
timeouts) are retried with exponential backoff and jitter, and every retry is counted. When the
budget is spent the caller gets a ``ModelError`` that names the URL and what the server said.
A rejected key (401/403) is never retried: it raises ``ModelAuthError``, which stops the run.
An endpoint paused for a weight update is waited for without spending the budget, up to the
call's pause deadline (``palaestra.models.openai.pauses``).
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass

import orjson

from palaestra.errors import (
    ConfigError,
    ModelAuthError,
    ModelError,
    ModelTimeout,
    ModelUnreachable,
)
from palaestra.models.base import ModelStats
from palaestra.models.openai.pauses import SHORTEST_WAIT, PausedCall, pause_of
from palaestra.models.openai.pauses import retry_after as seconds_after
from palaestra.transport import (
    AnswerTooLarge,
    ConnectFailed,
    FramedHeaders,
    HttpClient,
    InvalidUrl,
    TlsFailed,
    TransportError,
    shown_url,
)
from palaestra.types import JsonDict

_RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_CONTEXT_LENGTH = re.compile(
    r"context.length|maximum context|context size|context window|too many tokens"
    r"|prompt is too long",
    re.IGNORECASE,
)
AUTH_STATUSES = frozenset({401, 403})
BAD_ANSWER = "bad answer"
"""``ModelError.transient`` of a 2xx answer that is no usable completion (not JSON, no
choices, no output): the server is there but broken, and another replica may answer."""
_EXCERPT_CHARS = 300
_SHORT_MESSAGE_CHARS = 200  # a longer server message would bury "rejected the API key"


class ModelHttpError(ModelError):
    """The model endpoint answered with an HTTP error status.

    ``excerpt`` is the start of the body as sent; ``message`` is the server's own error message
    read from it (``error.message``, ``message`` or ``detail``), else the excerpt.
    """

    def __init__(self, reason: str, *, status: int, excerpt: str, message: str = "") -> None:
        super().__init__(reason)
        self.status = status
        self.excerpt = excerpt
        self.message = message or excerpt


class ContextLengthExceeded(ModelHttpError):
    """The prompt does not fit the model's context; clients answer an incomplete Response."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times to retry a transient failure, and how long to wait in between.

    The wait doubles from ``base_delay`` up to ``max_delay``; ``jitter`` is the fraction by
    which it is randomly stretched or shrunk, so that many clients do not retry in lockstep.
    ``pause_deadline`` is the seconds a call may spend paused (``pauses``: such waits are
    no retries), asking again every ``pause_poll`` seconds when the server gives no
    ``Retry-After``; 0 retries pause answers as any other.
    """

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.5
    pause_deadline: float = 600.0
    pause_poll: float = 1.0

    def __post_init__(self) -> None:
        if min(self.max_retries, self.base_delay, self.max_delay, self.pause_deadline) < 0:
            raise ConfigError(f"retry policy values must not be negative: {self}")
        if self.pause_poll < SHORTEST_WAIT:
            raise ConfigError(f"pause_poll must be at least {SHORTEST_WAIT} s: {self}")
        if not 0 <= self.jitter <= 1:
            raise ConfigError(f"retry jitter must be between 0 and 1, not {self.jitter}")

    def delay(self, attempt: int, retry_after: float | None = None, *, unit: float = 0.5) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (0-based).

        ``unit`` is a uniform random number in [0, 1); 0.5 means no jitter. A server's
        ``Retry-After`` wins over the backoff, but never beyond ``max_delay``.
        """
        if retry_after is not None:
            return min(retry_after, self.max_delay)
        backoff = min(self.max_delay, self.base_delay * 2.0**attempt)
        stretched = backoff * (1.0 + self.jitter * (2.0 * unit - 1.0))
        return min(self.max_delay, max(0.0, stretched))

    def pause_wait(self, retry_after: float, *, unit: float = 0.5) -> float:
        """Seconds a paused call sleeps: the server's ``Retry-After``, else (0) ``pause_poll``
        stretched by the jitter; never less than ``SHORTEST_WAIT``."""
        if retry_after <= 0:
            retry_after = self.pause_poll * (1.0 + self.jitter * (2.0 * unit - 1.0))
        return max(SHORTEST_WAIT, retry_after)


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds allowed to connect, and to wait for the answer (a whole generation) once sent.

    A model call waits ``read`` plus what is left of its pause deadline
    (``RetryPolicy.pause_deadline``): a request an engine holds while paused is an answer
    slow to come (``pauses``).
    """

    connect: float = 10.0
    read: float = 600.0


def _secrets(headers: Mapping[str, str]) -> list[str]:
    """The credential values in ``headers``, to scrub from every message we build."""
    found = []
    for name, value in headers.items():
        if name.lower() in ("authorization", "api-key", "x-api-key"):
            found.append(value)
            found.append(value.removeprefix("Bearer ").strip())
    return [secret for secret in found if secret]


def _scrub(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def scrub_exception(exc: ModelError, headers: Mapping[str, str]) -> None:
    """Remove the credentials in ``headers`` from an error in place (a server may echo the key
    it was sent)."""
    secrets = _secrets(headers)
    if not secrets:
        return
    exc.reason = _scrub(exc.reason, secrets)
    exc.args = (exc.reason,)
    if isinstance(exc, ModelHttpError):
        exc.excerpt = _scrub(exc.excerpt, secrets)
        exc.message = _scrub(exc.message, secrets)


def _excerpt(raw: bytes) -> str:
    text = " ".join(raw.decode("utf-8", errors="replace").split())
    return text if len(text) <= _EXCERPT_CHARS else text[:_EXCERPT_CHARS] + "..."


def server_message(raw: bytes) -> str:
    """The error message in an OpenAI-style error body (``{"error": {"message": ...}}``, vLLM's
    ``{"message": ...}``, FastAPI's ``{"detail": ...}``), else an excerpt of the body."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        body = None
    if isinstance(body, dict):
        error = body.get("error")
        for found in (
            error.get("message") if isinstance(error, dict) else error,
            body.get("message"),
            body.get("detail"),
        ):
            if isinstance(found, str) and found.strip():
                return _excerpt(found.encode())
    return _excerpt(raw)


def auth_error(where: str, status: int, raw: bytes) -> ModelAuthError:
    """The run-stopping error for a 401/403, with the server's message when it is short."""
    message = server_message(raw)
    said = f": {message}" if message and len(message) <= _SHORT_MESSAGE_CHARS else ""
    return ModelAuthError(f"the endpoint rejected the API key ({status}){said} [{where}]")


def _status_error(where: str, status: int, raw: bytes) -> ModelError:
    if status in AUTH_STATUSES:
        return auth_error(where, status, raw)
    excerpt = _excerpt(raw)
    if status in (400, 413) and _CONTEXT_LENGTH.search(excerpt):
        return ContextLengthExceeded(
            f"{where}: context length exceeded (HTTP {status}): {excerpt}",
            status=status,
            excerpt=excerpt,
            message=server_message(raw),
        )
    return ModelHttpError(
        f"{where} answered HTTP {status}: {excerpt}", status=status, excerpt=excerpt
    )


def bad_answer(reason: str) -> ModelError:
    """The failure of a call answered 2xx with something that is no completion: a model pool
    takes such an endpoint out as it does one that does not answer (``BAD_ANSWER``)."""
    error = ModelError(reason)
    error.transient = BAD_ANSWER
    return error


def _parse_object(method: str, url: str, status: int, raw: bytes) -> JsonDict:
    try:
        answer = orjson.loads(raw)
    except orjson.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        where = _where(method, url)
        raise bad_answer(f"model answered invalid JSON ({where}, HTTP {status}): {_excerpt(raw)}")
    return answer


def _where(method: str, url: str) -> str:
    """The request as a message names it. Built only when a message is: not per request."""
    return f"{method} {shown_url(url)}"


async def _attempts(
    http: HttpClient,
    method: str,
    url: str,
    data: bytes | None,
    *,
    headers: Mapping[str, str] | FramedHeaders,
    timeouts: Timeouts,
    retry: RetryPolicy,
    stats: ModelStats,
) -> JsonDict:
    unreachable_every_time = True
    last_failure = ""
    last_error: type[ModelError] = ModelError
    last_kind = ""
    paused: PausedCall | None = None
    attempt = 0
    while True:
        wait_after: float | None = None
        held = retry.pause_deadline if paused is None else max(0.0, paused.left())
        try:
            answer = await http.request(
                method,
                url,
                body=data,
                headers=headers,
                connect_timeout=timeouts.connect,
                read_timeout=timeouts.read + held,
                idempotent=True,  # a model call may run twice: resent once on a dead connection
            )
        except InvalidUrl as exc:
            raise ModelUnreachable(f"{_where(method, url)}: invalid URL ({exc})") from None
        except TlsFailed as exc:  # a bad certificate does not heal on retry
            raise ModelError(f"{_where(method, url)}: TLS error: {exc}") from None
        except AnswerTooLarge as exc:  # the same request would be answered as large again
            raise ModelError(f"{_where(method, url)}: {exc}") from None
        except ConnectFailed as exc:  # refused, DNS failure, no route: nothing was sent
            last_failure, last_error, last_kind = str(exc), ModelUnreachable, "connect"
        except TimeoutError:
            unreachable_every_time = False
            last_failure, last_error, last_kind = "timed out", ModelTimeout, "timeout"
        except (TransportError, OSError) as exc:  # disconnects, resets, broken answers
            unreachable_every_time = False
            detail = str(exc) or type(exc).__name__
            last_failure, last_error = f"connection failed: {detail}", ModelError
            last_kind = "disconnect"
        else:
            status, raw = answer.status, answer.body
            if 200 <= status < 300:
                return _parse_object(method, url, status, raw)
            # A rejected key stays one, whatever else the answer says.
            pausing = retry.pause_deadline > 0 and status not in AUTH_STATUSES
            pause = pause_of(answer) if pausing else None
            if pause is not None:  # a wait, not a retry: no attempt spent
                if paused is None:
                    paused = PausedCall(retry.pause_deadline)
                    stats.paused_calls += 1
                left = paused.left()
                if left <= 0:
                    raise paused.expired(_where(method, url), status)
                slept = min(left, retry.pause_wait(pause, unit=random.random()))
                started = time.monotonic()
                await asyncio.sleep(slept)
                stats.paused_seconds += time.monotonic() - started
                continue
            if status not in _RETRYABLE_STATUSES:
                raise _status_error(_where(method, url), status, raw)
            wait_after = seconds_after(answer.header("retry-after"))
            unreachable_every_time = False
            last_failure, last_error = f"HTTP {status}: {_excerpt(raw)}", ModelError
            last_kind = f"http {status}"
        if attempt >= retry.max_retries:
            break
        stats.retries += 1
        await asyncio.sleep(retry.delay(attempt, wait_after, unit=random.random()))
        attempt += 1
    if last_error is ModelUnreachable and not unreachable_every_time:
        last_error = ModelError
    attempts = retry.max_retries + 1
    where = _where(method, url)
    error = last_error(f"{where} failed after {attempts} attempt(s); last: {last_failure}")
    error.transient = last_kind
    raise error


async def request_json(
    http: HttpClient,
    method: str,
    url: str,
    body: JsonDict | None = None,
    *,
    headers: Mapping[str, str] | FramedHeaders,
    timeouts: Timeouts,
    retry: RetryPolicy,
    stats: ModelStats,
) -> JsonDict:
    """Send one JSON request with the retry budget and return the JSON object answered.

    Counts the request in ``stats.requests``, each retry in ``stats.retries`` and a final
    failure in ``stats.failures`` (a context-length error is an answer, not a failure).
    Framed ``headers`` are sent as they are: they must hold the Content-Type.
    """
    try:
        data = orjson.dumps(body) if body is not None else None
    except orjson.JSONEncodeError as exc:
        raise ModelError(f"{_where(method, url)}: the request body is not JSON: {exc}") from None
    send_headers: Mapping[str, str] | FramedHeaders
    if isinstance(headers, FramedHeaders):
        send_headers, headers = headers, headers.items
    elif data:
        send_headers = {**headers, "Content-Type": "application/json"}
    else:
        send_headers = dict(headers)
    stats.requests += 1
    try:
        return await _attempts(
            http,
            method,
            url,
            data,
            headers=send_headers,
            timeouts=timeouts,
            retry=retry,
            stats=stats,
        )
    except ModelError as exc:
        if not isinstance(exc, ContextLengthExceeded):
            stats.failures += 1
        scrub_exception(exc, headers)
        raise


async def post_json(
    http: HttpClient,
    url: str,
    body: JsonDict,
    *,
    headers: Mapping[str, str] | FramedHeaders,
    timeouts: Timeouts,
    retry: RetryPolicy,
    stats: ModelStats,
) -> JsonDict:
    """POST ``body`` as JSON; see ``request_json``."""
    return await request_json(
        http, "POST", url, body, headers=headers, timeouts=timeouts, retry=retry, stats=stats
    )
