"""A remote model that finds out on its first call whether the server speaks Responses or chat.

vLLM, SGLang and OpenAI serve ``/responses``; llama.cpp and many proxies serve only
``/chat/completions``. The first call tries Responses; a "no such route" answer switches this
model to Chat Completions for good, a working answer keeps it on Responses, and a transient
failure decides nothing (the next call tries again).
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Literal

from palaestra.models.openai.chat import respond_with_chat
from palaestra.models.openai.endpoint import RemoteModel
from palaestra.models.openai.responses import respond_with_responses
from palaestra.models.openai.retry import ModelHttpError
from palaestra.transport import HttpClient
from palaestra.types import JsonDict

if TYPE_CHECKING:
    from palaestra.spec import ModelConfig

_NO_ROUTE_STATUSES = frozenset({404, 405, 501})
# A 404 about the *model* (OpenAI, vLLM: "The model `x` does not exist") is not a missing route.
_MISSING_MODEL = re.compile(r"model\b.*\b(does not exist|not found)", re.IGNORECASE)
_UNKNOWN_ROUTE = re.compile(
    r"unknown (route|endpoint|path|url)|no such (route|endpoint)|invalid url"
    r"|unrecognized request url",
    re.IGNORECASE,
)


def says_no_such_route(error: ModelHttpError) -> bool:
    """Whether an HTTP error means the server has no Responses endpoint at all."""
    if error.status in _NO_ROUTE_STATUSES:
        return not _MISSING_MODEL.search(error.excerpt)
    return error.status == 400 and bool(_UNKNOWN_ROUTE.search(error.excerpt))


class AutoApiModel(RemoteModel):
    """An OpenAI-compatible server whose API (Responses or Chat Completions) is detected."""

    def __init__(self, config: ModelConfig | str, *, http: HttpClient | None = None) -> None:
        super().__init__(config, http=http)
        # Token ids come back over Chat Completions only: capture decides the API at once.
        self.api: Literal["responses", "chat"] | None = "chat" if self.tokens.capture else None
        # Set once the run's first call (the probe) has finished, whatever its outcome.
        self._probed: asyncio.Event | None = None

    async def _respond(self, params: JsonDict) -> JsonDict:
        api = self.api
        if api == "responses":
            return await respond_with_responses(self.endpoint, params)
        if api == "chat":
            return await respond_with_chat(
                self.endpoint,
                params,
                keep_token_ids=self.keep_token_ids,
                capture=self.tokens.capture,
            )
        return await self._undecided(params)

    async def _undecided(self, params: JsonDict) -> JsonDict:
        """A call made before the API is known.

        The run's first call probes (with its retry budget) while the calls that arrive
        meanwhile wait for its outcome. A probe that fails for another reason than a missing
        route (a 500ing or overloaded server) decides nothing; the waiting calls then go on at
        full concurrency, each detecting on its own request. (Waiting behind a lock instead
        made every rollout probe in turn: 16 tasks against a 500ing server took 23.7 s, not
        2.2 s.)
        """
        probed = self._probed
        if probed is None:
            self._probed = probed = asyncio.Event()
            try:
                return await self._detect(params)
            finally:
                probed.set()
        await probed.wait()
        if self.api is not None:
            return await self._respond(params)
        return await self._detect(params)

    async def _detect(self, params: JsonDict) -> JsonDict:
        try:
            answer = await respond_with_responses(self.endpoint, params)
        except ModelHttpError as error:
            if not says_no_such_route(error):
                raise
            self.stats.failures -= 1  # the probe found the API; it did not fail a rollout
            self.api = "chat"
            return await respond_with_chat(
                self.endpoint, params, keep_token_ids=self.keep_token_ids
            )
        self.api = "responses"
        return answer
