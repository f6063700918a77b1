"""Conversion between the OpenAI Responses API and Chat Completions, both ways, on plain dicts.

Most open-model servers (vLLM, llama.cpp, SGLang) speak only Chat Completions, while palaestra's
trajectories are Responses. These pure functions translate requests and answers in both
directions, so a Responses client can use a chat backend and a Responses backend can answer chat
(and the legacy Completions API, ``text``).
"""

from palaestra.models.chat_format._common import TOKEN_FIELDS
from palaestra.models.chat_format.completions import (
    CONTEXT_LENGTH_EXCEEDED,
    chat_to_response,
    context_length_response,
    finish_reason,
    incomplete_response,
    response_to_chat_completion,
)
from palaestra.models.chat_format.requests import (
    CHAT_REUSE,
    chat_message_items,
    chat_request_to_responses_params,
    responses_to_chat,
)
from palaestra.models.chat_format.reuse import ChatReuse
from palaestra.models.chat_format.text import (
    completion_request_to_responses_params,
    response_text,
    response_to_text_completion,
)

__all__ = [
    "CHAT_REUSE",
    "CONTEXT_LENGTH_EXCEEDED",
    "TOKEN_FIELDS",
    "ChatReuse",
    "chat_message_items",
    "chat_request_to_responses_params",
    "chat_to_response",
    "completion_request_to_responses_params",
    "context_length_response",
    "finish_reason",
    "incomplete_response",
    "response_text",
    "response_to_chat_completion",
    "response_to_text_completion",
    "responses_to_chat",
]
