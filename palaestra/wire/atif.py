"""ATIF trajectories (Agent Trajectory Interchange Format, v1.7): a rollout row as one, and back.

ATIF is the trajectory document Harbor validates and views (one JSON object per trajectory:
``schema_version``, ``agent``, ``steps``, ``final_metrics``, and an ``extra`` object on most
of them for what the schema does not name). ``to_trajectory`` writes a rollout row (scored or
failed) as one; ``from_trajectory`` reads one back. For a trajectory ``to_trajectory`` wrote,
``from_trajectory(to_trajectory(row)) == row``: nothing the row had is lost.

How a row maps:

- **steps**: the task's input and then the response's output, item by item. A system or
  developer message is a ``system`` step, a user message a ``user`` step; the policy's items
  (reasoning, an assistant message, function calls) make an ``agent`` step with
  ``reasoning_content``, ``message`` and ``tool_calls``, and the outputs of those calls are its
  ``observation`` (``source_call_id`` is the call's id). A new agent step starts after an item
  carrying a model call's token ids (the call ended there) or when the call's kind of item
  repeats. An environment's own message after an agent step is an observation result with no
  ``source_call_id`` (ATIF has no environment source); a simulated user's is a ``user`` step.
- **token ids**: a call's ``prompt_token_ids``, ``generation_token_ids`` and
  ``generation_log_probs`` are its step's ``metrics`` (``prompt_token_ids``,
  ``completion_token_ids``, ``logprobs``).
- **root ``extra``**: ``reward``, ``reward_components``, ``step_rewards`` of a scored row, or
  ``failure`` (``{kind, reason, masked}``) of a failed one, which has no reward; the
  ``policy_versions`` that served its model calls and the ``producers`` of its output items
  (as ``_palaestra`` records them, else as ``producers_of`` derives them); and under
  ``palaestra`` the rest of the row (the task, its identities, the response's own fields)
  for the way back.
- **what the standard fields cannot say** (an item's id, a content list, arguments that are
  not a JSON object, an order the steps do not keep) is a step's ``extra.palaestra``: a patch
  of the items its fields rebuild, or the items themselves.
- A failed rollout with no trajectory at all (an input line that could not be read) has one
  ``system`` step saying so, marked ``extra.palaestra.placeholder``: ATIF needs a step.

``from_trajectory`` also reads trajectories other programs wrote: the leading system and user
steps are the task's input, the rest the response; ``extra.reward`` is the reward, and a
trajectory without one is a failed rollout (``failure.kind`` ``invalid_input``) rather than
a silent 0.
"""

from __future__ import annotations

import copy
from importlib import metadata
from typing import Any, Final, TypeGuard

import orjson

from palaestra.types import Failure, FailureKind, JsonDict, producers_of
from palaestra.wire.protocol import failure_fields
from palaestra.wire.rows import (
    AGENT_REF,
    FACTS,
    FAILURE,
    PARAMS,
    RESPONSE,
    REWARD,
    REWARD_COMPONENTS,
    ROLLOUT_INDEX,
    STEP_REWARDS,
    TASK_INDEX,
)

ATIF_VERSION: Final = "ATIF-v1.7"
KEY: Final = "palaestra"
"""The key of palaestra's own facts in an ``extra`` object."""
TOKEN_FIELDS: Final = ("prompt_token_ids", "generation_token_ids", "generation_log_probs")
ROOT_FIELDS: Final = (REWARD, REWARD_COMPONENTS, STEP_REWARDS, FAILURE)
"""Row fields written as the root ``extra``'s own (not under ``palaestra``)."""
FACT_FIELDS: Final = ("policy_versions", "producers")
"""``_palaestra`` facts written as the root ``extra``'s own."""
UNSCORED: Final = "the trajectory records no reward (extra.reward)"

_INPUT, _OUTPUT = "input", "output"
_POLICY_KINDS: Final = frozenset({"reasoning", "message", "function_call", "other"})


def is_trajectory(document: object) -> bool:
    """Whether ``document`` (a parsed JSON value) is an ATIF trajectory."""
    return (
        isinstance(document, dict)
        and isinstance(document.get("schema_version"), str)
        and document["schema_version"].startswith("ATIF-")
        and isinstance(document.get("steps"), list)
    )


# --- rows to trajectories --------------------------------------------------------------------


