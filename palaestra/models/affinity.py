"""Which endpoint a rollout's model calls go to: a per-rollout scope that a model pool fills in.

``BoundAgent.run`` opens a ``RolloutScope`` for the duration of one rollout (a context
variable, so it follows the rollout's task and nothing else); a ``ModelPool`` records there the
endpoint it chose on the rollout's first call and sends every later call of the rollout to it.
Agents, served agents and the training samplers get stickiness without knowing about pools; a
model that is not a pool never looks. Opening and closing a scope is cheap (an object and a
context-variable set and reset; measured: benchmarks/results/micro.md), so every rollout pays it.

A pool behind a model server (``palaestra serve model`` over several URLs) sees only requests:
palaestra's HTTP model clients name the rollout in a header (``protocol.ROLLOUT_HEADER``, the
scope's ``key``), and the server keeps a bounded map of keys to scopes (``KeyedScopes``).
"""

from __future__ import annotations

import os
import re
from contextvars import ContextVar, Token

from palaestra.models.versions import PolicyClock


class RolloutScope:
    """One rollout as the model pools see it: the endpoint each pool chose for it, and every
    endpoint its calls went to (first choice, then one entry per move after a failure).

    A context manager: ``with rollout_scope() as scope:`` makes it the running task's rollout
    for the block (a class, not ``contextlib.contextmanager``: that generator costs more per
    rollout).
    """

    __slots__ = ("_key", "_token", "_user", "chosen", "clock", "hosted", "urls", "versions")

    def __init__(self, key: str | None = None, clock: PolicyClock | None = None) -> None:
        self._key = key
        self.clock = clock
        """The policy clock of the rollouts this one belongs to (a trainer's sampler), which
        versions the requests whose answers name no version (``models.versions.served_by``)."""
        self.chosen: dict[object, object] | None = None
        """Per pool, the endpoint this rollout sticks to (the pool's own object)."""
        self.urls: list[str] | None = None
        """The endpoints the calls went to, in order; more than one means the rollout moved."""
        self.versions: list[int] | None = None
        """The policy version of each answered model request, in order (``models.versions``)."""
        self.hosted: list[str] | None = None
        """The provider-hosted tool types a closed-book route kept out of the rollout's
        requests (``palaestra.models.closed_book``), each once."""
        self._token: Token[RolloutScope | None] | None = None
        self._user: RolloutScope | None = None

    @property
    def key(self) -> str:
        """A short random id naming this rollout to a model server (made on first use: only a
        rollout whose model is reached over HTTP pays for drawing it)."""
        key = self._key
        if key is None:
            key = self._key = os.urandom(8).hex()
        return key

    def user(self) -> RolloutScope:
        """The scope of this rollout's simulated user (made once): its model calls are named
        ``<key>.user``, a session of their own. The user's conversation shares no prefix with
        the policy's (its roles are swapped), so a router gains nothing by sending both to one
        replica, and a model server shared by both must not mistake one for the other; the
        user's calls still stick together, and the id says whose rollout they belong to."""
        user = self._user
        if user is None:
            user = self._user = RolloutScope(f"{self.key[: MAX_KEY_CHARS - 5]}.user", self.clock)
        return user

    def assign(self, pool: object, endpoint: object, url: str) -> None:
        """Stick this rollout to ``endpoint`` of ``pool`` from now on."""
        if self.chosen is None:
            self.chosen = {}
        self.chosen[pool] = endpoint
        if self.urls is None:
            self.urls = [url]
        else:
            self.urls.append(url)

    def dropped_hosted(self, kinds: list[str]) -> None:
        """Record that a request of this rollout went without these hosted tool types."""
        if self.hosted is None:
            self.hosted = []
        self.hosted.extend(kind for kind in kinds if kind not in self.hosted)

    def __enter__(self) -> RolloutScope:
        self._token = ROLLOUT_SCOPE.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        ROLLOUT_SCOPE.reset(self._token)
        self._token = None


ROLLOUT_SCOPE: ContextVar[RolloutScope | None] = ContextVar("palaestra_rollout_scope", default=None)
"""The rollout the running task belongs to; None outside a rollout (calls go least-loaded).

A context variable, not an argument, because the readers sit beneath ``Model.respond(params)``
(a pool choosing an endpoint, an HTTP client naming the rollout, a closed-book route), and
``respond`` is called by agents and harnesses palaestra does not own. Agents get the scope
as an argument (``RolloutContext.scope``); whoever calls a model for a rollout sets it from
there, with ``with scope:`` (``BoundAgent.run``, the agent server, the gateway's handler)."""


MAX_KEYED_SCOPES = 65_536
"""Rollouts a model server remembers. A rollout ends without telling the model server, so the
map cannot be emptied as rollouts finish; beyond the cap the rollout least recently heard from
is forgotten (its next call, if any, goes least-loaded again). Far more than the rollouts in
flight at once, and small when full (measured: benchmarks/results/micro.md)."""

MAX_KEY_CHARS = 64
_VALID_KEY = re.compile(rf"[0-9A-Za-z_.-]{{1,{MAX_KEY_CHARS}}}")
"""A key a client may send: short (the map holds 65,536 of them) and safe to forward."""


def valid_key(key: str | None) -> str | None:
    """``key`` when it may name a rollout, else None (the call then routes least-loaded)."""
    return key if key is not None and _VALID_KEY.fullmatch(key) else None


class KeyedScopes:
    """The rollouts a model server has seen, by the key their client named them with.

    A call of rollout ``key`` runs in ``scope(key)``, so a pool serving it keeps every call of
    the rollout on one endpoint as in process. Bounded by ``cap`` (see ``MAX_KEYED_SCOPES``).
    """

    __slots__ = ("_scopes", "cap")

    def __init__(self, cap: int = MAX_KEYED_SCOPES) -> None:
        self.cap = cap
        self._scopes: dict[str, RolloutScope] = {}

    def scope(self, key: str) -> RolloutScope:
        """The scope of rollout ``key``, made on its first call; the least recently used one
        is forgotten beyond the cap."""
        scopes = self._scopes
        scope = scopes.pop(key, None)  # re-inserted below: the dict's order is recency
        if scope is None:
            scope = RolloutScope(key)
            if len(scopes) >= self.cap:
                del scopes[next(iter(scopes))]
        scopes[key] = scope
        return scope

    def __len__(self) -> int:
        return len(self._scopes)


def rollout_scope() -> RolloutScope:
    """Treat every model call inside ``with rollout_scope():`` as one rollout's
    (``BoundAgent.run`` does this; a caller that drives ``agent.run`` itself may too)."""
    return RolloutScope()
