"""One OpenAI-compatible base URL, as the remote model clients share it.

The Responses client, the Chat Completions client and the auto-detecting client differ only in
the route they post to and the conversion around it; the HTTP client, the credentials, the retry
policy, the counters and the model-name lookup live here once, read from one ``ModelConfig``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from palaestra.errors import ConfigError, ModelError, ModelHung, ModelUnreachable
from palaestra.models.affinity import ROLLOUT_SCOPE
from palaestra.models.backends import backend_options, read_api_key
from palaestra.models.base import ModelStats
from palaestra.models.openai.retry import (
    AUTH_STATUSES,
    RetryPolicy,
    Timeouts,
    auth_error,
    post_json,
    request_json,
    scrub_exception,
)
from palaestra.models.tokens import TokenOptions
from palaestra.models.versions import served_by
from palaestra.transport import (
    FramedHeaders,
    HttpClient,
    TransportError,
    has_credentials,
    shown_url,
)
from palaestra.types import JsonDict
from palaestra.wire.protocol import ROLLOUT_HEADER, SESSION_ID_HEADER

if TYPE_CHECKING:
    from palaestra.spec import ModelConfig

TIMEOUTS_TO_STOP = 3
"""Model calls that time out (each after its retries) in a row, with no answer of any kind in
between, after which the endpoint counts as hung: its calls then raise ``ModelHung`` and a run
stops, resumable. The same count as a run's stop on an unreachable model; one slow call among
answered ones never reaches it."""
ROLLOUTS_KEPT = 1024
"""Rollouts whose framed headers (~0.5 KB each) an endpoint keeps between their calls; beyond
that all are forgotten at once, and a forgotten rollout's next call frames them again."""


