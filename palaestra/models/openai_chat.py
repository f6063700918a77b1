"""A remote model that speaks only Chat Completions (``POST {base_url}/chat/completions``).

Most open-model servers (vLLM, llama.cpp, SGLang) are reached this way: the Responses params
are converted to a chat request and the completion back to a Response.
"""

from __future__ import annotations

from palaestra.errors import ModelError
from palaestra.models.chat_format import (
    chat_to_response,
    context_length_response,
    responses_to_chat,
)
from palaestra.models.endpoint import RemoteEndpoint, RemoteModel
from palaestra.models.http import ContextLengthExceeded, RetryPolicy, Timeouts
from palaestra.transport import HttpClient
from palaestra.types import JsonDict


async def respond_with_chat(
    endpoint: RemoteEndpoint, params: JsonDict, *, keep_token_ids: bool = False
) -> JsonDict:
    """One chat call on ``endpoint``, in and out as Responses; see ``respond_with_responses``."""
    if params.get("stream"):
        raise ModelError("streaming is not supported: remove 'stream' from the request params")
    model = params.get("model") or await endpoint.model_name()
    body = responses_to_chat({**params, "model": model}, keep_token_ids=keep_token_ids)
    try:
        completion = await endpoint.post("chat/completions", body)
    except ContextLengthExceeded as exc:
        return context_length_response(params, model=model, message=exc.message)
    try:
        return chat_to_response(completion, params)
    except ModelError as exc:
        endpoint.stats.failures += 1
        raise ModelError(f"POST {endpoint.url('chat/completions')}: {exc}") from None


class OpenAIChatModel(RemoteModel):
    """Any OpenAI-compatible server with a Chat Completions endpoint.

    ``keep_token_ids`` sends the training fields of earlier turns back on the assistant
    messages, which NeMo RL's vLLM server uses to avoid re-tokenising the history.
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        http: HttpClient | None = None,
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
        keep_token_ids: bool = False,
    ) -> None:
        super().__init__(
            base_url, model=model, api_key=api_key, http=http, timeouts=timeouts, retry=retry
        )
        self.keep_token_ids = keep_token_ids

    async def _respond(self, params: JsonDict) -> JsonDict:
        return await respond_with_chat(self.endpoint, params, keep_token_ids=self.keep_token_ids)
