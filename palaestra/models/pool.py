"""A pool of model endpoints: replicas of one model behind one ``Model``, sticky and load-aware.

``ModelConfig.urls`` with two or more base URLs builds a ``ModelPool`` (``build_model`` does
it): one endpoint model per URL, each built by the config's backend as a single-URL model is,
all sharing one HTTP client.

Routing. Every call of one rollout goes to the endpoint its first call went to (its prompt
prefix is cached there): ``BoundAgent.run`` opens a ``RolloutScope`` (``affinity``) that the
pool fills in. A rollout's first call, and a call outside any rollout, goes to the healthy
endpoint with the fewest requests in flight; ties go round-robin. (NeMo Gym hashes sessions to
endpoints, which ignores load; ``routing="hash"`` and ``"round_robin"`` exist only to measure
that against this, in ``benchmarks/pool.py``.)

Health. An endpoint whose calls fail ``FAILURES_TO_REMOVE`` times in a row on a connection,
a timeout, a 5xx or an answer that is no completion (not JSON, no choices, no output: a
replica that answers garbage fast would otherwise look the least loaded and take every
rollout) is taken out; a background probe (``check``, i.e. ``GET /models``, with a backoff
doubling up to ``max_retry_delay``) puts it back on probation when it answers: its next
failure takes it out again, its next success makes it whole. An answer that is a completion but
an empty one (no text, no tool call, not cut short) counts towards the same streak, for the
same reason, though it is returned as the model's answer (a model may say nothing; retrying it
elsewhere would turn that into a failure): ``empty_answer``. The pool owns the
retry budget (``max_retries``; the endpoint models are built with none of their own): a call
that fails in a way that may heal is retried at once on the least-loaded other healthy
endpoint, or after the usual backoff on the same one, and the rollout then sticks to where it
succeeded (``_palaestra.endpoints`` in its row lists each move). With every endpoint out, the
calls still try them (each one a probe) within the budget, so when all are down a call ends in
``ModelUnreachable`` as a single endpoint's does, and the collector's stop rule applies.

Counts per endpoint (calls, failures, retries, rollouts, latency, peak in flight, times taken
out) are ``endpoint_stats()``: the run summary and the aggregate file carry them.

Cost: a pooled call adds a context-variable read, the choice over the endpoints and the
counters to the model call, little next to the call itself (measured: benchmarks/results/micro.md).
"""

from __future__ import annotations

import asyncio
import itertools
import math
import random
import time
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from palaestra.errors import (
    ConfigError,
    ModelAuthError,
    ModelError,
    ModelTimeout,
    ModelUnreachable,
)
from palaestra.models.affinity import ROLLOUT_SCOPE, RolloutScope
from palaestra.models.base import Model, ModelStats
from palaestra.models.openai.retry import BAD_ANSWER, RetryPolicy
from palaestra.transport import redacted_url
from palaestra.types import JsonDict, message_text

if TYPE_CHECKING:
    from palaestra.spec import ModelConfig
    from palaestra.transport import HttpClient

Routing = Literal["sticky", "round_robin", "hash"]

FAILURES_TO_REMOVE = 3
"""Consecutive failed calls (connection, timeout, 5xx, an unusable answer) that take an
endpoint out; one more failure after a probe put it back."""

PROBE_FLOOR = 0.1
"""The shortest wait between probes of an endpoint that is out (seconds), whatever the
config's ``retry_delay`` (0 in tests): a refused connection answers at once."""

_BUCKET = math.log(1.02)
"""Latency percentiles come from buckets 2% wide: memory does not grow with the calls."""


def _health_failure(kind: str | None) -> bool:
    """Failures that say the endpoint itself is in trouble (not 429: busy is not broken)."""
    return kind in ("connect", "timeout", "disconnect", BAD_ANSWER) or (kind or "").startswith(
        "http 5"
    )


def empty_answer(answer: JsonDict) -> bool:
    """Whether ``answer`` is a completed Response that says nothing: no text (blank), no
    function call, no reasoning. A replica answering only these fast would look the least
    loaded and take nearly every rollout. An incomplete answer (cut short, or a prompt past
    the context) is not empty: the endpoint did its work."""
    if answer.get("status") == "incomplete":
        return False
    for item in answer.get("output") or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message" and message_text(item).strip():
            return False
        if kind == "reasoning" and any(
            isinstance(part, dict) and str(part.get("text", "")).strip()
            for part in [*(item.get("summary") or []), *(item.get("content") or [])]
        ):
            return False
        if kind not in ("message", "reasoning"):  # a function call, or any other act
            return False
    return True