def to_trajectory(row: JsonDict) -> JsonDict:
    """``row`` (a rollout or a failure row) as one ATIF trajectory (see the module docstring)."""
    rest = copy.deepcopy(row)
    params = rest.get(PARAMS)
    response = rest.pop(RESPONSE, None)
    ours: JsonDict = {}
    input_items: list[Any] = []
    if isinstance(params, dict) and isinstance(params.get("input"), list):
        input_items = params.pop("input")
        ours["input"] = True
    elif isinstance(params, dict) and isinstance(params.get("input"), str):
        input_items = [{"role": "user", "content": params["input"]}]
    output: list[Any] = []
    if isinstance(response, dict) and isinstance(response.get("output"), list):
        output = response.pop("output")
        ours["output"] = True
    if response is not None or RESPONSE in row:
        ours[RESPONSE] = response
    facts: JsonDict = rest[FACTS] if isinstance(rest.get(FACTS), dict) else {}
    producers = producers_of(output, facts.get("producers"))

    steps = _steps(input_items, [_INPUT] * len(input_items), _INPUT)
    ours["input_steps"] = len(steps)
    steps += _steps(output, producers, _OUTPUT)
    if not steps:
        steps = [_placeholder(row)]
    for number, step in enumerate(steps, start=1):
        step["step_id"] = number

    extra: JsonDict = {field: rest.pop(field) for field in ROOT_FIELDS if field in rest}
    extra.update({field: facts.pop(field) for field in FACT_FIELDS if field in facts})
    if output and "producers" not in extra:  # the row did not record them: say them anyway
        extra["producers"], ours["derived_producers"] = producers, True
    ours["row"] = rest
    extra[KEY] = ours
    trajectory: JsonDict = {
        "schema_version": ATIF_VERSION,
        "session_id": _session_id(row),
        "agent": _agent(row, response),
        "steps": steps,
    }
    final = _final_metrics(response, len(steps))
    if final:
        trajectory["final_metrics"] = final
    trajectory["extra"] = extra
    return trajectory


def _session_id(row: JsonDict) -> str:
    return f"task-{row.get(TASK_INDEX)}-rollout-{row.get(ROLLOUT_INDEX)}"


def _agent(row: JsonDict, response: Any) -> JsonDict:
    ref = row.get(AGENT_REF)
    name = ref.get("name") if isinstance(ref, dict) else None
    agent: JsonDict = {"name": str(name or "palaestra"), "version": _version()}
    if isinstance(response, dict):
        if isinstance(response.get("model"), str):
            agent["model_name"] = response["model"]
        tools = response.get("tools")
    else:
        tools = None
    if not tools and isinstance(row.get(PARAMS), dict):
        tools = row[PARAMS].get("tools")
    if isinstance(tools, list) and all(isinstance(tool, dict) for tool in tools) and tools:
        agent["tool_definitions"] = tools
    return agent


def _version() -> str:
    try:
        return metadata.version("palaestra")
    except metadata.PackageNotFoundError:
        return "unknown"


def _final_metrics(response: Any, steps: int) -> JsonDict:
    final: JsonDict = {"total_steps": steps}
    usage = response.get("usage") if isinstance(response, dict) else None
    if isinstance(usage, dict):
        for ours, theirs in (("input_tokens", "prompt"), ("output_tokens", "completion")):
            if _is_int(usage.get(ours)):
                final[f"total_{theirs}_tokens"] = usage[ours]
        details = usage.get("input_tokens_details")
        if isinstance(details, dict) and _is_int(details.get("cached_tokens")):
            final["total_cached_tokens"] = details["cached_tokens"]
    return final


def _placeholder(row: JsonDict) -> JsonDict:
    failure = row.get(FAILURE)
    reason = failure.get("reason") if isinstance(failure, dict) else None
    return {
        "source": "system",
        "message": f"(no trajectory: {reason or 'the row has none'})",
        "extra": {KEY: {"placeholder": True}},
    }


class _Group:
    """Consecutive items that make one step: its source, and whether it is still open."""

    def __init__(self, source: str, where: str) -> None:
        self.source, self.where = source, where
        self.items: list[Any] = []
        self.kinds: list[str] = []
        self.closed = False


