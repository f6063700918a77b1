"""The lookup environment: the PIN is only in the tool's result, and only stating it scores."""

from __future__ import annotations

import json

from palaestra import LocalEnvironmentClient, ToolCallingAgent
from palaestra.envs.lookup.environment import Lookup, lookup_task
from palaestra.types import JsonDict
from tests.support.fake_model import FakeModel, call, outputs_so_far, response, say


def agent_that(name: str, reply: str | None) -> FakeModel:
    """Looks ``name`` up, then says ``reply`` (with ``{result}``: the tool's answer); with
    ``reply`` None it never stops looking up."""

    def script(params: JsonDict) -> JsonDict:
        # the tools' answers so far, after the worked example's (call_0) in the prompt
        results = [item for item in outputs_so_far(params) if item["call_id"] != "call_0"]
        if not results or reply is None:
            return response(call("lookup", json.dumps({"name": name}), f"c{len(results)}"))
        return say(reply.format(result=results[-1]["output"]))

    return FakeModel(script)


async def run(task: JsonDict, model: FakeModel, max_steps: int = 4) -> JsonDict:
    result = await ToolCallingAgent(max_steps=max_steps).run(
        task, LocalEnvironmentClient(Lookup()), model
    )
    assert result.verdict is not None
    return {"reward": result.verdict.reward, **result.verdict.metrics}


async def test_stating_the_pin_the_tool_returned_scores_one() -> None:
    task = lookup_task("Rosa Ortiz", "2947")
    outcome = await run(task, agent_that("Rosa Ortiz", "{result}"))
    assert outcome["reward"] == 1.0
    assert outcome["looked_up"] and outcome["found"] and outcome["lookups"] == 1


async def test_a_reply_that_does_not_state_the_pin_scores_zero() -> None:
    task = lookup_task("Rosa Ortiz", "2947")
    outcome = await run(task, agent_that("Rosa Ortiz", "Found it."))
    assert outcome["reward"] == 0.0 and outcome["found"] and outcome["answered"]


async def test_looking_up_someone_else_gets_no_pin_and_scores_zero() -> None:
    task = lookup_task("Rosa Ortiz", "2947")
    outcome = await run(task, agent_that("Max Mustermann", "{result}"))
    assert outcome["reward"] == 0.0 and not outcome["found"]


async def test_a_rollout_that_never_replies_scores_zero_even_after_finding_the_pin() -> None:
    task = lookup_task("Rosa Ortiz", "2947")
    outcome = await run(task, agent_that("Rosa Ortiz", None), max_steps=3)
    assert outcome["reward"] == 0.0
    assert outcome["found"] and not outcome["answered"] and outcome["lookups"] == 3


async def test_the_first_name_alone_or_a_possessive_finds_the_person() -> None:
    task = lookup_task("Rosa Ortiz", "2947")
    for name in ("rosa", "Rosa Ortiz's", "  ROSA   ORTIZ "):
        assert (await run(task, agent_that(name, "{result}")))["reward"] == 1.0


def test_generated_tasks_name_distinct_people_and_keep_the_pin_out_of_the_prompt() -> None:
    tasks = list(Lookup().generate_tasks(500, seed=3))
    assert len({task["name"] for task in tasks}) == 500
    for task in tasks:
        prompt = json.dumps(task["responses_create_params"]["input"])
        assert task["name"] in prompt
        assert len(task["pin"]) == 4 and task["pin"] not in prompt
    assert tasks == list(Lookup().generate_tasks(500, seed=3))
