"""The embedded model's prompt: Chat Completions messages rendered as ChatML, with tools.

SmolLM2's own chat template (inside the GGUF) is plain ChatML that ignores ``tools`` and fails on
an assistant message without content, so it cannot carry a tool loop. llama.cpp's
``chatml-function-calling`` format can, in principle, but measured on llama-cpp-python 0.3.36 it
drops ``role: tool`` messages (the model never sees a tool's result), lists the tools only when
the conversation has a system message, cannot answer in text under ``tool_choice: auto`` (the
text is constrained by the grammar meant for the next function name, so it comes back empty),
and ignores ``max_tokens`` under ``auto``. So palaestra renders the prompt itself, in the same
spirit: ChatML, the tools listed in the system message, and an answer that starts with either
``message:`` or ``functions.<name>:``, which a grammar can force or restrict. Unlike SmolLM2's
template it adds no default system prompt: measured at temperature 0, the 135M model answers
short questions better without it ("The capital of France is Paris." instead of a loop).

Everything here is pure string work, testable without llama.cpp.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from palaestra.errors import InputError
from palaestra.types import JsonDict

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"

MESSAGE_PREFIX = "message:"
CALL_PREFIX = "functions."

_TOOL_GUIDE = (
    "You can call these functions:\n{listing}\n"
    "Answer in one of two ways.\n"
    'To reply with text, write "message:" on the first line and your reply below it.\n'
    'To call a function, write "functions.<name>:" on the first line and its arguments '
    "as one JSON object below it."
)


@dataclass(frozen=True, slots=True)
class ToolPlan:
    """What the model may do next: ``names`` it may call, and whether it may answer in text."""

    names: tuple[str, ...] = ()
    schemas: tuple[Any, ...] = ()
    allow_text: bool = True

    @property
    def uses_tools(self) -> bool:
        return bool(self.names)

    def schema_of(self, name: str) -> Any:
        return self.schemas[self.names.index(name)]


def plan_tools(tools: Any, tool_choice: Any) -> ToolPlan:
    """Read chat ``tools`` and ``tool_choice`` into a ``ToolPlan``; a bad value is an InputError."""
    if not tools or tool_choice == "none":
        return ToolPlan()
    if not isinstance(tools, list):
        raise InputError("must be a list of function tools", field="tools")
    names: list[str] = []
    schemas: list[Any] = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise InputError(f"not a function tool: {tool!r:.80}", field="tools")
        names.append(function["name"])
        schemas.append(function.get("parameters") or {"type": "object", "properties": {}})
    if tool_choice is None or tool_choice == "auto":
        return ToolPlan(tuple(names), tuple(schemas), allow_text=True)
    if tool_choice == "required":
        return ToolPlan(tuple(names), tuple(schemas), allow_text=False)
    forced = tool_choice.get("function") if isinstance(tool_choice, dict) else None
    name = forced.get("name") if isinstance(forced, dict) else None
    if not isinstance(name, str):
        raise InputError(f"unsupported value {tool_choice!r:.80}", field="tool_choice")
    if name not in names:
        raise InputError(f"names function {name!r}, which is not in tools", field="tool_choice")
    index = names.index(name)
    return ToolPlan((name,), (schemas[index],), allow_text=False)


def content_text(content: Any) -> str:
    """Chat message content (a string, parts or null) as plain text. The embedded model reads
    text only: an image part (a browser's screenshot) reads ``[image]``, other parts are
    refused."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise InputError(f"unsupported content {content!r:.80}", field="messages")
    texts: list[str] = []
    for part in content:
        if isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
            texts.append(str(part.get("text", "")))
        elif isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("type") in ("image_url", "input_image"):
            texts.append("[image]")
        else:
            raise InputError(f"the local model reads text only, not {part!r:.60}", field="messages")
    return "".join(texts)


def _tool_listing(tools: list[JsonDict]) -> str:
    lines: list[str] = []
    for tool in tools:
        function = tool["function"]
        description = str(function.get("description") or "").strip()
        schema = function.get("parameters") or {"type": "object", "properties": {}}
        lines.append(
            f"\n{CALL_PREFIX}{function['name']}:" + (f" {description}" if description else "")
        )
        lines.append("parameters: " + orjson.dumps(schema).decode())
    return "\n".join(lines)


def _turn(role: str, text: str) -> str:
    return f"{IM_START}{role}\n{text}{IM_END}\n"


def _assistant_text(message: JsonDict, with_tools: bool) -> str:
    text = content_text(message.get("content"))
    calls = message.get("tool_calls") or []
    parts: list[str] = []
    if text or not calls:
        parts.append(f"{MESSAGE_PREFIX}\n{text}" if with_tools else text)
    for call in calls:
        function = (call.get("function") or {}) if isinstance(call, dict) else {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = orjson.dumps(arguments if arguments is not None else {}).decode()
        parts.append(f"{CALL_PREFIX}{function.get('name', '')}:\n{arguments}")
    return "\n".join(parts)


def render_prompt(messages: Any, tools: Any, plan: ToolPlan) -> str:
    """The ChatML prompt for ``messages``, ending with an open assistant turn.

    System and developer messages are merged into one system turn at the top; the tools are
    listed there when the plan lets the model call any. A tool result is a ``tool`` turn.
    """
    if not isinstance(messages, list) or not messages:
        raise InputError("must be a non-empty list of chat messages", field="messages")
    system: list[str] = []
    turns: list[str] = []
    with_tools = plan.uses_tools
    for message in messages:
        if not isinstance(message, dict):
            raise InputError(f"not a chat message: {message!r:.80}", field="messages")
        role = message.get("role")
        if role in ("system", "developer"):
            system.append(content_text(message.get("content")))
        elif role == "assistant":
            turns.append(_turn("assistant", _assistant_text(message, with_tools)))
        elif role in ("user", "tool"):
            turns.append(_turn(str(role), content_text(message.get("content"))))
        else:
            raise InputError(f"unsupported message role {role!r}", field="messages")
    if with_tools:
        listed = [tool for tool in tools if tool["function"]["name"] in plan.names]
        system.append(_TOOL_GUIDE.format(listing=_tool_listing(listed)))
    head = _turn("system", "\n\n".join(system)) if system else ""
    return head + "".join(turns) + f"{IM_START}assistant\n"


def render_continuation(messages: list[JsonDict], plan: ToolPlan, *, closed: bool) -> str:
    """The text that follows an assistant generation in token mode: the end of its turn
    (``<|im_end|>`` only when the generation did not write it, ``closed``), then ``messages``
    as turns (tool results, user turns), then the open assistant turn. Rendered exactly as
    ``render_prompt`` renders the same turns inside a whole conversation."""
    turns: list[str] = [] if closed else [IM_END]
    turns.append("\n")
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            turns.append(_turn("assistant", _assistant_text(message, plan.uses_tools)))
        elif role in ("user", "tool", "system", "developer"):
            role = "system" if role == "developer" else role
            turns.append(_turn(str(role), content_text(message.get("content"))))
        else:
            raise InputError(f"unsupported message role {role!r}", field="messages")
    return "".join(turns) + f"{IM_START}assistant\n"


def _literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def choice_grammar(plan: ToolPlan, *, newline: bool = False) -> str:
    """A GBNF grammar for the first line of the answer: ``message:`` or ``functions.<name>:``
    (with its line break when ``newline``: in token mode the model writes that too)."""
    options = [_literal(f"{CALL_PREFIX}{name}:") for name in plan.names]
    if plan.allow_text:
        options.insert(0, _literal(MESSAGE_PREFIX))
    rule = " | ".join(options)
    return f'root ::= ({rule}) "\\n"\n' if newline else f"root ::= {rule}\n"


def chosen_function(head: str, plan: ToolPlan) -> str | None:
    """The function named by an answer's first line, or None when the model chose to reply."""
    head = head.strip()
    if head.startswith(CALL_PREFIX) and head.endswith(":"):
        name = head[len(CALL_PREFIX) : -1]
        if name in plan.names:
            return name
    return None
