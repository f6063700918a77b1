"""A harness that compacts its history, through ``RolloutSampler`` against a scripted server in
token mode over real HTTP: its rollout is two branches, each a training sequence with the
rollout's reward, every sampled token trained once; and each rollout says which policy
versions served it, their span and its age when the trainer got it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from palaestra.agents import RolloutContext
from palaestra.agents.episode import Conversation, run_episode
from palaestra.agents.registry import AGENTS
from palaestra.agents.tool_calling import call_id_of, parse_arguments, request_params
from palaestra.environment.running.client import EnvironmentClient
from palaestra.models.base import Model
from palaestra.observe.metrics import staleness_families
from palaestra.training import RolloutSampler
from palaestra.training.tokens import model_calls
from palaestra.types import AgentResult, JsonDict, Producer, function_call_output, function_calls
from tests.support.scripted_model import ScriptedModelServer
from tests.support.toy_tokenizer import ToyTokenizer
from tests.training.test_rollouts import TASKS, Adder, adder_script

CLOCK: list[RolloutSampler] = []
"""The sampler under test, so the compacting harness can move its policy version mid-rollout."""


class CompactingAgent:
    """Call the tool, then (as if the context were full) replace the whole history with a
    one-line summary and solve the task from there: the calls after the summary extend none
    before it."""

    name = "compacting"

    def __init__(self, bump_version: bool = False) -> None:
        self.bump_version = bump_version

    async def run(
        self, task: JsonDict, env: EnvironmentClient, model: Model, context: RolloutContext
    ) -> AgentResult:
        params = request_params(task, env)

        async def line(conversation: Conversation, session_id: str, turns: int) -> None:
            for _ in range(turns):
                response = await conversation.ask(model)
                calls = function_calls(response)
                if not calls:
                    return
                for call in calls:
                    arguments = parse_arguments(call.get("arguments"))
                    assert isinstance(arguments, dict)
                    output = await env.call_tool(session_id, str(call["name"]), arguments)
                    conversation.add(
                        function_call_output(call_id_of(call), str(output)), Producer.TOOL
                    )

        async def body(session_id: str, result: AgentResult) -> None:
            first = Conversation(params, result)
            await line(first, session_id, turns=1)
            if self.bump_version and CLOCK:
                version = CLOCK[0].policy_version
                CLOCK[0].policy_version = (version or 0) + 1  # the weights changed meanwhile
            question = str(params["input"])
            summary = {**params, "input": f"{question} (Summary: asked before, not answered.)"}
            second = Conversation(summary, result)
            await line(second, session_id, turns=4)
            result.producers = first.producers + second.producers
            assert result.response is not None
            result.response = {**result.response, "output": first.outputs + second.outputs}

        return await run_episode(task, env, body)


@pytest.fixture
def compacting(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(AGENTS._builtins, "compacting", f"{__name__}:CompactingAgent")
    CLOCK.clear()
    yield
    CLOCK.clear()


async def test_a_compacting_harness_yields_two_branches_each_trained_once_with_its_reward(
    compacting: None,
) -> None:
    with ScriptedModelServer(adder_script, api="chat", tokenizer=ToyTokenizer()) as server:
        async with RolloutSampler(
            Adder,
            tasks=TASKS[:2],
            group_size=2,
            policy=server.url,
            agent="compacting",
            concurrency=4,
        ) as sampler:
            groups = await sampler.batch()
    assert sampler.stats.scored == 4 and sampler.stats.branched == 4
    assert sampler.stats.sequences == 8 and sampler.stats.retokenized == 0
    for group in groups:
        assert group.failures == [] and len(group.rollouts) == 4
        assert group.sample_rewards == {0: 1.0, 1: 1.0} and group.mean_reward == 1.0
        for sample in (0, 1):
            first, second = [r for r in group.rollouts if r.sample == sample]
            assert (first.leaf, second.leaf, first.leaves) == (0, 1, 2)
            assert first.reward == second.reward == 1.0
            calls = model_calls(first.response or {})
            assert len(calls) == 3 and (first.calls, second.calls) == ([0], [1, 2])
            # Each branch's masked tokens are exactly the generations of its own calls, in
            # place; together they are every token the engine sampled, once.
            for rollout in (first, second):
                assert rollout.calls is not None
                masked = [t for t, m in zip(rollout.token_ids, rollout.loss_mask, strict=True) if m]
                sampled = [t for i in rollout.calls for t in calls[i].generation_token_ids]
                assert masked == sampled
            assert sum(first.loss_mask) + sum(second.loss_mask) == sum(
                len(call.generation_token_ids) for call in calls
            )
            # The second branch starts from the summary, not from the first branch's history.
            assert second.prompt_ids == calls[1].prompt_token_ids != first.prompt_ids


async def test_each_rollout_says_the_versions_that_served_it_their_span_and_its_age(
    compacting: None,
) -> None:
    with ScriptedModelServer(adder_script, api="chat", tokenizer=ToyTokenizer()) as server:
        sampler = RolloutSampler(
            Adder,
            tasks=TASKS[:1],
            group_size=1,
            policy=server.url,
            agent="compacting",
            agent_options={"bump_version": True},
            policy_version=3,
            max_staleness=4,
        )
        CLOCK.append(sampler)
        async with sampler:
            (group,) = await sampler.batch()
            sampler.policy_version = 6  # the trainer moved on before the next batch
            (later,) = await sampler.batch()
    first, second = group.rollouts
    # One call before the update the harness saw, two after.
    assert first.policy_versions == second.policy_versions == [3, 4, 4]
    assert first.version_span == second.version_span == 1
    assert first.age == second.age == 1  # handed over at version 4, oldest served 3
    assert [r.policy_versions for r in later.rollouts] == [[6, 7, 7]] * 2
    assert [r.age for r in later.rollouts] == [1, 1]
    counts = sampler.staleness
    assert counts.span.sum == 2 and counts.age.sum == 2 and counts.newest_age == 1
    families = {family.name: family for family in staleness_families(counts)()}
    age = families["palaestra_trainer_rollout_policy_age"]
    buckets = {s.labels.get("le"): s.value for s in age.samples if s.name.endswith("_bucket")}
    assert buckets["0"] == 0 and buckets["1"] == 2 and buckets["+Inf"] == 2
    assert families["palaestra_trainer_rollout_policy_age_last"].samples[0].value == 1


def test_trl_s_rollout_func_takes_the_last_branch_whole_and_counts_the_other(
    compacting: None,
) -> None:
    from palaestra.training import TrlRolloutFunc
    from palaestra.training.trl_rollout import prompt_messages
    from tests.training.test_trl_rollout import trainer

    with (
        ScriptedModelServer(adder_script, api="chat", tokenizer=ToyTokenizer()) as server,
        TrlRolloutFunc(
            Adder, tasks=TASKS[:1], policy=server.url, agent="compacting", policy_version=2
        ) as rollout,
    ):
        prompt = prompt_messages(TASKS[0])
        out = rollout([prompt, prompt], trainer())
        (group,) = rollout.sampler.batch([0], group_size=1)
        rollout.sampler.policy_version = 3  # a synchronous trainer says it updated
        rollout.sampler.batch([0], group_size=1)
        counts = rollout.sampler.staleness
    # One completion per prompt, as TRL's grouping needs: the branch after the summary.
    assert len(out["completion_ids"]) == 2 and out["env_branches"] == [2, 2]
    assert out["env_reward"] == [1.0, 1.0] and out["env_policy_span"] == [0, 0]
    assert sum(counts.span.counts) == 4 and counts.span.sum == 0 and counts.newest_age == 0
    first, last = group.rollouts
    for i in (0, 1):
        assert out["env_untrained_tokens"][i] == sum(first.loss_mask) > 0
        assert sum(out["env_mask"][i]) == sum(last.loss_mask)
        assert out["prompt_ids"][i] == last.prompt_ids != first.prompt_ids