def _steps(items: list[Any], producers: list[str], where: str) -> list[JsonDict]:
    groups: list[_Group] = []
    for item, producer in zip(items, producers, strict=True):
        kind = _kind(item)
        last = groups[-1] if groups else None
        if not _joins(last, kind, item, producer, where):
            last = _Group(_source(kind), where)
            groups.append(last)
        assert last is not None
        last.items.append(item)
        last.kinds.append(kind)
        if isinstance(item, dict) and "generation_token_ids" in item:
            last.closed = True
    return [_step(group) for group in groups]


def _kind(item: Any) -> str:
    """What an item is, as a step sees it."""
    if not isinstance(item, dict):
        return "other"
    kind = item.get("type", "message")
    if kind == "message":
        role = item.get("role")
        if role in ("system", "developer"):
            return "system"
        return "user" if role == "user" else "message"
    if kind in ("reasoning", "function_call", "function_call_output"):
        return str(kind)
    return "other"


def _source(kind: str) -> str:
    return kind if kind in ("system", "user") else "agent"


def _joins(last: _Group | None, kind: str, item: Any, producer: str, where: str) -> bool:
    if last is None or last.source != "agent" or last.where != where:
        return False
    observed = "function_call_output" in last.kinds or "user" in last.kinds
    if kind == "function_call_output":
        calls = {
            _get(i, "call_id")
            for i, k in zip(last.items, last.kinds, strict=True)
            if k == "function_call"
        }
        return _get(item, "call_id") in calls
    if kind == "user" and producer == "environment" and where == _OUTPUT:  # an observation
        return any(k in _POLICY_KINDS for k in last.kinds)
    if kind in ("system", "user") or last.closed or observed:
        return False
    if kind in ("reasoning", "message"):  # a second one, or one after the calls: a new step
        return kind not in last.kinds and "function_call" not in last.kinds
    return kind == "function_call" or kind == "other"


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else None


def _step(group: _Group) -> JsonDict:
    items, kinds = group.items, group.kinds
    if group.source != "agent":
        step: JsonDict = {"source": group.source, "message": _text(items[0])}
    else:
        step = {"source": "agent", "message": ""}
        reasoning = [
            _reasoning_text(i) for i, k in zip(items, kinds, strict=True) if k == "reasoning"
        ]
        messages = [_text(i) for i, k in zip(items, kinds, strict=True) if k == "message"]
        step["message"] = "\n".join(messages)
        if reasoning:
            step["reasoning_content"] = "\n".join(reasoning)
        calls = [_tool_call(i) for i, k in zip(items, kinds, strict=True) if k == "function_call"]
        if calls:
            step["tool_calls"] = calls
        results = [
            _result(i, k)
            for i, k in zip(items, kinds, strict=True)
            if k in ("function_call_output", "user")
        ]
        if results:
            step["observation"] = {"results": results}
        policy = [i for i, k in zip(items, kinds, strict=True) if k in _POLICY_KINDS]
        if group.where == _OUTPUT:
            step["llm_call_count"] = 1 if policy else 0
            metrics = _metrics(policy[-1]) if policy else None
            if metrics:
                step["metrics"] = metrics
    residual = _residual(items, _items_of(step, group.where))
    if residual is not None:
        step["extra"] = {KEY: residual}
    return step


