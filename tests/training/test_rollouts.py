"""The trainer API against a scripted vLLM-compatible server over real HTTP (token mode, a toy
BPE-like tokenizer): groups stream with their sizes and identities, tokens are contiguous and
masked, failures are excluded, masked or raised as asked, and batches reuse one environment."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from palaestra import Environment, Session, run_spec, tool
from palaestra.errors import ConfigError, ModelUnreachable
from palaestra.models import ModelConfig, build_model
from palaestra.training import (
    Group,
    RolloutFailed,
    RolloutSampler,
    SyncRolloutSampler,
    TaskSampler,
    TasksSaturated,
)
from palaestra.training.tokens import check_contiguity, model_calls
from palaestra.types import FailureKind, JsonDict, Verdict, output_text
from tests.support.scripted_model import (
    Reply,
    ScriptedModelServer,
    text_response,
    tool_call_response,
)
from tests.support.toy_tokenizer import MERGED, ToyTokenizer

BUILT: list[Adder] = []


class Adder(Environment):
    """Add two numbers with a tool; a task without an answer key cannot be verified."""

    def __init__(self) -> None:
        self.seeded = 0
        BUILT.append(self)

    def seed(self, task: JsonDict) -> Any:
        self.seeded += 1
        if task.get("seed_fails"):
            raise RuntimeError("no session for this task")
        return task.get("answer")

    @tool
    def add(self, a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def verify(self, session: Session, response: JsonDict) -> Verdict | float:
        if session.state is None:
            return Verdict.failed(FailureKind.VERIFIER_ERROR, "the task has no answer key")
        return 1.0 if output_text(response).strip() == str(session.state) else 0.0


def task(a: int, b: int, answer: int | None) -> JsonDict:
    row: JsonDict = {"responses_create_params": {"input": f"What is {a}+{b}?"}}
    if answer is not None:
        row["answer"] = answer
    return row


TASKS = [task(2, 3, 5), task(4, 4, 8), task(1, 1, 7)]  # the last is never solved
BROKEN = task(5, 5, None)  # verify fails: an explicit failure, never a 0
UNSEEDABLE = {**task(6, 6, 12), "seed_fails": True}  # fails before any model call

_TOOL_OUTPUT = re.compile(r"<\|im_start\|>tool\n(.*?)<\|im_end\|>", re.S)
_QUESTION = re.compile(r"What is (\d+)\+(\d+)")


def adder_script(params: JsonDict) -> Reply:
    """Call the tool for the question, then answer what it returned (stateless, so rollouts
    can run concurrently in any order)."""
    prompt = str(params.get("prompt") or orjson.dumps(params.get("input")).decode())
    outputs = _TOOL_OUTPUT.findall(prompt)
    if outputs:
        return text_response(outputs[-1])
    found = _QUESTION.search(prompt)
    assert found is not None, prompt
    arguments = orjson.dumps({"a": int(found[1]), "b": int(found[2])}).decode()
    return tool_call_response("add", arguments)


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    BUILT.clear()
    with ScriptedModelServer(adder_script, api="chat", tokenizer=ToyTokenizer()) as running:
        yield running


def policy(server: ScriptedModelServer, **options: Any) -> ModelConfig:
    return ModelConfig(url=server.url, model="scripted-model", max_retries=0, options=options)


def sampler(server: ScriptedModelServer, **options: Any) -> RolloutSampler:
    options.setdefault("tasks", TASKS)
    options.setdefault("group_size", 3)
    options.setdefault("concurrency", 4)
    options.setdefault("policy", policy(server))
    return RolloutSampler(Adder, **options)


@pytest.mark.parametrize("flavour", ["vllm", "sglang"])
async def test_groups_stream_with_their_size_task_and_contiguous_masked_tokens(
    flavour: Any,
) -> None:
    with ScriptedModelServer(
        adder_script, api="chat", tokenizer=ToyTokenizer(), flavour=flavour
    ) as server:
        async with sampler(server) as rollouts:
            groups = [group async for group in rollouts.stream()]
        completions = server.bodies("/v1/completions")
        chats = server.bodies("/v1/chat/completions")
    assert sorted(group.task_index for group in groups) == [0, 1, 2]
    assert sorted(group.group_id for group in groups) == [0, 1, 2]
    for group in groups:
        assert group.size == 3 and len(group.rollouts) == 3 and not group.failures
        assert [r.sample for r in group.rollouts] == [0, 1, 2]
        assert {(r.group_id, r.task_index, r.step) for r in group.rollouts} == {
            (group.group_id, group.task_index, 0)
        }
        expected = 0.0 if group.task_index == 2 else 1.0
        assert group.rewards == [expected] * 3
        for rollout in group.rollouts:
            assert rollout.response is not None
            assert check_contiguity(rollout.response).contiguous
            calls = [i for i in rollout.response["output"] if "generation_token_ids" in i]
            assert len(calls) == 2  # tool call, then the answer: a multi-turn rollout
            assert MERGED in rollout.token_ids  # the sampled ids, not a re-tokenisation
            generated = sum(len(c["generation_token_ids"]) for c in calls)
            assert sum(rollout.loss_mask) == generated
            assert rollout.prompt_ids == calls[0]["prompt_token_ids"]
            assert len(rollout.completion_ids) == len(rollout.completion_mask)
            assert len(rollout.completion_log_probs) == len(rollout.completion_ids)
            assert not any(rollout.loss_mask[: rollout.prompt_length])
            assert all(
                value != 0.0
                for value, bit in zip(rollout.log_probs, rollout.loss_mask, strict=True)
                if bit
            )
            assert len(rollout.turn_ends) == 2
    # Token mode: every generation went to /v1/completions with the ids as the prompt.
    assert len(completions) == 3 * 3 * 2 and not chats


async def test_each_sample_of_a_group_asks_with_its_own_seed_and_a_rerun_repeats_them(
    server: ScriptedModelServer,
) -> None:
    async with sampler(server, tasks=TASKS[:1], seed=7) as rollouts:
        await rollouts.batch()
    first = [body["seed"] for body in server.bodies("/v1/completions")]
    async with sampler(server, tasks=TASKS[:1], seed=7) as rollouts:
        await rollouts.batch()
    second = [body["seed"] for body in server.bodies("/v1/completions")][len(first) :]
    assert len(set(first)) == 3  # three samples, three seeds (the same within a rollout)
    assert sorted(first) == sorted(second)


async def test_three_batches_over_the_same_tasks_reuse_one_environment(
    server: ScriptedModelServer,
) -> None:
    async with sampler(server, group_size=2) as rollouts:
        steps = [await rollouts.batch() for _ in range(3)]
    assert len(BUILT) == 1  # built once, for all three batches
    assert BUILT[0].seeded == 3 * len(TASKS) * 2  # every rollout seeded a session in it
    assert [[g.step for g in groups] for groups in steps] == [[0] * 3, [1] * 3, [2] * 3]
    ids = [g.group_id for groups in steps for g in groups]
    assert ids == list(range(9))  # unique over the sampler's life, in planned order
    assert rollouts.stats.groups == 9 and rollouts.stats.scored == 18


@pytest.mark.parametrize("on_failure", ["exclude", "mask"])
async def test_a_failed_rollout_is_excluded_or_masked_never_a_zero(
    server: ScriptedModelServer, on_failure: Any
) -> None:
    async with sampler(server, tasks=[TASKS[0], BROKEN], on_failure=on_failure) as rollouts:
        groups = await rollouts.batch()
    good, broken = groups
    assert len(good.rollouts) == 3 and not good.failures
    assert len(broken.failures) == 3
    failure = broken.failures[0].failure
    assert failure is not None and failure.kind == FailureKind.VERIFIER_ERROR
    assert "no answer key" in failure.reason
    assert all(r.reward is None for r in broken.failures)
    if on_failure == "exclude":
        assert broken.rollouts == [] and rollouts.stats.excluded == 3
    else:
        assert broken.rollouts == broken.failures and rollouts.stats.masked == 3
        assert broken.rewards == [None] * 3
        for rollout in broken.rollouts:
            assert rollout.token_ids and not any(rollout.loss_mask)  # kept, all masked
    assert broken.mean_reward is None
    assert rollouts.stats.failures == {"verifier_error": 3}
    # The task sampler never counted a failure as an attempt.
    assert rollouts.task_sampler.attempts_of(1) == (0, 0)


async def test_a_failed_rollout_raises_when_asked(server: ScriptedModelServer) -> None:
    async with sampler(server, tasks=[BROKEN, TASKS[0]], on_failure="raise") as rollouts:
        with pytest.raises(RolloutFailed, match="no answer key") as caught:
            await rollouts.batch([0])
        assert caught.value.rollout.task_index == 0
        assert caught.value.failure.kind == FailureKind.VERIFIER_ERROR
        # The sampler is usable afterwards: the next batch runs.
        (group,) = await rollouts.batch([1])
    assert group.rewards == [1.0] * 3


@pytest.mark.parametrize("flavour", ["vllm", "sglang"])
async def test_a_re_tokenising_server_gives_one_leaf_per_call_each_trained_on_its_own_sample(
    flavour: Any,
) -> None:
    with ScriptedModelServer(
        adder_script, api="chat", tokenizer=ToyTokenizer(), flavour=flavour
    ) as server:
        config = policy(server, return_tokens=True)  # message mode: the server re-tokenises
        config = config.model_copy(update={"api": "chat"})
        async with sampler(server, tasks=TASKS[:1], group_size=2, policy=config) as rollouts:
            (group,) = await rollouts.batch()
    assert group.failures == [] and rollouts.stats.scored == 2
    for sample in (0, 1):
        leaves = [rollout for rollout in group.rollouts if rollout.sample == sample]
        calls = model_calls(leaves[0].response or {})
        # No prompt extends an earlier call's ids: each call is a root and its own leaf, never
        # spliced onto the re-tokenised history.
        assert len(calls) > 1 and [r.leaf for r in leaves] == list(range(len(calls)))
        for rollout, call in zip(leaves, calls, strict=True):
            trained = [t for t, m in zip(rollout.token_ids, rollout.loss_mask, strict=True) if m]
            assert trained == call.generation_token_ids and rollout.calls == [call.index]
    assert rollouts.stats.branched == 2 and rollouts.stats.sequences == len(group.rollouts)
    assert len(group.sample_rewards) == 2


class Tracked:
    """A model that records whether it was closed."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.stats = inner, inner.name, inner.stats
        self.closed = False

    async def respond(self, params: JsonDict) -> JsonDict:
        response: JsonDict = await self.inner.respond(params)
        return response

    async def check(self) -> None:
        await self.inner.check()

    async def aclose(self) -> None:
        self.closed = True
        await self.inner.aclose()


