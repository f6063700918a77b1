"""The one interface every model satisfies: Responses create params in, a Response out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from palaestra.types import JsonDict

if TYPE_CHECKING:
    from palaestra.spec import ModelConfig
    from palaestra.transport import HttpClient


@dataclass(slots=True)
class ModelStats:
    """Counters a model keeps for the run summary: requests sent, retries spent, failures,
    aborted generations resumed (``palaestra.models.openai.resume``), and the calls that met
    an endpoint paused for a weight update with the seconds they slept in such pauses
    (``palaestra.models.openai.pauses``: waits, never retries)."""

    requests: int = 0
    retries: int = 0
    failures: int = 0
    resumptions: int = 0
    paused_calls: int = 0
    paused_seconds: float = 0.0
    cpu_seconds: float = 0.0
    """CPU time spent on threads of the model's own in this process (the embedded model's
    llama.cpp thread); 0 for a model whose work is done elsewhere. ``palaestra test`` takes
    it out of the framework's CPU."""


@runtime_checkable
class Model(Protocol):
    """Anything that answers an OpenAI Responses request.

    ``respond`` takes Responses create params (``input``, ``tools``, sampling, ...) and returns
    an OpenAI ``Response`` as a dict. It raises ``palaestra.errors.ModelError`` (or a subclass)
    once its retry budget is spent, and for an answer with no output or a failed status; a
    rejected key (401/403) raises ``ModelAuthError`` at once. A context-length error is not
    raised but answered as an empty response with ``status: "incomplete"`` and
    ``incomplete_details: {reason: null, code: "context_length_exceeded", message: <the
    backend's message>}``, so the agent stops cleanly and the row can be told apart.
    """

    name: str
    stats: ModelStats

    async def respond(self, params: JsonDict) -> JsonDict: ...

    async def check(self) -> None:
        """Fail fast with ``ModelUnreachable`` when the model cannot be reached at all, or
        ``ModelAuthError`` when it rejects the key."""
        ...

    async def aclose(self) -> None: ...


class ModelBackend(Protocol):
    """What a model backend is: a callable that builds a ``Model`` from one ``ModelConfig``.

    A class whose constructor takes ``(config, *, http=None)`` is one. ``http`` is an HTTP
    client the caller lends (share it, never close it); a backend that makes no HTTP requests
    ignores it. Raise ``ConfigError`` with one line for a config the backend cannot use.
    Called once per run, never per request.
    """

    def __call__(self, config: ModelConfig, *, http: HttpClient | None = None) -> Model: ...
