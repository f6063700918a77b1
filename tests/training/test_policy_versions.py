"""Which policy wrote which tokens: every model request records the policy version that
served it, and ``RolloutSampler`` bounds staleness and says what it did."""

from __future__ import annotations

import pytest

from palaestra.collection.records import rollout_row
from palaestra.environment.users import ModelUser
from palaestra.errors import ConfigError
from palaestra.models import ModelConfig, build_model
from palaestra.models.affinity import RolloutScope
from palaestra.models.versions import PolicyClock, engine_version, span
from palaestra.training import RolloutSampler
from palaestra.types import AgentResult, JsonDict, Verdict
from tests.models.openai.test_resume import Adder, Updates, _script, _task
from tests.support.scripted_model import ScriptedModelServer, text_response
from tests.support.toy_tokenizer import ToyTokenizer


def test_an_engine_s_reported_version_is_read_from_its_answer() -> None:
    assert engine_version({"policy_version": 4}) == 4
    assert engine_version({"weight_version": "7"}) == 7
    assert engine_version({"metadata": {"weight_version": "2"}}) == 2
    assert engine_version({"metadata": {"weight_version": "default"}}) is None  # SGLang's unset
    assert engine_version({"choices": []}) is None
    assert span(None) == span([]) == 0 and span([3, 1, 2]) == 2


async def test_the_trainer_s_version_stamps_every_request_and_reaches_the_row() -> None:
    with ScriptedModelServer(_script, api="chat", tokenizer=ToyTokenizer()) as server:
        async with RolloutSampler(
            Adder(), tasks=[_task(1, 2)], group_size=2, policy=server.url, policy_version=3
        ) as sampler:
            (first,) = await sampler.batch()
            sampler.policy_version = 4  # the weights were updated in place
            (second,) = await sampler.batch()
    assert [r.policy_versions for r in first.rollouts] == [[3, 3], [3, 3]]
    assert [r.policy_versions for r in second.rollouts] == [[4, 4], [4, 4]]
    assert sampler.stats.stale == 0  # no bound asked


async def test_rows_keep_the_versions_and_a_user_s_calls_are_not_the_policy_s() -> None:
    clock = PolicyClock(5)
    with ScriptedModelServer(lambda params: text_response("DONE")) as server:
        model = build_model(ModelConfig(url=server.url, model="m", api="responses"))
        user = ModelUser(model, "You are Ana.")
        try:
            with RolloutScope(clock=clock) as scope:
                await model.respond({"input": "the policy's call"})
                await user.reply([{"role": "user", "content": "hi"}])
        finally:
            await model.aclose()
    assert scope.versions == [5]  # the policy's call only: the user's is in its own scope
    assert scope.user().versions == [5]
    result = AgentResult(response={"output": []}, verdict=Verdict(1.0), policy_versions=[5])
    row = rollout_row({"responses_create_params": {"input": "x"}}, result, attempt=1)
    assert row["_palaestra"]["policy_versions"] == [5]
    assert row["_palaestra"]["policy_version_span"] == 0


def test_a_row_and_the_collectors_metrics_keep_the_span_of_a_rollout_over_updates() -> None:
    from palaestra.observe.metrics import rollout_families
    from palaestra.observe.metrics_counts import RolloutCounts

    result = AgentResult(response={"output": []}, verdict=Verdict(1.0), policy_versions=[5, 5, 7])
    row = rollout_row({"responses_create_params": {"input": "x"}}, result, attempt=1)
    assert row["_palaestra"]["policy_version_span"] == 2
    unknown = AgentResult(response={"output": []}, verdict=Verdict(1.0))
    bare = rollout_row({"responses_create_params": {"input": "x"}}, unknown, attempt=1)
    assert "policy_version_span" not in bare["_palaestra"]
    counts = RolloutCounts()
    counts.rollout_finished(result, 1.0)
    counts.rollout_finished(unknown, 1.0)  # no version known: not a span of 0
    (family,) = [f for f in rollout_families(counts)() if f.name.endswith("policy_span")]
    values = {s.name.rsplit("_", 1)[-1] + s.labels.get("le", ""): s.value for s in family.samples}
    assert values["count"] == 1 and values["sum"] == 2 and values["bucket1"] == 0
    assert values["bucket2"] == 1


async def test_max_staleness_masks_or_excludes_rollouts_spanning_weight_updates() -> None:
    tokenizer = ToyTokenizer()
    tasks = [_task(a, a + 1) for a in range(4)]
    for on_stale in ("mask", "exclude"):
        server = ScriptedModelServer(_script, api="chat", tokenizer=tokenizer, decode_time=0.01)
        with server:
            server.engine.reports_version = True
            async with RolloutSampler(
                Adder(),
                tasks=tasks,
                group_size=8,
                policy=server.url,
                concurrency=32,
                max_staleness=0,
                on_stale=on_stale,
            ) as sampler:
                with Updates(server, every=0.15, pause=0.02):
                    groups = await sampler.batch()
        kept = [rollout for group in groups for rollout in group.rollouts]
        assert all(not group.failures for group in groups)
        stale = [rollout for rollout in kept if rollout.stale]
        fresh = [rollout for rollout in kept if not rollout.stale]
        assert sampler.stats.stale > 0  # the updates made some rollouts span versions
        for rollout in fresh:
            assert rollout.policy_versions and span(rollout.policy_versions) == 0
            assert any(rollout.loss_mask)
        if on_stale == "mask":
            assert len(kept) == 32 and len(stale) == sampler.stats.stale
            assert sampler.stats.stale_excluded == 0
            for rollout in stale:
                assert span(rollout.policy_versions) > 0 and not any(rollout.loss_mask)
                assert rollout.reward == 1.0  # the reward stays: only the tokens are off-policy
        else:
            assert not stale and len(kept) == 32 - sampler.stats.stale
            assert sampler.stats.stale_excluded == sampler.stats.stale


def test_a_negative_bound_or_an_unknown_on_stale_is_one_clear_line() -> None:
    with pytest.raises(ConfigError, match="max_staleness must be 0 or more"):
        RolloutSampler(Adder(), tasks=[_task(1, 2)], policy="http://x/v1", max_staleness=-1)
    with pytest.raises(ConfigError, match="on_stale must be one of exclude, mask"):
        RolloutSampler(Adder(), tasks=[_task(1, 2)], policy="http://x/v1", on_stale="drop")  # type: ignore[arg-type]


async def test_a_model_not_reached_over_http_gets_the_version_current_at_the_rollout_s_start() -> (
    None
):
    from tests.support.fake_model import FakeModel, call, response, say

    def tokens(prompt: list[int], generated: list[int]) -> JsonDict:
        fields = {"prompt_token_ids": prompt, "generation_token_ids": generated}
        return {**fields, "generation_log_probs": [-0.1] * len(generated)}

    def script(params: JsonDict) -> JsonDict:
        if any(item.get("type") == "function_call_output" for item in params["input"]):
            answer = say("The sum is 3.")
            answer["output"][-1].update(tokens([1, 2, 3, 9], [4]))
            return answer
        return response({**call("add", '{"a": 1, "b": 2}'), **tokens([1, 2], [3])})

    async with RolloutSampler(
        Adder(), tasks=[_task(1, 2)], group_size=1, policy=FakeModel(script), policy_version=7
    ) as sampler:
        (group,) = await sampler.batch()
    (rollout,) = group.rollouts
    assert rollout.failure is None
    assert rollout.policy_versions == [7, 7]  # two model calls, one version