async def test_set_policy_swaps_the_model_between_batches_and_keeps_the_environment(
    server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[Tracked] = []

    def build(config: ModelConfig) -> Tracked:
        built.append(Tracked(build_model(config)))
        return built[-1]

    monkeypatch.setattr("palaestra.training.stream.build_model", build)
    given = Tracked(build_model(policy(server, token_mode=True)))
    async with sampler(server, tasks=TASKS[:1], group_size=1) as rollouts:
        await rollouts.batch()
        await rollouts.set_policy(given)
        assert rollouts.model is given and built[0].closed  # built by the sampler: closed
        (group,) = await rollouts.batch()
        assert given.stats.requests == 2  # the batch after the swap asked the new model
        await rollouts.set_policy(policy(server))
        assert not given.closed  # given by the caller: still the caller's
        assert rollouts.model is built[1]
    assert built[1].closed and not given.closed
    assert group.rewards == [1.0] and group.rollouts[0].response is not None
    assert len(BUILT) == 1
    await given.aclose()


async def test_set_policy_during_a_batch_is_refused(server: ScriptedModelServer) -> None:
    async with sampler(server, tasks=TASKS[:2], group_size=1, concurrency=1) as rollouts:
        groups = rollouts.stream()
        await anext(groups)
        with pytest.raises(RuntimeError, match="between batches"):
            await rollouts.set_policy(policy(server))
        await groups.aclose()
        await rollouts.set_policy(policy(server))  # once the batch is closed it is fine


async def test_the_task_sampler_skips_a_task_saturated_over_earlier_batches(
    server: ScriptedModelServer,
) -> None:
    skipping = {"attempts": 2, "revisit_every": 2}
    async with sampler(server, group_size=2, task_sampler=skipping) as rollouts:
        first = await rollouts.batch([0])  # explicit indices: run as asked
        second = await rollouts.batch()
    assert [g.task_index for g in first] == [0]
    assert sorted(g.task_index for g in second) == [1, 2]  # 0 always solved: skipped
    assert rollouts.task_sampler.summary() == {"solved": 2, "unsolved": 1}


async def test_a_batch_whose_every_task_is_saturated_raises_one_line_not_an_empty_batch(
    server: ScriptedModelServer,
) -> None:
    skipping = {"attempts": 2, "revisit_every": 2}
    async with sampler(server, group_size=2, task_sampler=skipping) as rollouts:
        first = await rollouts.batch()
        step = rollouts.step
        with pytest.raises(TasksSaturated) as raised:
            await rollouts.batch()
        with pytest.raises(TasksSaturated):
            async for _ in rollouts.stream():
                pass
        assert rollouts.step == step  # no step was spent on nothing
        revisited = await rollouts.batch()  # skipped twice: due back
    assert sorted(g.task_index for g in first) == [0, 1, 2]
    assert sorted(g.task_index for g in revisited) == [0, 1, 2]
    error = raised.value
    assert (error.tasks, error.solved, error.unsolved) == (3, 2, 1)
    assert str(error) == (
        "no task to run: all 3 tasks are saturated (2 always solved and 1 never solved over "
        "their last 2 scored rollouts) and each runs again once skipped revisit_every=2 times; "
        "to run them, pass task_sampler={'skip_saturated': False} or widen "
        "solved_rate/unsolved_rate"
    )


def test_the_sync_sampler_runs_batches_and_streams_from_plain_code(
    server: ScriptedModelServer,
) -> None:
    with SyncRolloutSampler(
        Adder, tasks=TASKS, group_size=2, policy=policy(server), concurrency=2
    ) as rollouts:
        groups = rollouts.batch([0, 1])
        streamed: list[Group] = []
        for group in rollouts.stream([2, 0], group_size=[1, 3]):
            streamed.append(group)
        partial = rollouts.stream()
        next(partial)
        partial.close()  # leaving early closes the batch
        assert rollouts.stats.groups == 5
    assert [len(g.rollouts) for g in groups] == [2, 2]
    assert sorted((g.task_index, len(g.rollouts)) for g in streamed) == [(0, 3), (2, 1)]


def test_tasks_from_a_file_with_a_bad_line_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(orjson.dumps(TASKS[0]).decode() + '\n{"responses_create_params": {}}\n')
    with pytest.raises(
        ConfigError, match=r"tasks\.jsonl:2: field 'responses_create_params\.input'"
    ):
        RolloutSampler(Adder, tasks=path, policy="http://127.0.0.1:9/v1")


def test_a_policy_without_token_capture_is_refused_and_one_without_options_gets_token_mode() -> (
    None
):
    url = "http://127.0.0.1:9/v1"
    with pytest.raises(ConfigError, match="a trainer needs token ids"):
        RolloutSampler(
            Adder, tasks=TASKS, policy=ModelConfig(url=url, options={"token_mode": False})
        )
    made = RolloutSampler(Adder, tasks=TASKS, policy=url)
    assert made.spec.model.options == {}  # the spec as written; the model built gets token mode
    assert isinstance(made._policy, ModelConfig) and made._policy.options == {"token_mode": True}


def test_a_sampler_takes_its_run_as_a_run_spec_whose_collection_gives_the_defaults(
    recwarn: pytest.WarningsRecorder,
) -> None:
    url = "http://127.0.0.1:9/v1"
    run = run_spec(env=Adder, model=url, sampling={"temperature": 0.5}, concurrency=3, seed=7)
    made = RolloutSampler(run, tasks=TASKS, group_size=2)
    assert made.spec is run
    assert made.concurrency == 3 and made.seed == 7
    assert made.overrides == {"temperature": 0.5}
    assert isinstance(made._policy, ModelConfig) and made._policy.url == url
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]
    with pytest.raises(TypeError, match="not both"):
        RolloutSampler(run, tasks=TASKS, policy=url)


