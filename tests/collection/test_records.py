"""The rows a run writes: what a rollout row's ``_palaestra`` facts say about its calls."""

from __future__ import annotations

from typing import cast

from palaestra.collection.records import rollout_row
from palaestra.types import AgentResult, JsonDict, Verdict
from palaestra.wire.rows import TaskRow

DISPATCHED = cast(TaskRow, {"responses_create_params": {"input": "hi"}, "_ng_task_index": 0})


def _facts(result: AgentResult) -> JsonDict:
    row = cast(JsonDict, rollout_row(DISPATCHED, result, attempt=1))
    facts: JsonDict = row["_palaestra"]
    return facts


def test_a_row_says_how_many_branches_its_gateway_calls_form_and_how_many_were_retokenised() -> (
    None
):
    compacted = AgentResult(
        response={"output": []}, verdict=Verdict(reward=0.0), model_calls=4, branches=3
    )
    assert (_facts(compacted)["branches"], _facts(compacted)["retokenized"]) == (3, 0)
    own_loop = AgentResult(response={"output": []}, verdict=Verdict(reward=0.0), model_calls=4)
    assert "branches" not in _facts(own_loop)  # an agent that did not say: nothing made up


def test_a_row_writes_a_conformed_response_as_it_is_and_conforms_any_other() -> None:
    made = {"id": "resp_1", "output": [{"type": "message", "role": "user", "content": "hi"}]}
    conformed = AgentResult(response=made, verdict=Verdict(reward=1.0), conformed=True)
    row = cast(JsonDict, rollout_row(DISPATCHED, conformed, attempt=1))
    assert row["response"] is made  # run_episode conformed it: not walked again
    other = AgentResult(response=dict(made), verdict=Verdict(reward=1.0))  # e.g. a remote agent's
    row = cast(JsonDict, rollout_row(DISPATCHED, other, attempt=1))
    assert row["response"]["object"] == "response" and row["response"]["output"][0]["id"]
