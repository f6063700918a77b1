"""Closed-book model routes: requests that carry no provider-hosted tools.

A task whose environment has no network (machines, most suites) must be solved from what the
model knows and what the environment's own tools return. A hosted model asked through the
Responses API could still search the web, read files stored at the provider or run code
there, if the request names such a tool (a task row's ``tools`` may): the provider runs it, not
the harness, and nothing of it would reach the environment. ``ClosedBookModel`` sends every
request without them, and records which types it dropped on the rollout's scope, so the row
can say so (``_palaestra.closed_book``, ``_palaestra.hosted_tools_dropped``).

Which tools stay: the ones the harness itself runs, ``function`` tools (and ``custom``
free-form tools, which the caller runs as well). Every other tool type is the provider's
(``web_search`` and its dated variants, ``file_search``, ``code_interpreter``,
``computer_use_preview``, ``image_generation``, ``mcp`` servers the provider reaches,
``local_shell``...): kept out by rule, not by a list that new types would slip past. With
them go what only they use: a ``tool_choice`` naming one, ``include`` entries of their
results, and Chat Completions' ``web_search_options``.
"""

from __future__ import annotations

from typing import Any

from palaestra.models.affinity import ROLLOUT_SCOPE
from palaestra.models.base import Model, ModelStats
from palaestra.types import JsonDict

HARNESS_TOOL_TYPES = frozenset({"function", "custom"})
"""Tool types the caller runs itself; every other type is run by the provider."""

_CHAT_HOSTED_FIELDS = ("web_search_options",)
"""Chat Completions request fields that switch a provider's own search on."""

_INCLUDE_PREFIXES = {
    "web_search": "web_search_call.",
    "file_search": "file_search_call.",
    "code_interpreter": "code_interpreter_call.",
    "computer_use": "computer_call_output.",
}
"""``include`` entries that ask for a hosted tool's results, by the tool family they need."""


def hosted_tool_type(tool: Any) -> str | None:
    """The type of ``tool`` when the provider runs it, else None (a tool the harness runs)."""
    kind = tool.get("type", "function") if isinstance(tool, dict) else None
    if kind in HARNESS_TOOL_TYPES:
        return None
    return str(kind)


def without_hosted_tools(params: JsonDict) -> tuple[JsonDict, list[str]]:
    """``params`` with no provider-hosted tool, and the types dropped (each once, in order).

    ``params`` itself is not changed; when it holds nothing to drop it is returned as it is.
    """
    tools = params.get("tools")
    listed = tools if isinstance(tools, list) else []
    dropped: list[str] = []
    for tool in listed:
        kind = hosted_tool_type(tool)
        if kind is not None and kind not in dropped:
            dropped.append(kind)
    chat = [field for field in _CHAT_HOSTED_FIELDS if field in params]
    if not dropped and not chat:
        return params, []
    kept = dict(params)
    for field in chat:
        del kept[field]
        dropped.append(field)
    if isinstance(tools, list):
        kept["tools"] = [tool for tool in tools if hosted_tool_type(tool) is None]
    choice = _tool_choice(kept.get("tool_choice"))
    if choice is None:
        kept.pop("tool_choice", None)
    else:
        kept["tool_choice"] = choice
    include = kept.get("include")
    if isinstance(include, list):
        kept["include"] = [entry for entry in include if not _hosted_include(entry)]
    return kept, dropped


def _tool_choice(choice: Any) -> Any:
    """``choice`` without hosted tools: a choice of one is dropped (None, so the default
    applies), an ``allowed_tools`` list keeps the harness's own."""
    if not isinstance(choice, dict):
        return choice
    if choice.get("type") == "allowed_tools" and isinstance(choice.get("tools"), list):
        allowed = [tool for tool in choice["tools"] if hosted_tool_type(tool) is None]
        return {**choice, "tools": allowed} if allowed else None
    return None if hosted_tool_type(choice) is not None else choice


def _hosted_include(entry: Any) -> bool:
    return isinstance(entry, str) and any(
        entry.startswith(prefix) for prefix in _INCLUDE_PREFIXES.values()
    )


class ClosedBookModel:
    """``model`` with every request sent closed-book (``without_hosted_tools``).

    What it drops is recorded on the running rollout's scope (``RolloutScope.hosted_dropped``),
    read by ``BoundAgent`` into the row. Everything else is the wrapped model's: its name, its
    statistics, its answers and errors, and any other attribute (a pool's ``endpoint_stats``).
    """

    def __init__(self, model: Model) -> None:
        self.model = model
        self.name = model.name
        self.stats: ModelStats = model.stats

    async def respond(self, params: JsonDict) -> JsonDict:
        sent, dropped = without_hosted_tools(params)
        if dropped:
            scope = ROLLOUT_SCOPE.get()
            if scope is not None:
                scope.dropped_hosted(dropped)
        try:
            return await self.model.respond(sent)
        finally:
            self.name = self.model.name  # a remote model learns its name from its answers

    async def check(self) -> None:
        await self.model.check()

    async def aclose(self) -> None:
        await self.model.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)
