"""``verify`` on golden and wrong answers: 1 for the first, 0 for the second, no model needed.

A task carries its golden answer in ``golden_response`` (and may carry a wrong one in
``wrong_response``), beside its own fields; the model never sees either. Each is the final
assistant text (a string), a list of Responses output items, or a whole Response (a dict with
``output``). The ``function_call`` items are run as tool calls in a fresh session, in order,
before ``verify`` scores the response, so a stateful environment ends in the state the answer
leaves; their outputs are put in the response as the agent would put them. A call to a tool
the environment does not have stays in the response unrun (function_calling scores the calls
of tools its tasks bring, and never runs them). Without
``wrong_response`` the wrong answer is the text "I do not know." with no tool call.
"""

from __future__ import annotations

import orjson

from palaestra.authoring.report import Check, counted
from palaestra.environment.running.client import LocalEnvironmentClient
from palaestra.errors import PalaestraError, RolloutFailure, ToolCallRejected
from palaestra.types import JsonDict, assistant_message, empty_usage, function_call_output

GOLDEN = "golden_response"
WRONG = "wrong_response"
DEFAULT_WRONG = "I do not know."


class GoldenError(PalaestraError, ValueError):
    """A golden or wrong answer that is not one of the accepted shapes."""


async def check_golden_answers(client: LocalEnvironmentClient, rows: list[JsonDict]) -> Check:
    """Score each task's golden answer (must be 1) and wrong answer (must be 0)."""
    name = "golden answers"
    golden = [(index, row) for index, row in enumerate(rows) if GOLDEN in row]
    if not golden:
        return Check.skipped(name, f"no golden answers (give tasks a '{GOLDEN}' to check verify)")
    problems: list[str] = []
    for index, row in golden:
        for field, wanted in ((GOLDEN, 1.0), (WRONG, 0.0)):
            try:
                items = answer_items(row.get(field, DEFAULT_WRONG))
            except GoldenError as error:
                problems.append(f"task {index}: {field}: {error}")
                continue
            reward, reason = await score(client, row, items)
            what = "the golden answer" if wanted else "a wrong answer"
            if reward is None:
                problems.append(f"task {index}: {what} was not scored ({reason})")
            elif reward != wanted:
                problems.append(f"task {index}: {what} scored {reward:g}, not {wanted:g}")
    if problems:
        return Check.failed(name, "; ".join(problems[:3]), problems=problems)
    return Check.passed(
        name,
        f"verify gives 1 on {counted(len(golden), 'golden answer')} and 0 on wrong ones",
        tasks=len(golden),
    )


async def score(
    client: LocalEnvironmentClient, task: JsonDict, items: list[JsonDict]
) -> tuple[float | None, str]:
    """The reward ``verify`` gives the answer ``items`` in a fresh session of ``task`` (its tool
    calls run first), or None and why it could not be scored."""
    try:
        session = await client.seed(task)
        try:
            output = await _run_calls(client, session, items)
            verdict = await client.verify(session, task, response(output))
        finally:
            await client.close(session)
    except (RolloutFailure, ToolCallRejected) as failure:
        return None, str(failure)
    if verdict.failure is not None:
        return None, f"{verdict.failure.kind}: {verdict.failure.reason}"
    return float(verdict.reward), ""


async def _run_calls(
    client: LocalEnvironmentClient, session: str, items: list[JsonDict]
) -> list[JsonDict]:
    output: list[JsonDict] = []
    tools = {tool["name"] for tool in client.tools()}
    for item in items:
        output.append(item)
        if item.get("type") == "function_call" and item["name"] in tools:
            arguments = orjson.loads(item["arguments"])
            text = await client.call_tool(session, item["name"], arguments)
            output.append(function_call_output(item["call_id"], text))
    return output


def answer_items(answer: object) -> list[JsonDict]:
    """A golden or wrong answer as Responses output items (``GoldenError`` if it is none)."""
    if isinstance(answer, str):
        return [assistant_message(answer)]
    if isinstance(answer, dict):
        if not isinstance(answer.get("output"), list):
            raise GoldenError("a Response object needs an 'output' list")
        answer = answer["output"]
    if not isinstance(answer, list):
        raise GoldenError("must be a string, a list of output items or a Response object")
    return [_item(item, number) for number, item in enumerate(answer)]


def _item(item: object, number: int) -> JsonDict:
    if not isinstance(item, dict) or not isinstance(item.get("type"), str):
        raise GoldenError(f"item {number} must be an object with a 'type'")
    if item["type"] != "function_call":
        return dict(item)
    if not isinstance(item.get("name"), str):
        raise GoldenError(f"item {number}: a function_call needs a 'name'")
    arguments = item.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = orjson.loads(arguments or "{}")
        except orjson.JSONDecodeError as error:
            raise GoldenError(f"item {number}: arguments are not JSON ({error})") from None
    if not isinstance(arguments, dict):
        raise GoldenError(f"item {number}: arguments must be a JSON object")
    call_id = str(item.get("call_id") or f"call_golden_{number}")
    return {
        "type": "function_call",
        "id": item.get("id") or f"fc_golden_{number}",
        "call_id": call_id,
        "name": item["name"],
        "arguments": orjson.dumps(arguments).decode(),
        "status": "completed",
    }


def response(output: list[JsonDict]) -> JsonDict:
    """A completed Response holding ``output``, as the agent would hand it to ``verify``."""
    return {
        "id": "resp_golden",
        "object": "response",
        "model": "golden",
        "status": "completed",
        "output": output,
        "usage": empty_usage(),
    }
