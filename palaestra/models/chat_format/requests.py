"""Requests: Responses create params <-> a Chat Completions request body."""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from palaestra.errors import ModelError
from palaestra.models.chat_format._common import (
    function_call_item,
    new_id,
    part_text,
    reasoning_text,
    token_fields,
)
from palaestra.types import JsonDict, input_items

if TYPE_CHECKING:
    from palaestra.models.chat_format.reuse import ChatReuse

CHAT_REUSE: ContextVar[ChatReuse | None] = ContextVar("palaestra_chat_reuse", default=None)
"""What the running call's caller converted before (``palaestra.models.chat_format.reuse``):
set, ``responses_to_chat`` converts only the input items the caller's recent calls did not.

A context variable, not an argument, because it is read beneath ``Model.respond(params)``,
inside whichever chat model serves the call; set in one place, by the gateway around each
call of a rollout (``GatewayRollout.chat_reuse``)."""

_SAMPLING_FIELDS = ("temperature", "top_p", "parallel_tool_calls", "model", "seed")


def _chat_content(content: Any) -> str | list[JsonDict]:
    """Responses message content -> chat content: a string, or parts when images are present."""
    if content is None or isinstance(content, str):
        return content or ""
    texts: list[str] = []
    parts: list[JsonDict] = []
    for part in content:
        text = part_text(part)
        if text is not None:
            texts.append(text)
            parts.append({"type": "text", "text": text})
        elif isinstance(part, dict) and part.get("type") == "input_image":
            image = {"url": part.get("image_url") or part.get("file_id", "")}
            if part.get("detail"):
                image["detail"] = part["detail"]
            parts.append({"type": "image_url", "image_url": image})
        else:
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            raise ModelError(f"content part of type {kind!r} cannot be sent as Chat Completions")
    return "".join(texts) if len(parts) == len(texts) else parts


def _chat_tool(tool: JsonDict) -> JsonDict:
    if tool.get("type") != "function":
        raise ModelError(f"tool of type {tool.get('type')!r} cannot be sent as Chat Completions")
    function = {
        key: tool[key] for key in ("name", "description", "parameters", "strict") if key in tool
    }
    return {"type": "function", "function": function}


def _chat_tool_choice(choice: Any) -> Any:
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return choice


def _is_assistant_item(item: JsonDict) -> bool:
    kind = item.get("type", "message")
    return kind in ("reasoning", "function_call") or (
        kind == "message" and item.get("role") == "assistant"
    )


def _chat_message(item: JsonDict) -> JsonDict:
    """A non-assistant input item (user/system/developer message, tool output) -> a message."""
    kind = item.get("type", "message")
    if kind == "message":
        # "developer" is OpenAI's new name for "system"; open-model chat templates know only
        # the old one, and OpenAI treats both alike.
        role = "system" if item.get("role") == "developer" else item.get("role", "user")
        return {"role": role, "content": _chat_content(item.get("content"))}
    if kind == "function_call_output":
        output = item.get("output", "")
        content = output if isinstance(output, str) else _chat_content(output)
        return {"role": "tool", "tool_call_id": item.get("call_id"), "content": content}
    raise ModelError(f"input item of type {kind!r} cannot be sent as Chat Completions")


def _chat_messages(params: JsonDict, keep_token_ids: bool) -> list[JsonDict]:
    messages: list[JsonDict] = []
    if params.get("instructions"):
        messages.append({"role": "system", "content": params["instructions"]})
    reuse = CHAT_REUSE.get()
    raw = params.get("input")
    if reuse is not None and isinstance(raw, list):
        messages += reuse.messages(raw, keep_token_ids)
    else:
        fold(input_items(params), keep_token_ids, messages)
    return messages


def fold(
    items: list[Any],
    keep_token_ids: bool,
    messages: list[JsonDict],
    cuts: tuple[list[int], list[int]] | None = None,
    first: int = 0,
) -> None:
    """Append the chat messages of Responses ``items`` to ``messages``.

    ``cuts``: where the conversion starts afresh is recorded there, as (how many items from
    ``first`` on, how many messages by then): after each item that is not the assistant's,
    nothing earlier bears on what later items become (``palaestra.models.chat_format.reuse``).
    """
    # One assistant turn in Responses is several items (reasoning, message, function calls);
    # in chat it is one message, so they are folded into the currently open assistant message.
    current: JsonDict | None = None
    reasoning: list[str] = []
    tokens: JsonDict = {}
    for position, item in enumerate(items, first + 1):
        if not isinstance(item, dict):
            raise ModelError(f"input item is not a JSON object: {item!r:.80}")
        if not _is_assistant_item(item):
            # Reasoning that no assistant turn follows has nowhere to go in chat: dropped.
            current, tokens = None, {}
            reasoning.clear()
            messages.append(_chat_message(item))
            if cuts is not None:
                cuts[0].append(position)
                cuts[1].append(len(messages))
            continue
        if keep_token_ids:
            tokens.update(token_fields(item))
        if item.get("type") == "reasoning":
            current = None
            reasoning.append(reasoning_text(item))
            continue
        if current is None or item.get("type", "message") == "message":
            current = {"role": "assistant", "content": None}
            if reasoning:
                current["reasoning_content"] = "\n".join(reasoning)
                reasoning.clear()
            messages.append(current)
        if item.get("type") == "function_call":
            function = {"name": item.get("name"), "arguments": item.get("arguments")}
            call = {"id": item.get("call_id"), "type": "function", "function": function}
            current.setdefault("tool_calls", []).append(call)
        else:
            current["content"] = _chat_content(item.get("content"))
        current.update(tokens)
        tokens = {}


