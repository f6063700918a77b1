"""Conversion between the OpenAI Responses API and Chat Completions, both ways, on plain dicts.

Most open-model servers (vLLM, llama.cpp, SGLang) speak only Chat Completions, while palaestra's
trajectories are Responses. These pure functions translate requests and answers in both
directions, so a Responses client can use a chat backend and a Responses backend can answer chat.
"""

from palaestra.models.chat_format._common import TOKEN_FIELDS
from palaestra.models.chat_format.completions import (
    CONTEXT_LENGTH_EXCEEDED,
    chat_to_response,
    context_length_response,
    incomplete_response,
    response_to_chat_completion,
)
from palaestra.models.chat_format.requests import (
    chat_request_to_responses_params,
    responses_to_chat,
)

__all__ = [
    "CONTEXT_LENGTH_EXCEEDED",
    "TOKEN_FIELDS",
    "chat_request_to_responses_params",
    "chat_to_response",
    "context_length_response",
    "incomplete_response",
    "response_to_chat_completion",
    "responses_to_chat",
]