class RemoteEndpoint:
    """A base URL such as ``http://host:8000/v1`` with its HTTP client, auth header and counters.

    Everything comes from one ``ModelConfig``: ``url``, ``model``, the key (``api_key`` or the
    variable ``api_key_env``, read here), ``max_retries`` with ``retry_delay`` and
    ``max_retry_delay``, ``pause_deadline``, ``connect_timeout`` and ``request_timeout``. An
    ``http`` client passed
    in is borrowed and never closed here (several endpoints may share one); otherwise the
    endpoint owns one and closes it in ``aclose``.
    """

    def __init__(self, config: ModelConfig, *, http: HttpClient | None = None) -> None:
        if not config.url:
            raise ConfigError(
                f"model backend '{config.backend}' needs a url (an http(s) base URL such as "
                "http://localhost:8000/v1)"
            )
        if has_credentials(config.url):
            raise ConfigError(
                f"model url {shown_url(config.url)}: credentials in a URL are not sent (nor "
                "shown); give the key with api_key_env (or api_key)"
            )
        self.base_url = config.url.rstrip("/")
        self.model = config.model
        self.timeouts = Timeouts(connect=config.connect_timeout, read=config.request_timeout)
        self.retry = RetryPolicy(
            max_retries=config.max_retries,
            base_delay=config.retry_delay,
            max_delay=config.max_retry_delay,
            pause_deadline=config.pause_deadline,
        )
        self.stats = ModelStats()
        api_key = read_api_key(config)
        # The key lives only in this header map, which is never logged or put in a message.
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._framed: FramedHeaders | None = None
        self._by_rollout: dict[str, FramedHeaders] = {}
        """The framed headers of the rollouts that called lately, by key (``_rollout_headers``)."""
        self._http = http
        self._owns_http = http is None
        self._lookup: asyncio.Future[str] | None = None
        self.timeouts_in_a_row = 0
        """Model calls timed out since the last one answered (``TIMEOUTS_TO_STOP``)."""

    def url(self, route: str) -> str:
        return f"{self.base_url}/{route.lstrip('/')}"

    def shown(self, route: str) -> str:
        """The URL of ``route`` as a message names it (a Unix socket as ``unix:<path>``)."""
        return shown_url(self.url(route))

    def http(self) -> HttpClient:
        # No connection cap: the collector bounds concurrency, and a cap here would only
        # queue requests behind an invisible second limit.
        if self._http is None:
            self._http = HttpClient()
        return self._http

    async def post(self, route: str, body: JsonDict) -> JsonDict:
        """A model call; inside a rollout it names the rollout (``ROLLOUT_HEADER`` and
        ``SESSION_ID_HEADER``, one value), so a model server over a pool, or a router in front
        of inference replicas, keeps the rollout's calls on one endpoint."""
        scope = ROLLOUT_SCOPE.get()
        try:
            answer = await post_json(
                self.http(),
                self.url(route),
                body,
                headers=self._headers if scope is None else self._rollout_headers(scope.key),
                timeouts=self.timeouts,
                retry=self.retry,
                stats=self.stats,
            )
        except ModelError as error:
            if error.transient != "timeout":
                self.timeouts_in_a_row = 0  # an answer, or a failure another rule counts
                raise
            self.timeouts_in_a_row += 1
            if self.timeouts_in_a_row < TIMEOUTS_TO_STOP:
                raise
            hung = ModelHung(
                f"model timed out {self.timeouts_in_a_row} times in a row: "
                f"{shown_url(self.base_url)} (each call after {self.retry.max_retries + 1} "
                f"attempt(s) of {self.timeouts.read + self.retry.pause_deadline:g} s, "
                "request_timeout plus pause_deadline; raise request_timeout if its answers are "
                "just slow)"
            )
            hung.transient = error.transient  # a pool moves the call, as for any timeout
            raise hung from None
        self.timeouts_in_a_row = 0
        if scope is not None:
            version = served_by(answer, scope.clock)
            if version is not None:
                if scope.versions is None:
                    scope.versions = [version]
                else:
                    scope.versions.append(version)
        return answer

    def _rollout_headers(self, key: str) -> FramedHeaders:
        """The endpoint's headers, framed once, and the rollout's (``key`` is a valid key:
        ``affinity.valid_key``), framed on the rollout's first call and kept for its next
        ones; a per-rollout header in a plain map would miss the HTTP client's cache of
        request heads on every rollout. At most ``ROLLOUTS_KEPT`` rollouts are kept (all of
        them forgotten at once beyond that: a forgotten rollout's headers are framed again)."""
        kept = self._by_rollout
        framed = kept.get(key)
        if framed is not None:
            return framed
        framed = self._framed
        if framed is None:  # framed on first use: a bad header fails the call, as it did
            framed = self._framed = FramedHeaders(
                {**self._headers, "Content-Type": "application/json"}
            )
        framed = framed.adding(ROLLOUT_HEADER, key).adding(SESSION_ID_HEADER, key)
        if len(kept) >= ROLLOUTS_KEPT:
            kept.clear()
        kept[key] = framed
        return framed

    async def post_to(self, url: str, body: JsonDict) -> JsonDict:
        """POST to a URL outside the base (vLLM's ``/tokenize`` lives at the server root), with
        the same key, timeouts and retries; it is not a model call, so it is not counted."""
        return await post_json(
            self.http(),
            url,
            body,
            headers=self._headers,
            timeouts=self.timeouts,
            retry=self.retry,
            stats=ModelStats(),
        )

    async def model_name(self) -> str:
        """The configured model, or the first one the server lists (looked up once).

        Concurrent first calls share one lookup and its outcome; a failed lookup is not kept,
        so the next call looks again. (A lock here made every rollout retry the lookup in
        turn while the server failed: one retry budget each, one at a time.)
        """
        if self.model is not None:
            return self.model
        lookup = self._lookup
        if lookup is None:
            lookup = self._lookup = asyncio.ensure_future(self._first_listed_model())
            lookup.add_done_callback(self._lookup_done)
        return await asyncio.shield(lookup)

    def _lookup_done(self, lookup: asyncio.Future[str]) -> None:
        # Runs before the waiters resume (it was added first), so they see the name set.
        self._lookup = None
        if not lookup.cancelled() and lookup.exception() is None:
            self.model = lookup.result()

    async def _first_listed_model(self) -> str:
        url = self.url("models")
        # A lookup is not a model call: it is kept out of the run's request counters.
        listing = await request_json(
            self.http(),
            "GET",
            url,
            headers=self._headers,
            timeouts=self.timeouts,
            retry=self.retry,
            stats=ModelStats(),
        )
        data = listing.get("data")
        first = data[0] if isinstance(data, list) and data else None
        model_id = first.get("id") if isinstance(first, dict) else None
        if isinstance(model_id, str) and model_id:
            return model_id
        raise ModelError(f"GET {shown_url(url)} lists no model; name the model explicitly")

    async def check(self) -> None:
        """Any HTTP answer from ``GET /models`` proves the server is there, except a 401/403:
        a rejected key fails every request, so it raises ``ModelAuthError`` now."""
        url = self.url("models")
        wait = self.timeouts.connect
        try:
            answer = await self.http().request(
                "GET", url, headers=self._headers, connect_timeout=wait, read_timeout=wait
            )
        except (TransportError, OSError, TimeoutError) as exc:
            detail = str(exc) or type(exc).__name__
            raise ModelUnreachable(
                f"cannot reach the model at {shown_url(url)}: {detail}"
            ) from None
        if answer.status in AUTH_STATUSES:
            error = auth_error(f"GET {shown_url(url)}", answer.status, answer.body)
            scrub_exception(error, self._headers)
            raise error

    async def aclose(self) -> None:
        if self._owns_http and self._http is not None:
            await self._http.aclose()
            self._http = None


