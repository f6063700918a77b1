"""A conversation with a simulated user in token mode: contiguous across policy turns, and the
user's turns never in the loss mask."""

from __future__ import annotations

from palaestra import LocalEnvironmentClient
from palaestra.agents import ToolCallingAgent
from palaestra.models import ModelConfig, build_model
from palaestra.training.tokens import check_contiguity, training_sequence
from palaestra.types import TRAINABLE_PRODUCERS, JsonDict
from tests.support.scripted_model import ScriptedModelServer, Sequence, text_response
from tests.support.toy_tokenizer import ToyTokenizer
from tests.support.user_envs import Interview

TURNS = ["Book the 9:40 to Lyon.", "Now cancel it."]
TASK: JsonDict = {"responses_create_params": {"input": "Hello"}, "turns": TURNS}


def _find(haystack: list[int], needle: list[int]) -> int:
    for start in range(len(haystack) - len(needle) + 1):
        if haystack[start : start + len(needle)] == needle:
            return start
    raise AssertionError("not found")


async def test_user_turns_are_in_the_sequence_but_never_in_the_loss_mask() -> None:
    script = Sequence([text_response("Hi."), text_response("Booked."), text_response("Done.")])
    with ScriptedModelServer(script, api="chat", tokenizer=ToyTokenizer()) as server:
        config = ModelConfig(url=server.url, model="scripted-model", options={"token_mode": True})
        model = build_model(config)
        try:
            result = await ToolCallingAgent().run(TASK, LocalEnvironmentClient(Interview()), model)
        finally:
            await model.aclose()
    assert result.failure is None and result.user_turns == 2 and result.model_calls == 3
    assert result.response is not None and result.producers is not None
    assert check_contiguity(result.response).contiguous
    sequence = training_sequence(result.response, result.verdict)
    tokenizer = ToyTokenizer()
    for said in TURNS:
        span = tokenizer.encode(said)
        start = _find(sequence.token_ids, span)
        assert not any(sequence.loss_mask[start : start + len(span)])  # the user's: masked
    # Every trained token is the policy's: the masked-in tokens are exactly its generations.
    policy_items = [
        item
        for item, producer in zip(result.response["output"], result.producers, strict=True)
        if producer in TRAINABLE_PRODUCERS
    ]
    generated = sum(len(item["generation_token_ids"]) for item in policy_items)
    assert sequence.generated_tokens == generated
    assert result.producers == ["policy", "user", "policy", "user", "policy"]


async def test_a_sampler_lends_its_user_model_and_trains_on_the_policy_tokens_only() -> None:
    from palaestra.training import RolloutSampler
    from tests.environment.test_users import Answering
    from tests.support.user_envs import ModelInterview

    user = Answering("I need a seat to Lyon.", "Thanks, DONE")
    task: JsonDict = {"responses_create_params": {"input": "Hello"}, "persona": "You are Ana."}
    script = Sequence([text_response("Hi."), text_response("Seat booked.")] * 2)
    with ScriptedModelServer(script, api="chat", tokenizer=ToyTokenizer()) as server:
        policy = ModelConfig(url=server.url, model="scripted-model")
        sampler = RolloutSampler(
            ModelInterview, tasks=[task], group_size=1, policy=policy, user_model=user
        )
        async with sampler:
            (group,) = await sampler.batch([0])
    (rollout,) = group.rollouts
    assert rollout.failure is None and len(user.requests) == 2
    said = ToyTokenizer().encode("I need a seat to Lyon.")
    start = _find(rollout.token_ids, said)
    assert not any(rollout.loss_mask[start : start + len(said)])
    assert len(rollout.turn_ends) == 2  # two policy calls, the user's between them
    # the rollout says who produced each item, as its row does, consistent with the mask
    assert rollout.producers == ["policy", "user", "policy", "user"]
