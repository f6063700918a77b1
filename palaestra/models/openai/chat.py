"""A remote model that speaks only Chat Completions (``POST {base_url}/chat/completions``).

Most open-model servers (vLLM, llama.cpp, SGLang) are reached this way: the Responses params
are converted to a chat request and the completion back to a Response.
"""

from __future__ import annotations

from functools import partial

from palaestra.errors import ModelError
from palaestra.models.chat_format import (
    chat_to_response,
    context_length_response,
    responses_to_chat,
)
from palaestra.models.openai.endpoint import RemoteEndpoint, RemoteModel
from palaestra.models.openai.resume import aborted, resume_chat
from palaestra.models.openai.retry import ContextLengthExceeded, bad_answer
from palaestra.models.tokens import CHAT_CAPTURE_PARAMS, captured_tokens
from palaestra.types import JsonDict


async def respond_with_chat(
    endpoint: RemoteEndpoint,
    params: JsonDict,
    *,
    keep_token_ids: bool = False,
    capture: bool = False,
) -> JsonDict:
    """One chat call on ``endpoint``, in and out as Responses; see ``respond_with_responses``.

    With ``capture`` the request asks for token ids and log-probs (``CHAT_CAPTURE_PARAMS``) and
    the last output item gets the training fields; a server that answers none fails the call.
    """
    if params.get("stream"):
        raise ModelError("streaming is not supported: remove 'stream' from the request params")
    model = params.get("model") or await endpoint.model_name()
    body = responses_to_chat({**params, "model": model}, keep_token_ids=keep_token_ids)
    if capture:
        body.update(CHAT_CAPTURE_PARAMS)
    try:
        completion = await endpoint.post("chat/completions", body)
        if aborted(completion):  # an engine paused for a weight update: continue the turn
            completion = await resume_chat(
                partial(endpoint.post, "chat/completions"),
                body,
                completion,
                capture=capture,
                stats=endpoint.stats,
                where=f"POST {endpoint.shown('chat/completions')}",
            )
    except ContextLengthExceeded as exc:
        return context_length_response(params, model=model, message=exc.message)
    try:
        response = chat_to_response(completion, params)
        if capture:
            response["output"][-1].update(captured_tokens(completion, "the server"))
        return response
    except ModelError as exc:
        endpoint.stats.failures += 1
        raise bad_answer(f"POST {endpoint.shown('chat/completions')}: {exc}") from None


class OpenAIChatModel(RemoteModel):
    """Any OpenAI-compatible server with a Chat Completions endpoint."""

    async def _respond(self, params: JsonDict) -> JsonDict:
        return await respond_with_chat(
            self.endpoint,
            params,
            keep_token_ids=self.keep_token_ids,
            capture=self.tokens.capture,
        )