@dataclass(eq=False, slots=True)
class Endpoint:
    """One replica of the pool: its model and its counters."""

    url: str
    """As rows, stats and messages show it: without credentials (``redacted_url``)."""
    model: Model
    healthy: bool = True
    in_flight: int = 0
    in_flight_peak: int = 0
    calls: int = 0
    failures: int = 0
    empty_answers: int = 0
    """Answered calls whose answer was empty (``empty_answer``): not failures, but unhealthy."""
    retries: int = 0
    """Calls here that retried a failed call (here or on another endpoint)."""
    rollouts: int = 0
    """Rollouts that started here, or moved here after a failure."""
    moved_in: int = 0
    removed: int = 0
    """Times taken out of the pool."""
    streak: int = 0
    last_failure: str = ""
    latency_sum: float = 0.0
    latency_count: int = 0
    buckets: dict[int, int] = field(default_factory=dict)

    def record_latency(self, seconds: float) -> None:
        self.latency_sum += seconds
        self.latency_count += 1
        bucket = round(math.log(seconds) / _BUCKET) if seconds > 0 else -1000
        self.buckets[bucket] = self.buckets.get(bucket, 0) + 1

    def percentile(self, fraction: float) -> float | None:
        if not self.latency_count:
            return None
        rank = fraction * (self.latency_count - 1)
        seen = 0
        for bucket in sorted(self.buckets):
            seen += self.buckets[bucket]
            if seen > rank:
                return 0.0 if bucket == -1000 else math.exp(bucket * _BUCKET)
        return None  # not reached: the counts add up to latency_count

    def stats(self) -> JsonDict:
        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, 6)

        count = self.latency_count
        return {
            "url": self.url,
            "healthy": self.healthy,
            "calls": self.calls,
            "failures": self.failures,
            "empty_answers": self.empty_answers,
            "retries": self.retries,
            # aborted generations its client resumed (``palaestra.models.openai.resume``)
            "resumptions": self.model.stats.resumptions,
            # requests that met a weight-update pause, and the seconds they slept in it
            "paused_calls": self.model.stats.paused_calls,
            "paused_seconds": round(self.model.stats.paused_seconds, 3),
            "rollouts": self.rollouts,
            "moved_in": self.moved_in,
            "removed": self.removed,
            "in_flight_peak": self.in_flight_peak,
            "latency_count": count,
            "latency_mean": rounded(self.latency_sum / count) if count else None,
            "latency_p50": rounded(self.percentile(0.5)),
            "latency_p99": rounded(self.percentile(0.99)),
        }


