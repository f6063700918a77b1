"""A remote model that speaks the OpenAI Responses API (``POST {base_url}/responses``)."""

from __future__ import annotations

import aiohttp

from palaestra.errors import ModelError
from palaestra.models.base import ModelStats
from palaestra.models.chat_format import incomplete_response
from palaestra.models.endpoint import RemoteEndpoint
from palaestra.models.http import ContextLengthExceeded, RetryPolicy, Timeouts
from palaestra.types import JsonDict


async def respond_with_responses(endpoint: RemoteEndpoint, params: JsonDict) -> JsonDict:
    """One Responses call on ``endpoint``; a context-length error becomes an incomplete Response."""
    if params.get("stream"):
        raise ModelError("streaming is not supported: remove 'stream' from the request params")
    model = params.get("model") or await endpoint.model_name()
    body = params if params.get("model") else {**params, "model": model}
    try:
        answer = await endpoint.post("responses", body)
    except ContextLengthExceeded:
        return incomplete_response(params, model=model)
    if not isinstance(answer.get("output"), list):
        endpoint.stats.failures += 1
        raise ModelError(
            f"POST {endpoint.url('responses')} answered a JSON object without an 'output' list"
        )
    return answer


class OpenAIResponsesModel:
    """Any OpenAI-compatible server with a Responses endpoint (OpenAI, vLLM, palaestra serve)."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        session: aiohttp.ClientSession | None = None,
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.endpoint = RemoteEndpoint(
            base_url, model=model, api_key=api_key, session=session, timeouts=timeouts, retry=retry
        )
        self.name: str = model or self.endpoint.base_url
        self.stats: ModelStats = self.endpoint.stats

    async def respond(self, params: JsonDict) -> JsonDict:
        answer = await respond_with_responses(self.endpoint, params)
        self.name = self.endpoint.model or self.name
        return answer

    async def check(self) -> None:
        await self.endpoint.check()

    async def aclose(self) -> None:
        await self.endpoint.aclose()
