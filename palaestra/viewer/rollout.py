"""One rollout as the page draws it: its conversation, verdict, failure, timings and usage.

The row is regrouped here, not in the browser, so what the page shows is testable without
one: the task's input and the trajectory's output as one list of items, each output item with
its ``producer`` (the row's ``_palaestra.producers``: ``policy``, ``tool``, ``user`` or
``environment``; derived for rows that lack them) and ``trainable`` (the policy's alone, as
the loss mask), a simulated user's or an environment's message also marked ``simulated``,
each function call paired with its output by ``call_id``, token id arrays replaced by their
lengths (they can be megabytes; the token view fetches them on their own).
"""

from __future__ import annotations

from typing import Any

from palaestra.types import TRAINABLE_PRODUCERS, JsonDict, Producer, input_items, producers_of
from palaestra.wire.rows import (
    AGENT_REF,
    FACTS,
    FAILURE,
    NG_FAILURE_CLASS,
    NG_FAILURE_TERMINAL,
    PARAMS,
    RESPONSE,
    REWARD,
    REWARD_COMPONENTS,
    ROLLOUT_INDEX,
    SOURCE,
    STEP_REWARDS,
    TASK_INDEX,
)

TOKEN_FIELDS = ("prompt_token_ids", "generation_token_ids", "generation_log_probs")
_SIMULATED = (Producer.USER, Producer.ENVIRONMENT)
"""Producers of messages the policy did not write and that are not tool outputs."""
_ROW_FIELDS = {
    PARAMS, AGENT_REF, TASK_INDEX, ROLLOUT_INDEX, RESPONSE, REWARD, REWARD_COMPONENTS,
    STEP_REWARDS, FACTS, FAILURE, NG_FAILURE_CLASS, NG_FAILURE_TERMINAL, SOURCE,
}  # fmt: skip


def rollout_view(row: JsonDict) -> JsonDict:
    """The page's model of one row (a scored rollout or a failure)."""
    params = row.get(PARAMS)
    params = params if isinstance(params, dict) else {}
    response = row.get(RESPONSE)
    response = response if isinstance(response, dict) else {}
    facts = row.get(FACTS)
    facts = facts if isinstance(facts, dict) else {}
    items: list[JsonDict] = []
    instructions = response.get("instructions") or params.get("instructions")
    if isinstance(instructions, str) and instructions:
        items.append({"kind": "message", "role": "system", "text": instructions, "origin": "task"})
    for item in _items(input_items(params)):
        items.append({**item, "origin": "task"})
    names: dict[str, str] = {}
    token_calls = 0
    output = [item for item in response.get("output") or [] if isinstance(item, dict)]
    producers = producers_of(output, facts.get("producers"))
    for item, producer in zip(_items(output), producers, strict=True):
        item["origin"] = "output"
        # Who produced it (the row's producers, else derived as for old rows), and whether a
        # trainer puts its tokens in the loss: the policy's alone.
        item["producer"] = producer
        item["trainable"] = producer in TRAINABLE_PRODUCERS
        if item["kind"] == "message" and producer in _SIMULATED:
            item["simulated"] = True
        if item["kind"] == "function_call":
            names[str(item.get("call_id"))] = str(item.get("name"))
        if item["kind"] == "function_call_output":
            item["name"] = names.get(str(item.get("call_id")))
        if "tokens" in item:
            token_calls += 1
        items.append(item)
    verifier_fields = facts.get("verifier_fields")
    if isinstance(verifier_fields, list):
        metric_names = [
            f for f in verifier_fields if f not in (REWARD, REWARD_COMPONENTS, STEP_REWARDS)
        ]
    else:  # a row palaestra did not write: every field that is not the protocol's or the task's
        metric_names = [k for k in row if k not in _ROW_FIELDS and _scalar(row[k])]
    verifier = set(metric_names)
    failure = row.get(FAILURE)
    return {
        "task_index": row.get(TASK_INDEX),
        "rollout_index": row.get(ROLLOUT_INDEX),
        "agent": (row.get(AGENT_REF) or {}).get("name")
        if isinstance(row.get(AGENT_REF), dict)
        else None,
        "model": response.get("model"),
        "status": response.get("status"),
        "incomplete": response.get("incomplete_details"),
        "items": items,
        "verdict": None
        if isinstance(failure, dict)
        else {
            "reward": row.get(REWARD),
            "components": row.get(REWARD_COMPONENTS),
            "step_rewards": row.get(STEP_REWARDS),
            "metrics": {name: row[name] for name in metric_names if name in row},
        },
        "failure": failure if isinstance(failure, dict) else None,
        "input_source": row.get(SOURCE),
        "facts": {k: v for k, v in facts.items() if k not in ("timings", "verifier_fields")},
        "timings": facts.get("timings") if isinstance(facts.get("timings"), dict) else {},
        "usage": response.get("usage"),
        "task_fields": {k: v for k, v in row.items() if k not in _ROW_FIELDS and k not in verifier},
        "tools": [
            _tool_name(tool)
            for tool in params.get("tools") or response.get("tools") or []
            if isinstance(tool, dict)
        ],
        "token_calls": token_calls,
    }


def _items(raw: list[Any]) -> list[JsonDict]:
    return [_item(item) for item in raw if isinstance(item, dict)]


def _item(item: JsonDict) -> JsonDict:
    kind = str(item.get("type") or ("message" if "role" in item else "unknown"))
    out: JsonDict = {"kind": kind}
    if kind == "message":
        out["role"] = item.get("role", "assistant")
        out["text"] = _text(item.get("content"))
    elif kind == "reasoning":
        parts = [_text(item.get("summary")), _text(item.get("content"))]
        out["text"] = "\n".join(p for p in parts if p)
    elif kind == "function_call":
        out["name"] = item.get("name")
        out["call_id"] = item.get("call_id")
        out["arguments"] = item.get("arguments")
    elif kind == "function_call_output":
        out["call_id"] = item.get("call_id")
        output = item.get("output")
        out["output"] = output if isinstance(output, str) else _text(output)
    else:
        out["raw"] = {k: v for k, v in item.items() if k not in TOKEN_FIELDS}
    if "generation_token_ids" in item:
        out["tokens"] = {
            "prompt": _length(item.get("prompt_token_ids")),
            "generated": _length(item.get("generation_token_ids")),
        }
    return out


def _text(content: Any) -> str:
    """A message's text: a string, or its text parts joined (images and files named)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                text = part.get("text")
                parts.append(str(text) if text is not None else f"[{part.get('type', 'part')}]")
            else:
                parts.append(str(part))
        return "\n".join(parts)
    return str(content)


def _length(value: Any) -> int:
    return len(value) if isinstance(value, list) else 0


def _scalar(value: Any) -> bool:
    return isinstance(value, bool | int | float | str) or value is None


def _tool_name(tool: JsonDict) -> str:
    function = tool.get("function")
    name = tool.get("name") or (function.get("name") if isinstance(function, dict) else None)
    return str(name or tool.get("type") or "tool")


def preview(row: JsonDict, limit: int = 140) -> str:
    """The table's one-line glimpse of a row: why it failed, else its first user message."""
    params = row.get(PARAMS)
    failure = row.get(FAILURE)
    text = str(failure.get("reason", "")) if isinstance(failure, dict) else ""
    if not text and isinstance(params, dict):
        for item in input_items(params):
            if isinstance(item, dict) and item.get("role") == "user":
                text = _text(item.get("content"))
                break
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
