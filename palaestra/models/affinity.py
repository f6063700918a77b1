"""Which endpoint a rollout's model calls go to: a per-rollout scope that a model pool fills in.

``BoundAgent.run`` opens a ``RolloutScope`` for the duration of one rollout (a context
variable, so it follows the rollout's task and nothing else); a ``ModelPool`` records there the
endpoint it chose on the rollout's first call and sends every later call of the rollout to it.
Agents, served agents and the training samplers get stickiness without knowing about pools; a
model that is not a pool never looks. Opening and closing a scope costs about 0.5 µs (an object
and a context-variable set and reset, measured on this machine), so every rollout pays it.
"""

from __future__ import annotations

from contextvars import ContextVar, Token


class RolloutScope:
    """One rollout as the model pools see it: the endpoint each pool chose for it, and every
    endpoint its calls went to (first choice, then one entry per move after a failure).

    A context manager: ``with rollout_scope() as scope:`` makes it the running task's rollout
    for the block (a class, not ``contextlib.contextmanager``: that generator costs ~1 µs more
    per rollout).
    """

    __slots__ = ("_token", "chosen", "urls")

    def __init__(self) -> None:
        self.chosen: dict[object, object] | None = None
        """Per pool, the endpoint this rollout sticks to (the pool's own object)."""
        self.urls: list[str] | None = None
        """The endpoints the calls went to, in order; more than one means the rollout moved."""
        self._token: Token[RolloutScope | None] | None = None

    def assign(self, pool: object, endpoint: object, url: str) -> None:
        """Stick this rollout to ``endpoint`` of ``pool`` from now on."""
        if self.chosen is None:
            self.chosen = {}
        self.chosen[pool] = endpoint
        if self.urls is None:
            self.urls = [url]
        else:
            self.urls.append(url)

    def __enter__(self) -> RolloutScope:
        self._token = ROLLOUT_SCOPE.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        ROLLOUT_SCOPE.reset(self._token)
        self._token = None


ROLLOUT_SCOPE: ContextVar[RolloutScope | None] = ContextVar("palaestra_rollout_scope", default=None)
"""The rollout the running task belongs to; None outside a rollout (calls go least-loaded)."""


def rollout_scope() -> RolloutScope:
    """Treat every model call inside ``with rollout_scope():`` as one rollout's
    (``BoundAgent.run`` does this; a caller that drives ``agent.run`` itself may too)."""
    return RolloutScope()
