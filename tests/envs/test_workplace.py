from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from palaestra import LocalEnvironmentClient, ToolCallingAgent
from palaestra.collection.generated import write_generated_tasks
from palaestra.collection.tasks import read_tasks
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.workplace.environment import Workplace
from palaestra.envs.workplace.scenarios import SCENARIOS
from palaestra.envs.workplace.schedule import free_slots
from palaestra.envs.workplace.store import office
from palaestra.errors import ToolCallRejected
from palaestra.run.reverify import reverify
from palaestra.types import FailureKind, JsonDict, Verdict
from tests.support.fake_model import FakeModel, call, outputs_so_far, response, say


def example_tasks() -> list[JsonDict]:
    entry = find_environment("workplace")
    assert entry.example_tasks is not None
    lines = list(read_tasks(entry.example_tasks))
    assert all(line.error is None for line in lines)
    return [line.row for line in lines]


def task_for(scenario: str) -> JsonDict:
    return next(t for t in example_tasks() if t["scenario"] == scenario)


def doing(calls: list[JsonDict], *, together: bool = False) -> FakeModel:
    """Makes the calls one per turn (or all in one turn), then says it is done."""

    def as_item(index: int, c: JsonDict) -> JsonDict:
        return call(c["name"], orjson.dumps(c["arguments"]).decode(), f"c{index}")

    def script(params: JsonDict) -> JsonDict:
        done = len(outputs_so_far(params))
        if together:
            return (
                response(*(as_item(i, c) for i, c in enumerate(calls))) if not done else say("ok")
            )
        return response(as_item(done, calls[done])) if done < len(calls) else say("Done.")

    return FakeModel(script)


async def run(task: JsonDict, calls: list[JsonDict], **options: bool) -> tuple[Verdict, JsonDict]:
    env = LocalEnvironmentClient(Workplace())
    result = await ToolCallingAgent(max_steps=len(calls) + 2).run(
        task, env, doing(calls, **options)
    )
    assert result.failure is None and result.verdict is not None and result.response is not None
    assert len(env.sessions) == 0
    return result.verdict, result.response


def test_a_toolkit_of_15_to_30_documented_tools() -> None:
    env = Workplace()
    tools = env.tools()
    assert 15 <= len(tools) <= 30
    assert len(env.write_tools()) == 16
    for spec in tools:
        assert spec["description"]
        for name, prop in spec["parameters"]["properties"].items():
            assert prop.get("description"), (spec["name"], name)


async def test_every_scenario_scores_one_with_its_gold_calls() -> None:
    tasks = list(Workplace().generate_tasks(2 * len(SCENARIOS), seed=5))
    assert {t["scenario"] for t in tasks} == set(SCENARIOS)
    for task in tasks:
        verdict, _ = await run(task, task["gold_calls"])
        assert verdict.reward == 1.0, (task["scenario"], verdict.metrics)
        assert verdict.metrics["writes"] == verdict.metrics["gold_writes"]


async def test_order_of_independent_changes_and_wording_do_not_matter() -> None:
    churn = task_for("churn")
    reverse = list(reversed(churn["gold_calls"]))
    assert (await run(churn, reverse, together=True))[0].reward == 1.0
    reply = task_for("reply_latest")
    [gold] = reply["gold_calls"]
    other_words = [{**gold, "arguments": {**gold["arguments"], "body": "Sure, on it!"}}]
    assert (await run(reply, other_words))[0].reward == 1.0  # the body is free text
    meeting = task_for("schedule_meeting")
    [create] = meeting["gold_calls"]
    args = create["arguments"]
    shouted = {**args, "title": args["title"].upper(), "start_time": args["start_time"]}
    shouted["attendees"] = [a.upper() for a in args["attendees"]]
    assert (await run(meeting, [{**create, "arguments": shouted}]))[0].reward == 1.0


async def test_missing_extra_or_wrong_changes_score_zero() -> None:
    churn = task_for("churn")
    verdict, _ = await run(churn, churn["gold_calls"][:1])
    assert verdict.reward == 0.0 and verdict.metrics["differing_tables"] == "deals"
    reply = task_for("reply_latest")
    [gold] = reply["gold_calls"]
    emails = office(reply["office_seed"]).tables["emails"]
    wrong_email = next(
        e[0] for e in emails if e[1] == "inbox" and e[0] != gold["arguments"]["email_id"]
    )
    extra = [gold, {"name": "archive_email", "arguments": {"email_id": wrong_email}}]
    verdict, _ = await run(reply, extra)
    assert verdict.reward == 0.0 and verdict.metrics["differing_rows"] == 2
    wrong = [
        {"name": "reply_to_email", "arguments": {**gold["arguments"], "email_id": wrong_email}}
    ]
    assert (await run(reply, wrong))[0].reward == 0.0
    deal = task_for("deal_stage")
    [move] = deal["gold_calls"]
    lost = [{**move, "arguments": {**move["arguments"], "stage": "lost"}}]
    assert (await run(deal, lost))[0].reward == 0.0
    assert (await run(deal, []))[0].reward == 0.0  # doing nothing