class RemoteModel:
    """What the remote model clients share: an endpoint, a name, counters, check and close.

    Built from a ``ModelConfig`` (``Client(config, http=...)`` is a model backend), or from a
    bare base URL with every other setting at its default: ``Client("http://host:8000/v1")``.
    ``config.options`` may hold ``OPTIONS``: ``keep_token_ids`` sends the training fields of
    earlier turns back on assistant messages over Chat Completions, which NeMo RL's vLLM server
    uses to avoid re-tokenising the history; ``return_tokens`` asks the server for every call's
    token ids and log-probs (Chat Completions only: ``palaestra.models.tokens``);
    ``token_mode`` sends token ids instead of messages (``palaestra.models.openai.token_client``),
    parsing tool calls in ``tool_format`` (``hermes``) and rendering turns through the server's
    ``/tokenize`` (or ``tokenize_url``).

    A subclass says how one request is made (``_respond``); the model name the server reports
    becomes ``name`` after the first answer.
    """

    OPTIONS: ClassVar[Mapping[str, tuple[type, ...]]] = {
        "keep_token_ids": (bool,),
        "return_tokens": (bool,),
        "token_mode": (bool,),
        "tool_format": (str,),
        "tokenize_url": (str,),
    }
    """The ``config.options`` this client accepts, with their types."""

    def __init__(self, config: ModelConfig | str, *, http: HttpClient | None = None) -> None:
        if isinstance(config, str):
            from palaestra.spec import ModelConfig  # pydantic: only for the URL shorthand

            config = ModelConfig(url=config)
        options = backend_options(config, self.OPTIONS)
        self.config = config
        self.keep_token_ids: bool = options.get("keep_token_ids", False)
        self.tokens = TokenOptions.of(options)
        self.endpoint = RemoteEndpoint(config, http=http)
        # A name only shown (run summaries, a model server's id): nothing compares it with a
        # URL, so a Unix socket is named as readers read it, not percent-encoded.
        self.name: str = config.model or shown_url(self.endpoint.base_url)
        self.stats: ModelStats = self.endpoint.stats

    async def respond(self, params: JsonDict) -> JsonDict:
        answer = await self._respond(params)
        self.name = self.endpoint.model or self.name
        return answer

    async def _respond(self, params: JsonDict) -> JsonDict:
        raise NotImplementedError

    async def check(self) -> None:
        await self.endpoint.check()

    async def aclose(self) -> None:
        await self.endpoint.aclose()
