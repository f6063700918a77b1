"""A remote model that speaks the OpenAI Responses API (``POST {base_url}/responses``)."""

from __future__ import annotations

from palaestra.errors import ModelError
from palaestra.models.chat_format import incomplete_response
from palaestra.models.endpoint import RemoteEndpoint, RemoteModel
from palaestra.models.http import ContextLengthExceeded
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


class OpenAIResponsesModel(RemoteModel):
    """Any OpenAI-compatible server with a Responses endpoint (OpenAI, vLLM, palaestra serve)."""

    async def _respond(self, params: JsonDict) -> JsonDict:
        return await respond_with_responses(self.endpoint, params)
