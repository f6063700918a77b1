"""A remote model that speaks the OpenAI Responses API (``POST {base_url}/responses``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from palaestra.errors import ConfigError, ModelError
from palaestra.models.chat_format import context_length_response
from palaestra.models.openai.endpoint import RemoteEndpoint, RemoteModel
from palaestra.models.openai.resume import MAX_RESUMPTIONS, too_many_aborts
from palaestra.models.openai.retry import ContextLengthExceeded, bad_answer
from palaestra.types import JsonDict

if TYPE_CHECKING:
    from palaestra.spec import ModelConfig
    from palaestra.transport import HttpClient

# A Response in one of these states has no usable answer, whatever its output holds. A tuple,
# compared with ==, not a set: a server may send unhashable JSON as ``status``.
_FAILED = ("failed", "cancelled")


def _described(error: Any) -> str:
    """The server's ``error`` object as one line: ``code: message``."""
    if isinstance(error, dict):
        said = [str(error[key]) for key in ("code", "message") if error.get(key)]
        return ": ".join(said) or "no error message"
    return str(error) if error else "no error message"


def _unusable(endpoint: RemoteEndpoint, answer: JsonDict) -> JsonDict:
    """``answer`` when it is usable after all (a call asked again after an abort) or an empty
    incomplete Response, else the ``ModelError`` it is.

    Over Chat Completions, an answer without choices is a model error; a Responses answer
    without output, or with a failed status, is the same failure and must not be scored.
    """
    output, status = answer.get("output"), answer.get("status")
    if output and isinstance(output, list) and status not in _FAILED:
        return answer
    if isinstance(output, list) and status == "incomplete":
        return answer  # cut off before any output, or a relayed context-length answer
    endpoint.stats.failures += 1
    url = endpoint.shown("responses")
    if not isinstance(output, list):
        raise bad_answer(f"POST {url} answered a JSON object without an 'output' list")
    error = _described(answer.get("error"))
    if status in _FAILED:
        raise bad_answer(f"POST {url}: the model answered status '{status}': {error}")
    raise bad_answer(f"POST {url}: the model answered no output (status '{status}'): {error}")


async def _asked_again(endpoint: RemoteEndpoint, body: JsonDict) -> JsonDict:
    """The answer to a call the engine aborted for a weight update (vLLM answers such a
    Response "cancelled", its partial output kept): the Responses API cannot continue a
    message, so the call is asked again (``palaestra.models.openai.resume``), at most
    ``MAX_RESUMPTIONS`` times."""
    endpoint.stats.paused_calls += 1
    for _ in range(MAX_RESUMPTIONS):
        endpoint.stats.resumptions += 1
        answer = await endpoint.post("responses", body)
        if answer.get("status") != "cancelled" or not answer.get("output"):
            return answer
    raise too_many_aborts(f"POST {endpoint.shown('responses')}", endpoint.stats)


async def respond_with_responses(endpoint: RemoteEndpoint, params: JsonDict) -> JsonDict:
    """One Responses call on ``endpoint``; a context-length error becomes an incomplete Response."""
    if params.get("stream"):
        raise ModelError("streaming is not supported: remove 'stream' from the request params")
    model = params.get("model") or await endpoint.model_name()
    body = params if params.get("model") else {**params, "model": model}
    try:
        answer = await endpoint.post("responses", body)
        # Two lookups on the success path: a non-empty output list and a status that is not
        # failed; a "cancelled" one with output is a generation aborted for a weight update.
        output = answer.get("output")
        if output and isinstance(output, list) and answer.get("status") not in _FAILED:
            return answer
        if output and answer.get("status") == "cancelled":
            answer = await _asked_again(endpoint, body)
    except ContextLengthExceeded as exc:
        return context_length_response(params, model=model, message=exc.message)
    return _unusable(endpoint, answer)


class OpenAIResponsesModel(RemoteModel):
    """Any OpenAI-compatible server with a Responses endpoint (OpenAI, vLLM, palaestra serve).

    It cannot capture token ids (no server returns them over Responses): ``return_tokens`` or
    ``token_mode`` with ``api: responses`` is a ``ConfigError``.
    """

    def __init__(self, config: ModelConfig | str, *, http: HttpClient | None = None) -> None:
        super().__init__(config, http=http)
        if self.tokens.capture:
            raise ConfigError(
                "model backend 'openai': return_tokens and token_mode need Chat Completions "
                "or completions, not api: responses (use api: chat or auto)"
            )

    async def _respond(self, params: JsonDict) -> JsonDict:
        return await respond_with_responses(self.endpoint, params)