def _text(item: Any) -> str:
    content = _get(item, "content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_part_text(part) for part in content)
    return ""


def _part_text(part: Any) -> str:
    if not isinstance(part, dict):
        return ""
    text = part.get("text", part.get("refusal"))
    return text if isinstance(text, str) else ""


def _reasoning_text(item: Any) -> str:
    summary = _get(item, "summary")
    if isinstance(summary, list) and summary:
        return "\n".join(_part_text(part) for part in summary)
    return _text(item)


def _tool_call(item: JsonDict) -> JsonDict:
    raw = item.get("arguments")
    try:
        arguments = orjson.loads(raw) if isinstance(raw, str | bytes) else raw
    except orjson.JSONDecodeError:
        arguments = None
    return {
        "tool_call_id": str(item.get("call_id", "")),
        "function_name": str(item.get("name", "")),
        "arguments": arguments if isinstance(arguments, dict) else {},
    }


def _result(item: Any, kind: str) -> JsonDict:
    if kind == "user":
        return {"content": _text(item)}
    output = _get(item, "output")
    result: JsonDict = {"source_call_id": str(_get(item, "call_id"))}
    result["content"] = output if isinstance(output, str) else _text({"content": output})
    return result


def _metrics(item: Any) -> JsonDict | None:
    if not isinstance(item, dict) or "generation_token_ids" not in item:
        return None
    prompt, generated = item.get("prompt_token_ids"), item.get("generation_token_ids")
    log_probs = item.get("generation_log_probs")
    metrics: JsonDict = {}
    if _ints(prompt):
        metrics["prompt_tokens"], metrics["prompt_token_ids"] = len(prompt), prompt
    if _ints(generated):
        metrics["completion_tokens"], metrics["completion_token_ids"] = len(generated), generated
    if isinstance(log_probs, list) and all(_is_number(v) for v in log_probs):
        metrics["logprobs"] = log_probs
    return metrics or None


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _ints(value: Any) -> TypeGuard[list[int]]:
    return isinstance(value, list) and all(_is_int(v) for v in value)


def _residual(original: list[Any], rebuilt: list[JsonDict]) -> JsonDict | None:
    """What turns ``rebuilt`` back into ``original``: a patch per item, or the items."""
    if len(original) != len(rebuilt) or not all(isinstance(item, dict) for item in original):
        return {"items": original}
    patches: list[JsonDict | None] = []
    for before, after in zip(original, rebuilt, strict=True):
        changed = {k: v for k, v in before.items() if k not in after or after[k] != v}
        gone = [k for k in after if k not in before]
        patch: JsonDict = {}
        if changed:
            patch["set"] = changed
        if gone:
            patch["unset"] = gone
        patches.append(patch or None)
    if not any(patches):
        return None
    return {"patch": patches}


# --- trajectories to rows --------------------------------------------------------------------


def _items_of(step: JsonDict, where: str) -> list[JsonDict]:
    """The items a step's standard fields say, before its ``extra.palaestra`` is applied."""
    source, message = step.get("source"), _message_text(step.get("message"))
    if source in ("system", "user"):
        if where == _INPUT:
            return [{"role": source, "content": message}]
        return [{"type": "message", "role": source, "content": message}]
    items: list[JsonDict] = []
    reasoning = step.get("reasoning_content")
    if isinstance(reasoning, str):
        summary = [{"type": "summary_text", "text": reasoning}]
        items.append({"type": "reasoning", "summary": summary})
    if message:
        if where == _INPUT:
            items.append({"role": "assistant", "content": message})
        else:
            part = {"type": "output_text", "text": message, "annotations": []}
            items.append(
                {"type": "message", "role": "assistant", "status": "completed", "content": [part]}
            )
    for call in step.get("tool_calls") or []:
        items.append(
            {
                "type": "function_call",
                "call_id": call.get("tool_call_id"),
                "name": call.get("function_name"),
                "arguments": orjson.dumps(call.get("arguments", {})).decode(),
                "status": "completed",
            }
        )
    metrics = step.get("metrics")
    if items and isinstance(metrics, dict) and "completion_token_ids" in metrics:
        items[-1]["prompt_token_ids"] = metrics.get("prompt_token_ids", [])
        items[-1]["generation_token_ids"] = metrics["completion_token_ids"]
        items[-1]["generation_log_probs"] = metrics.get("logprobs", [])
    observation = step.get("observation")
    for result in observation.get("results", []) if isinstance(observation, dict) else []:
        content = _message_text(result.get("content"))
        if result.get("source_call_id") is None:
            items.append({"type": "message", "role": "user", "content": content})
        else:
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": result["source_call_id"],
                    "output": content,
                    "id": None,
                    "status": "completed",
                }
            )
    return items


def _message_text(message: Any) -> str:
    if isinstance(message, str):
        return message
    if isinstance(message, list):
        return "".join(_part_text(part) for part in message)
    return ""


def step_items(step: JsonDict, where: str) -> list[Any]:
    """The Responses items of one step: its fields' items, with its ``extra.palaestra`` applied."""
    extra = step.get("extra")
    ours = extra.get(KEY) if isinstance(extra, dict) else None
    if not isinstance(ours, dict):
        return _items_of(step, where)
    if ours.get("placeholder"):
        return []
    if isinstance(ours.get("items"), list):
        return copy.deepcopy(ours["items"])
    items: list[Any] = _items_of(step, where)
    patches = ours.get("patch")
    if isinstance(patches, list) and len(patches) == len(items):
        for item, patch in zip(items, patches, strict=True):
            if isinstance(patch, dict):
                for key in patch.get("unset", []):
                    item.pop(key, None)
                item.update(copy.deepcopy(patch.get("set", {})))
    return items