def test_the_run_given_as_the_old_keywords_still_works_with_a_deprecation_warning() -> None:
    url = "http://127.0.0.1:9/v1"
    with pytest.warns(DeprecationWarning, match="pass the run as a RunSpec"):
        made = RolloutSampler(Adder, tasks=TASKS, policy=url, sampling={"temperature": 0.5})
    assert made.spec == run_spec(env=Adder, model=url, sampling={"temperature": 0.5})


def test_a_task_sampler_for_another_number_of_tasks_is_refused() -> None:
    with pytest.raises(ConfigError, match="for 5 tasks, not 3"):
        RolloutSampler(
            Adder, tasks=TASKS, policy="http://127.0.0.1:9/v1", task_sampler=TaskSampler(5)
        )


async def test_a_policy_server_without_tokenize_is_refused_before_any_rollout() -> None:
    # Chat Completions answers, /tokenize is a 404: token mode could render no prompt.
    with ScriptedModelServer(adder_script, api="chat") as server:
        with pytest.raises(ConfigError) as refused:
            async with sampler(server):
                pass
        routes = [route for route, _ in server.requests]
    message = str(refused.value)
    assert f"{server.url.removesuffix('/v1')}/tokenize answered HTTP 404" in message
    assert "vLLM" in message and "return_tokens" in message and "\n" not in message
    assert routes == ["/v1/models"]  # the check, then the refusal: no rollout asked anything