class ModelPool:
    """Several endpoints of one model as one ``Model`` (see the module docstring).

    ``config.urls`` names them; every other field of ``config`` applies to each (its
    ``max_retries`` is the pool's budget per call). ``http`` is borrowed and shared by the
    endpoints; without one the pool owns one. ``routing`` other than ``"sticky"`` is for
    comparison only (``benchmarks/pool.py``).
    """

    def __init__(
        self,
        config: ModelConfig,
        *,
        http: HttpClient | None = None,
        routing: Routing = "sticky",
    ) -> None:
        from palaestra.models.backends import build_model
        from palaestra.transport import HttpClient

        if len(config.urls) < 2:
            raise ConfigError("a model pool needs two or more urls")
        self._owns_http = http is None
        self._http = http if http is not None else HttpClient()
        # The pool spends the retry budget; an endpoint's own retries would wait on a dead one.
        self.endpoints = [
            Endpoint(redacted_url(url), build_model(_single(config, url), http=self._http))
            for url in config.urls
        ]
        self.retry = RetryPolicy(
            max_retries=config.max_retries,
            base_delay=config.retry_delay,
            max_delay=config.max_retry_delay,
        )
        self.routing: Routing = routing
        self.name: str = config.model or self.endpoints[0].model.name
        self.stats = ModelStats()
        self._turn = 0
        self._rollout_keys = itertools.count()
        self._probes: set[asyncio.Task[None]] = set()

    async def respond(self, params: JsonDict) -> JsonDict:
        self.stats.requests += 1
        scope = ROLLOUT_SCOPE.get()
        endpoint = self._sticky(scope)
        attempt = 0
        unreachable_every_time = True
        while True:
            try:
                answer = await self._call(endpoint, params, retry=attempt > 0)
            except ModelAuthError:
                self.stats.failures += 1
                raise
            except ModelError as error:
                unreachable_every_time &= isinstance(error, ModelUnreachable)
                if error.transient is None or attempt >= self.retry.max_retries:
                    self.stats.failures += 1
                    raise self._final(error, attempt, unreachable_every_time) from None
                following = self._next_after(endpoint)
                if following is endpoint or not following.healthy:
                    delay = self.retry.delay(attempt, unit=random.random())
                    await asyncio.sleep(delay)
                if (
                    following is not endpoint
                    and scope is not None
                    and self.routing != "round_robin"
                ):
                    scope.assign(self, following, following.url)
                    following.rollouts += 1
                    following.moved_in += 1
                attempt += 1
                self.stats.retries += 1
                endpoint = following
                continue
            self.name = endpoint.model.name
            return answer

    def _sticky(self, scope: RolloutScope | None) -> Endpoint:
        """The endpoint of this call: the rollout's own while it is healthy, else a new one."""
        if self.routing == "round_robin" or scope is None:
            return self._least_loaded(None) or self._any()
        chosen = scope.chosen.get(self) if scope.chosen is not None else None
        if isinstance(chosen, Endpoint) and chosen.healthy:
            return chosen
        if self.routing == "hash":
            endpoint = self._hashed(scope)
        else:
            endpoint = self._least_loaded(None) or self._any()
        scope.assign(self, endpoint, endpoint.url)
        endpoint.rollouts += 1
        if chosen is not None:
            endpoint.moved_in += 1
        return endpoint

    def _least_loaded(self, avoid: Endpoint | None) -> Endpoint | None:
        """The healthy endpoint (not ``avoid``) with the fewest calls in flight; ties go
        round-robin (``round_robin`` routing: simply the next healthy one)."""
        endpoints = self.endpoints
        count = len(endpoints)
        start = self._turn
        self._turn = (start + 1) % count
        best: Endpoint | None = None
        for offset in range(count):
            candidate = endpoints[(start + offset) % count]
            if not candidate.healthy or candidate is avoid:
                continue
            if self.routing == "round_robin":
                return candidate
            if best is None or candidate.in_flight < best.in_flight:
                best = candidate
        return best

    def _hashed(self, scope: RolloutScope) -> Endpoint:
        healthy = [endpoint for endpoint in self.endpoints if endpoint.healthy] or self.endpoints
        key = zlib.crc32(str(next(self._rollout_keys)).encode())
        return healthy[key % len(healthy)]

    def _any(self) -> Endpoint:
        """With every endpoint out, the next one in turn: the call itself probes it."""
        endpoint = self.endpoints[self._turn]
        self._turn = (self._turn + 1) % len(self.endpoints)
        return endpoint

    def _next_after(self, failed: Endpoint) -> Endpoint:
        """Where a failed call goes next: another healthy endpoint, else the same one while it
        is healthy, else any (all are out)."""
        other = self._least_loaded(failed)
        if other is not None:
            return other
        return failed if failed.healthy else self._any()

    async def _call(self, endpoint: Endpoint, params: JsonDict, *, retry: bool) -> JsonDict:
        endpoint.calls += 1
        if retry:
            endpoint.retries += 1
        endpoint.in_flight += 1
        if endpoint.in_flight > endpoint.in_flight_peak:
            endpoint.in_flight_peak = endpoint.in_flight
        started = time.perf_counter()
        try:
            answer = await endpoint.model.respond(params)
        except ModelError as error:
            endpoint.failures += 1
            endpoint.last_failure = error.reason
            if _health_failure(error.transient):
                self._unhealthy(endpoint)
            else:
                endpoint.streak = 0  # it answered: alive, whatever it said
            raise
        finally:
            endpoint.in_flight -= 1
        endpoint.record_latency(time.perf_counter() - started)
        if empty_answer(answer):  # answered, but nothing: as unhealthy as a garbage answer
            endpoint.empty_answers += 1
            endpoint.last_failure = "an empty answer (no text, no tool call)"
            self._unhealthy(endpoint)
            return answer
        endpoint.streak = 0
        if not endpoint.healthy:  # every endpoint was out and this call found one back
            endpoint.healthy = True
        return answer

    def _final(self, error: ModelError, attempt: int, unreachable: bool) -> ModelError:
        if attempt == 0:
            return error
        kind: type[ModelError]
        if unreachable:  # every attempt: ModelUnreachable, or ModelHung (the run stops on it)
            kind = type(error)
        elif error.transient == "timeout":
            kind = ModelTimeout
        else:
            kind = ModelError
        final = kind(
            f"model pool of {len(self.endpoints)} endpoints: {attempt + 1} attempt(s) "
            f"failed; last: {error.reason}"
        )
        final.transient = error.transient
        return final

    def _unhealthy(self, endpoint: Endpoint) -> None:
        """One more unhealthy answer in a row: the endpoint is taken out at the limit."""
        endpoint.streak += 1
        if endpoint.streak >= FAILURES_TO_REMOVE and endpoint.healthy:
            self._take_out(endpoint)

    def _take_out(self, endpoint: Endpoint) -> None:
        endpoint.healthy = False
        endpoint.removed += 1
        probe = asyncio.get_running_loop().create_task(self._probe(endpoint))
        self._probes.add(probe)
        probe.add_done_callback(self._probes.discard)

    async def _probe(self, endpoint: Endpoint) -> None:
        """Ask the endpoint (``check``) until it answers, waiting longer each time (the wait
        also grows with the times it was taken out, so a flapping endpoint is probed less)."""
        ceiling = max(self.retry.max_delay, PROBE_FLOOR)
        delay = min(ceiling, max(self.retry.base_delay, PROBE_FLOOR) * 2 ** (endpoint.removed - 1))
        while not endpoint.healthy:
            await asyncio.sleep(delay)
            try:
                await endpoint.model.check()
            except Exception as error:  # a probe that fails in any way is a "not yet"
                endpoint.last_failure = str(error) or type(error).__name__
                delay = min(ceiling, delay * 2)
                continue
            endpoint.streak = FAILURES_TO_REMOVE - 1  # on probation: one failure takes it out
            endpoint.healthy = True

    async def check(self) -> None:
        """Fail when no endpoint answers (``ModelUnreachable``) or one rejects the key; an
        endpoint that does not answer is taken out and probed, and the run goes on."""
        outcomes = await asyncio.gather(
            *(endpoint.model.check() for endpoint in self.endpoints), return_exceptions=True
        )
        for outcome in outcomes:
            if isinstance(outcome, ModelAuthError | ConfigError):
                raise outcome
            if isinstance(outcome, BaseException) and not isinstance(outcome, ModelError):
                raise outcome
        failed = [
            (endpoint, outcome)
            for endpoint, outcome in zip(self.endpoints, outcomes, strict=True)
            if isinstance(outcome, ModelError)
        ]
        if len(failed) == len(self.endpoints):
            reasons = "; ".join(str(outcome) for _, outcome in failed)
            raise ModelUnreachable(f"no endpoint of the model pool answers: {reasons}")
        for endpoint, outcome in failed:
            endpoint.last_failure = str(outcome)
            self._take_out(endpoint)

    def endpoint_stats(self) -> list[JsonDict]:
        """Per endpoint: url, healthy, calls, failures, retries, resumptions, paused calls and
        seconds, rollouts, moved_in, removed, in_flight_peak and latency (count, mean, p50,
        p99 in seconds, of the answered calls)."""
        return [endpoint.stats() for endpoint in self.endpoints]

    async def aclose(self) -> None:
        for probe in list(self._probes):
            probe.cancel()
        await asyncio.gather(*self._probes, return_exceptions=True)
        for endpoint in self.endpoints:
            await endpoint.model.aclose()
        if self._owns_http:
            await self._http.aclose()


def _single(config: ModelConfig, url: str) -> ModelConfig:
    """``config`` for one endpoint of the pool: its url, and no retries of its own."""
    return config.model_copy(update={"url": url, "urls": [], "max_retries": 0})
