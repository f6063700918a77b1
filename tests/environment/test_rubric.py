"""Composable rewards: weighted criteria, gates, a judge asked in both orders, its cache."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from palaestra.environment.context import EnvironmentContext
from palaestra.environment.judge import DIFFERENT, EQUIVALENT, JudgeCache, JudgeModels
from palaestra.environment.rubric import (
    GATE_METRIC,
    Rubric,
    Scored,
    Submission,
    criterion,
    equivalence,
    gate,
)
from palaestra.environment.sessions import Session
from palaestra.errors import InvalidTask, ModelError
from palaestra.types import FailureKind, JsonDict, Verdict, assistant_message
from tests.support.fake_model import FakeModel, say
from tests.support.scripted_model import ScriptedModelServer, text_response

TASK: JsonDict = {"question": "What is the capital of Australia?", "expected_answer": "Canberra"}


def reply(text: str) -> JsonDict:
    return {"output": [assistant_message(text)]}


async def score(rubric: Rubric, answer: str, task: JsonDict = TASK) -> Verdict:
    return await rubric.score(Session("s", task, {}), reply(answer))


def exact(submission: Submission) -> bool:
    return submission.answer.lower() == str(submission.task["expected_answer"]).lower()


async def brevity(submission: Submission) -> Scored:
    await asyncio.sleep(0)
    words = len(submission.answer.split())
    return Scored(1.0 if words <= 3 else 0.25, {"words": words})


def judge_saying(labels: dict[str, str]) -> FakeModel:
    """A judge replying by which answer comes first in the prompt."""

    def script(params: JsonDict) -> JsonDict:
        prompt = params["input"][1]["content"]
        first = prompt.split("Answer 1:\n", 1)[1].split("\n\nAnswer 2:", 1)[0]
        return say(labels[first])

    return FakeModel(script)


async def test_the_reward_is_the_weighted_mean_and_each_part_a_component() -> None:
    rubric = Rubric(criterion("exact", exact, weight=3), criterion("brief", brevity))
    right = await score(rubric, "<think>hmm</think>canberra")
    assert right.failure is None and right.reward == 1.0
    assert right.reward_components == {"exact": 1.0, "brief": 1.0}
    assert right.metrics == {"brief/words": 1}
    wordy = await score(rubric, "Sydney is what I would say here")
    assert wordy.reward == pytest.approx((3 * 0.0 + 1 * 0.25) / 4)
    assert wordy.reward_components == {"exact": 0.0, "brief": 0.25}
    summed = Rubric(
        criterion("exact", exact, weight=3), criterion("brief", brevity), normalize=False
    )
    assert (await score(summed, "Canberra")).reward == 4.0


async def test_a_failed_gate_scores_zero_and_runs_nothing_after_it() -> None:
    asked: list[str] = []

    def costly(submission: Submission) -> float:
        asked.append(submission.answer)
        return 1.0

    rubric = Rubric(criterion("costly", costly), gate("answered", lambda s: bool(s.answer)))
    empty = await score(rubric, "  ")
    assert (empty.reward, empty.reward_components) == (0.0, {"answered": 0.0})
    assert empty.metrics[GATE_METRIC] == "answered" and asked == []
    passed = await score(rubric, "Canberra")
    assert passed.reward == 1.0 and asked == ["Canberra"]
    assert passed.reward_components == {"answered": 1.0, "costly": 1.0}
    only_gates = Rubric(gate("short", lambda s: Scored(0.6), threshold=0.5))
    assert (await score(only_gates, "x")).reward == 1.0


async def test_a_part_that_cannot_score_is_a_failure_naming_it_never_a_number() -> None:
    def needs_field(submission: Submission) -> float:
        raise InvalidTask("the task has no 'rubric_key'")

    missing = await score(Rubric(criterion("keyed", needs_field)), "Canberra")
    assert missing.failure is not None and missing.failure.kind is FailureKind.INVALID_INPUT
    assert missing.failure.reason == "rubric part 'keyed': the task has no 'rubric_key'"
    nan = await score(Rubric(criterion("broken", lambda s: math.nan)), "Canberra")
    assert nan.failure is not None and nan.failure.kind is FailureKind.VERIFIER_ERROR
    assert "rubric part 'broken' scored nan" in nan.failure.reason


def test_a_rubric_refuses_parts_it_could_not_add_up() -> None:
    with pytest.raises(ValueError, match="repeated: a"):
        Rubric(criterion("a", exact), criterion("a", exact))
    with pytest.raises(ValueError, match="weigh nothing"):
        Rubric(criterion("a", exact, weight=0))
    with pytest.raises(ValueError, match="weight -1"):
        Rubric(criterion("a", exact, weight=-1))


async def test_the_judge_is_asked_in_both_orders_over_http() -> None:
    prompts: list[str] = []

    def script(params: JsonDict) -> JsonDict:
        prompts.append(params["input"][-1]["content"])
        return text_response("VERDICT: EQUIVALENT" if "Canberra" in prompts[-1] else "no idea")

    with ScriptedModelServer(script) as server:
        judges = JudgeModels(None, server.url, None)
        rubric = Rubric(equivalence("judged", judges, weight=2), criterion("exact", exact))
        try:
            verdict = await rubric.score(
                Session("s", TASK, {}), reply("It is canberra."), EnvironmentContext()
            )
        finally:
            await judges.aclose()
    assert verdict.failure is None
    assert verdict.reward == pytest.approx(2 / 3)
    assert verdict.reward_components == {"judged": 1.0, "exact": 0.0}
    assert verdict.metrics["judged/labels"] == "EQUIVALENT,EQUIVALENT"
    assert len(prompts) == 2
    assert prompts[0].index("Canberra") < prompts[0].index("It is canberra.")
    assert prompts[1].index("It is canberra.") < prompts[1].index("Canberra")


async def test_a_judge_reply_without_a_label_is_a_failure_over_http() -> None:
    with ScriptedModelServer(lambda params: text_response("Canberra, I believe.")) as server:
        judges = JudgeModels(None, server.url, None)
        try:
            verdict = await Rubric(equivalence("judged", judges)).score(
                Session("s", TASK, {}), reply("Canberra"), EnvironmentContext()
            )
        finally:
            await judges.aclose()
    assert verdict.failure is not None and verdict.failure.kind is FailureKind.VERIFIER_ERROR
    assert verdict.failure.reason.startswith("rubric part 'judged': the judge replied without")
    assert verdict.reward_components is None


async def test_one_judge_call_per_prompt_however_often_it_is_asked() -> None:
    model = judge_saying({"Canberra": "VERDICT: EQUIVALENT", "canberra": "VERDICT: EQUIVALENT"})
    judges = JudgeModels(model, "local", None)
    rubric = Rubric(equivalence("judged", judges))
    first = await score(rubric, "canberra")
    again = await score(rubric, "canberra")
    assert first.reward == again.reward == 1.0
    assert (first.metrics["judged/cached"], again.metrics["judged/cached"]) == (0, 2)
    assert len(model.requests) == 2 and judges.cache.calls == 2
    other = await Rubric(equivalence("judged", judges)).score(
        Session("s", {**TASK, "question": "Capital of Australia?"}, {}), reply("canberra")
    )
    assert other.metrics["judged/cached"] == 0 and len(model.requests) == 4


async def test_rollouts_asking_the_same_thing_at_once_share_one_call() -> None:
    release = asyncio.Event()
    calls: list[str] = []

    class SlowJudge(FakeModel):
        async def respond(self, params: JsonDict) -> JsonDict:
            calls.append(params["input"][1]["content"])
            await release.wait()
            return say("VERDICT: DIFFERENT")

    judges = JudgeModels(SlowJudge(lambda params: say("")), "local", None)
    rubric = Rubric(equivalence("judged", judges, both_orders=False))
    waiting = [asyncio.create_task(score(rubric, "Sydney")) for _ in range(4)]
    await asyncio.sleep(0.01)
    release.set()
    verdicts = await asyncio.gather(*waiting)
    assert [v.reward for v in verdicts] == [0.0] * 4 and len(calls) == 1
    assert sorted(v.metrics["judged/cached"] for v in verdicts) == [0, 1, 1, 1]


async def test_the_cache_forgets_the_least_recent_prompt_past_its_bound() -> None:
    cache = JudgeCache(max_entries=2)
    asked: list[str] = []

    def asker(label: str):  # type: ignore[no-untyped-def]
        async def ask() -> str:
            asked.append(label)
            return label

        return ask

    for key in ("a", "b", "a", "c"):  # "b" is then the least recently used
        await cache.label(("judge", key, 32), asker(key))
    assert len(cache) == 2 and asked == ["a", "b", "c"]
    await cache.label(("judge", "a", 32), asker("a"))
    await cache.label(("judge", "b", 32), asker("b"))
    assert asked == ["a", "b", "c", "b"]


async def test_a_judge_failure_is_not_kept_so_the_next_rollout_asks_again() -> None:
    outcomes = iter([ModelError("the endpoint is down"), "VERDICT: EQUIVALENT"])

    def script(params: JsonDict) -> JsonDict:
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return say(outcome)

    judges = JudgeModels(FakeModel(script), "local", None)
    rubric = Rubric(equivalence("judged", judges, both_orders=False))
    down = await score(rubric, "Canberra")
    assert down.failure is not None and "the judge model failed" in down.failure.reason
    up = await score(rubric, "Canberra")
    assert up.failure is None and up.reward == 1.0 and judges.cache.calls == 2


async def test_a_rollout_waiting_on_a_cancelled_call_asks_the_judge_itself() -> None:
    """A verify cut by its timeout cancels its judge call; one sharing it must not be lost."""
    cache = JudgeCache()
    started, release = asyncio.Event(), asyncio.Event()
    asked: list[str] = []

    async def slow() -> str:
        asked.append("slow")
        started.set()
        await release.wait()
        return EQUIVALENT

    async def quick() -> str:
        asked.append("quick")
        return DIFFERENT

    key = ("judge", "prompt", 32)
    owner = asyncio.create_task(cache.label(key, slow))
    await started.wait()
    waiter = asyncio.create_task(cache.label(key, quick))
    await asyncio.sleep(0)
    owner.cancel()
    assert await waiter == (DIFFERENT, False)
    assert owner.cancelled() and asked == ["slow", "quick"]
    assert await cache.label(key, slow) == (DIFFERENT, True)


async def test_the_rewards_page_example_makes_a_task_without_its_answer_invalid_input() -> None:
    """docs/rewards.md promises ``invalid_input`` for a task without the field a part reads:
    its own example must keep the promise (its ``exact`` part reads ``expected_answer``)."""
    page = (Path(__file__).parents[2] / "docs" / "rewards.md").read_text()
    code = page.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, object] = {}
    exec(compile(code, "docs/rewards.md", "exec"), namespace)  # the page's own code
    environment = namespace["ShortAnswers"]()  # type: ignore[operator]
    session = Session("s", {"question": "Capital of Australia?"}, {})
    verdict = await environment.verify(session, reply("Canberra"))
    assert verdict.failure is not None and verdict.failure.kind is FailureKind.INVALID_INPUT
    assert verdict.failure.reason == "rubric part 'exact': the task has no 'expected_answer'"