async def test_a_policy_server_with_tokenize_passes_the_check_and_samples(
    server: ScriptedModelServer,
) -> None:
    async with sampler(server, group_size=1) as rollouts:
        checked = len(server.bodies("/tokenize"))
        groups = await rollouts.batch([0])
    assert checked >= 1
    assert groups[0].rollouts[0].failure is None and groups[0].rollouts[0].reward == 1.0


async def test_leaving_a_stream_early_stops_its_rollouts(server: ScriptedModelServer) -> None:
    async with sampler(server, group_size=1, concurrency=1) as rollouts:
        async with contextlib.aclosing(rollouts.stream()) as groups:
            async for _ in groups:
                break
        requests = len(server.bodies("/v1/completions"))
        await rollouts.batch([0], group_size=1)
    # Not every task of the first batch ran: 3 tasks x 2 calls would be 6 requests.
    assert requests < 6
    assert len(server.bodies("/v1/completions")) == requests + 2


async def test_a_model_unreachable_three_rollouts_in_a_row_stops_the_batch() -> None:
    with ScriptedModelServer(adder_script, api="chat", tokenizer=ToyTokenizer()) as gone:
        rollouts = await sampler(gone, group_size=2, concurrency=1).open()
    try:  # the server is gone now: each rollout finds the model unreachable
        with pytest.raises(ModelUnreachable):
            await rollouts.batch()
        # The first group's two rollouts failed as model errors (reported, not scored); the
        # third unreachable rollout in a row stopped the batch.
        assert rollouts.stats.failures == {"model_error": 2} and rollouts.stats.groups == 1
    finally:
        await rollouts.aclose()


def test_importing_palaestra_training_loads_no_trainer_and_no_sampler() -> None:
    code = (
        "import sys, palaestra.training; "
        "print(sorted(m for m in sys.modules if m.startswith(('torch', 'trl', 'transformers', "
        "'palaestra.training.', 'palaestra.models.local'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