def responses_to_chat(params: JsonDict, *, keep_token_ids: bool = False) -> JsonDict:
    """Responses create params -> a Chat Completions request body.

    ``keep_token_ids`` copies the training fields of assistant items onto the assistant
    messages (NeMo RL's vLLM server reads them to avoid re-tokenising the history).
    """
    body: JsonDict = {"messages": _chat_messages(params, keep_token_ids)}
    for key in _SAMPLING_FIELDS:
        if params.get(key) is not None:
            body[key] = params[key]
    if params.get("max_output_tokens") is not None:
        body["max_tokens"] = params["max_output_tokens"]
    tools = params.get("tools") or []
    if tools:
        body["tools"] = [_chat_tool(tool) for tool in tools]
        if params.get("tool_choice") is not None:
            body["tool_choice"] = _chat_tool_choice(params["tool_choice"])
    else:
        # Chat servers reject tool_choice / parallel_tool_calls without tools.
        body.pop("parallel_tool_calls", None)
    text_format = (params.get("text") or {}).get("format")
    if isinstance(text_format, dict) and text_format.get("type") == "json_schema":
        schema = {key: value for key, value in text_format.items() if key != "type"}
        body["response_format"] = {"type": "json_schema", "json_schema": schema}
    elif isinstance(text_format, dict) and text_format.get("type") == "json_object":
        body["response_format"] = {"type": "json_object"}
    effort = (params.get("reasoning") or {}).get("effort")
    if effort is not None:
        body["reasoning_effort"] = effort
    return body


# --- the reverse: Chat Completions request -> Responses params, Response -> chat completion ---


def _response_content(content: Any, role: str) -> str | list[JsonDict]:
    if content is None or isinstance(content, str):
        return content or ""
    text_type = "output_text" if role == "assistant" else "input_text"
    parts: list[JsonDict] = []
    for part in content:
        text = part_text(part)
        if text is not None:
            parts.append({"type": text_type, "text": text})
        elif isinstance(part, dict) and part.get("type") == "image_url":
            image = part.get("image_url") or {}
            parts.append(
                {
                    "type": "input_image",
                    "image_url": image.get("url"),
                    "detail": image.get("detail", "auto"),
                }
            )
        else:
            raise ModelError(f"unsupported chat content part: {part!r:.80}")
    return parts


def _assistant_items(message: JsonDict) -> list[JsonDict]:
    items: list[JsonDict] = []
    if message.get("reasoning_content"):
        items.append(
            {
                "type": "reasoning",
                "id": new_id("rs"),
                "summary": [{"type": "summary_text", "text": message["reasoning_content"]}],
            }
        )
    if message.get("content"):
        text = _response_content(message["content"], "assistant")
        parts: list[JsonDict] = (
            text if isinstance(text, list) else [{"type": "output_text", "text": text}]
        )
        for part in parts:
            part.setdefault("annotations", [])
        items.append(
            {
                "type": "message",
                "id": new_id("msg"),
                "role": "assistant",
                "status": "completed",
                "content": parts,
            }
        )
    for call in message.get("tool_calls") or []:
        items.append(function_call_item(call))
    if items:
        items[-1].update(token_fields(message))
    return items


def _response_tool(tool: Any) -> JsonDict:
    function = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(function, dict) or tool.get("type") != "function":
        raise ModelError(f"chat tool is not a function tool: {tool!r:.80}")
    return {
        "type": "function",
        "name": function.get("name"),
        "description": function.get("description"),
        "parameters": function.get("parameters"),
        # Chat's default for strict is false; NeMo Gym rejects a tool that omits it.
        "strict": bool(function.get("strict", False)),
    }


def chat_message_items(message: Any) -> list[JsonDict]:
    """One Chat Completions message -> the Responses input items it stands for (an assistant
    message with tool calls is several). Each message converts on its own, so a caller that
    saw the start of a conversation before converts only the messages after it."""
    if not isinstance(message, dict):
        raise ModelError(f"chat message is not an object: {message!r:.80}")
    role = message.get("role")
    if role == "assistant":
        return _assistant_items(message)
    if role == "tool":
        content = _response_content(message.get("content"), "tool")
        output = (
            content
            if isinstance(content, str)
            else "".join(str(part.get("text", "")) for part in content)
        )
        return [
            {
                "type": "function_call_output",
                "call_id": message.get("tool_call_id"),
                "output": output,
            }
        ]
    if role in ("system", "developer", "user"):
        return [
            {
                "type": "message",
                "role": role,
                "content": _response_content(message.get("content"), role),
            }
        ]
    raise ModelError(f"chat message has an unknown role: {role!r:.40}")


def chat_request_to_responses_params(body: JsonDict) -> JsonDict:
    """A Chat Completions request body -> Responses create params."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise ModelError("chat request has no 'messages' list")
    items: list[JsonDict] = []
    for message in messages:
        items.extend(chat_message_items(message))
    params: JsonDict = {"input": items}
    for key in (*_SAMPLING_FIELDS, "metadata"):
        if body.get(key) is not None:
            params[key] = body[key]
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    if max_tokens is not None:
        params["max_output_tokens"] = max_tokens
    tools = [_response_tool(tool) for tool in body.get("tools") or []]
    if tools:
        params["tools"] = tools
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "function":
        choice = {"type": "function", "name": (choice.get("function") or {}).get("name")}
    if choice is not None:
        params["tool_choice"] = choice
    response_format = body.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        schema = response_format.get("json_schema") or {}
        params["text"] = {"format": {"type": "json_schema", **schema}}
    elif isinstance(response_format, dict) and response_format.get("type") == "json_object":
        params["text"] = {"format": {"type": "json_object"}}
    if body.get("reasoning_effort") is not None:
        params["reasoning"] = {"effort": body["reasoning_effort"]}
    return params