async def test_malformed_calls_are_told_to_the_model_and_change_nothing() -> None:
    task = task_for("schedule_meeting")
    [create] = task["gold_calls"]
    bad = [
        {"name": "create_event", "arguments": {**create["arguments"], "date": "next Tuesday"}},
        {"name": "create_event", "arguments": {**create["arguments"], "start_time": "25:00"}},
        {"name": "create_event", "arguments": {**create["arguments"], "attendees": ["Bruno"]}},
        {"name": "create_event", "arguments": {**create["arguments"], "duration_minutes": "long"}},
        {"name": "cancel_event", "arguments": {"event_id": 2**62}},
        {"name": "no_such_tool", "arguments": {}},
    ]
    verdict, trajectory = await run(task, bad)
    outputs = [i["output"] for i in trajectory["output"] if i["type"] == "function_call_output"]
    assert len(outputs) == len(bad) and all(o.startswith("Error:") for o in outputs)
    assert "is not a date" in outputs[0] and "is not a time" in outputs[1]
    assert "not an email address" in outputs[2] and "invalid arguments" in outputs[3]
    assert verdict.reward == 0.0 and verdict.metrics["writes"] == 0
    verdict, _ = await run(task, [*bad, create])  # the right call after the wrong ones
    assert verdict.reward == 1.0


async def test_hostile_inputs_are_harmless() -> None:
    env = LocalEnvironmentClient(Workplace())
    session = await env.seed(task_for("reply_latest"))
    injected = await env.call_tool(
        session, "list_emails", {"query": "' OR 1=1; DROP TABLE emails; --"}
    )
    assert orjson.loads(injected) == []
    assert orjson.loads(await env.call_tool(session, "list_emails", {"query": "%"})) == []
    everything = orjson.loads(await env.call_tool(session, "list_emails", {"query": ""}))
    assert 0 < len(everything) <= 25
    for name, arguments, message in [
        ("read_email", {"email_id": 10**40}, "no email"),
        ("read_email", {"email_id": -1}, "no email"),
        ("list_deals", {"customer_id": 10**30}, "out of range"),
        ("send_email", {"to": ["a@b.test"] * 51, "subject": "s", "body": "b"}, "at most 50"),
        ("send_email", {"to": ["a@b.test"], "subject": "s" * 300, "body": "b"}, "too long"),
        ("send_email", {"to": ["a@b.test"], "subject": "s", "body": "   "}, "must not be empty"),
        ("add_note", {"customer_id": 1, "note": "x" * 6000}, "too long"),
        ("create_deal", {"customer_id": 1, "title": "t", "amount": 10**20}, "below a trillion"),
        ("update_deal_stage", {"deal_id": 1, "stage": "bribed"}, "invalid arguments"),
        ("update_customer", {"customer_id": 1}, "nothing to change"),
        ("update_customer", {"customer_id": 1, "phone": "call me"}, "not a phone number"),
    ]:
        with pytest.raises(ToolCallRejected, match=message):
            await env.call_tool(session, name, arguments)
    assert env.sessions.get(session).state.log == []
    await env.close(session)


async def test_sessions_are_isolated_and_closed() -> None:
    env = LocalEnvironmentClient(Workplace())
    task = task_for("deal_stage")
    [move] = task["gold_calls"]
    first, second = await env.seed(task), await env.seed(task)
    await env.call_tool(first, move["name"], move["arguments"])
    deal_id = move["arguments"]["deal_id"]
    stages = []
    for session in (first, second):
        deals = orjson.loads(await env.call_tool(session, "list_deals", {}))
        stages.append(next(d["stage"] for d in deals if d["id"] == deal_id))
    assert stages[0] == move["arguments"]["stage"] != stages[1]
    state = env.sessions.get(first).state
    await env.close(first)
    with pytest.raises(Exception, match="closed"):
        state.db.execute("SELECT 1")
    await env.close(second)


async def test_reverification_replays_to_the_same_verdict(tmp_path: Path) -> None:
    task = task_for("cancel_and_notify")
    verdict, trajectory = await run(task, task["gold_calls"])
    wrong, wrong_trajectory = await run(task, task["gold_calls"][:1])
    path = tmp_path / "rollouts.jsonl"
    path.write_bytes(
        orjson.dumps({**task, "response": trajectory, "reward": verdict.reward})
        + b"\n"
        + orjson.dumps({**task, "response": wrong_trajectory, "reward": wrong.reward})
        + b"\n"
    )
    summary = await reverify(LocalEnvironmentClient(Workplace()), path)
    assert summary.rows == 2 and summary.unchanged == 2
    assert (verdict.reward, wrong.reward) == (1.0, 0.0)


async def test_a_broken_gold_call_is_a_failure_not_zero() -> None:
    task = {**task_for("deal_stage"), "gold_calls": [{"name": "cancel_event", "arguments": {}}]}
    verdict, _ = await run(task, [])
    assert verdict.failure is not None and verdict.failure.kind == FailureKind.INVALID_INPUT
    task["gold_calls"] = [{"name": "list_deals", "arguments": {}}]  # not a state change
    verdict, _ = await run(task, [])
    assert verdict.failure is not None and "not a state-changing tool" in verdict.failure.reason


def test_free_slots_respect_working_hours_and_meetings() -> None:
    assert free_slots([], 60)[0] == "09:00" and free_slots([], 60)[-1] == "16:00"
    busy = [("09:00", 60), ("10:30", 30)]
    assert free_slots(busy, 60)[:2] == ["11:00", "11:30"]
    assert free_slots(busy, 30)[:2] == ["10:00", "11:00"]
    assert free_slots([("09:00", 480)], 30) == []


def test_generated_tasks_and_offices_are_seeded(tmp_path: Path) -> None:
    env = Workplace()
    written = write_generated_tasks(env, count=40, seed=1, path=tmp_path / "t.jsonl")
    assert len(written.read_bytes().splitlines()) == 40
    first = list(env.generate_tasks(10, seed=2))
    assert first == list(env.generate_tasks(10, seed=2))
    assert first != list(env.generate_tasks(10, seed=3))
    assert office(7) == office(7) and office(7).tables != office(8).tables
    assert len(example_tasks()) == 5