def from_trajectory(trajectory: JsonDict, *, task_index: int = 0) -> JsonDict:
    """The rollout row ``trajectory`` records (a failure row when it records no reward).

    ``task_index`` numbers a trajectory another program wrote (one that has no
    ``extra.palaestra``); a trajectory ``to_trajectory`` wrote carries its own.
    """
    steps = [step for step in trajectory.get("steps", []) if isinstance(step, dict)]
    extra = trajectory.get("extra") if isinstance(trajectory.get("extra"), dict) else {}
    assert isinstance(extra, dict)
    ours = extra.get(KEY)
    if not isinstance(ours, dict) or not isinstance(ours.get("row"), dict):
        return _foreign_row(trajectory, steps, extra, task_index)
    input_steps = ours.get("input_steps", 0)
    inputs: list[Any] = []
    output: list[Any] = []
    for position, step in enumerate(steps):
        where = _INPUT if position < input_steps else _OUTPUT
        (inputs if where == _INPUT else output).extend(step_items(step, where))
    row: JsonDict = copy.deepcopy(ours["row"])
    if ours.get("input") and isinstance(row.get(PARAMS), dict):
        row[PARAMS]["input"] = inputs
    if RESPONSE in ours:
        response = copy.deepcopy(ours[RESPONSE])
        if ours.get("output") and isinstance(response, dict):
            response["output"] = output
        row[RESPONSE] = response
    row.update({field: extra[field] for field in ROOT_FIELDS if field in extra})
    derived = bool(ours.get("derived_producers"))
    facts = row.get(FACTS)
    recorded = [f for f in FACT_FIELDS if f in extra and not (f == "producers" and derived)]
    if isinstance(facts, dict):
        facts.update({field: extra[field] for field in recorded})
    return row


def _foreign_row(
    trajectory: JsonDict, steps: list[JsonDict], extra: JsonDict, task_index: int
) -> JsonDict:
    """A trajectory another program wrote: leading system and user steps are the input."""
    leading = 0
    while leading < len(steps) and steps[leading].get("source") in ("system", "user"):
        leading += 1
    inputs = [item for step in steps[:leading] for item in _items_of(step, _INPUT)]
    output: list[Any] = []
    producers: list[str] = []
    for step in steps[leading:]:
        items = _items_of(step, _OUTPUT)
        output += items
        producers += [_producer_of(step, item) for item in items]
    agent = trajectory.get("agent") if isinstance(trajectory.get("agent"), dict) else {}
    assert isinstance(agent, dict)
    params: JsonDict = {"input": inputs}
    if isinstance(agent.get("tool_definitions"), list):
        params["tools"] = agent["tool_definitions"]
    response: JsonDict = {
        "id": str(trajectory.get("trajectory_id") or trajectory.get("session_id") or ""),
        "model": agent.get("model_name"),
        "output": output,
    }
    final = trajectory.get("final_metrics")
    if isinstance(final, dict):
        prompt, completion = final.get("total_prompt_tokens"), final.get("total_completion_tokens")
        if _is_int(prompt) and _is_int(completion):
            response["usage"] = {
                "input_tokens": prompt,
                "output_tokens": completion,
                "total_tokens": prompt + completion,
            }
    row: JsonDict = {
        PARAMS: params,
        AGENT_REF: {"type": "responses_api_agents", "name": str(agent.get("name", "atif"))},
        TASK_INDEX: task_index,
        ROLLOUT_INDEX: 0,
        RESPONSE: response,
        FACTS: {"producers": producers},
    }
    reward = extra.get(REWARD)
    if _is_number(reward):
        row[REWARD] = float(reward)
        for field in (REWARD_COMPONENTS, STEP_REWARDS):
            if field in extra:
                row[field] = extra[field]
    else:
        row.update(failure_fields(Failure(FailureKind.INVALID_INPUT, UNSCORED)))
    return row


def _producer_of(step: JsonDict, item: JsonDict) -> str:
    if step.get("source") == "user":
        return "user"
    if item.get("type") == "function_call_output":
        return "tool"
    return "environment" if item.get("role") == "user" else "policy"
