"""The trainer's sampler over a pool of token-mode endpoints: each rollout stays on one."""

from __future__ import annotations

import threading
from collections import Counter

from palaestra.models import ModelConfig
from palaestra.training import RolloutSampler
from palaestra.types import JsonDict
from tests.support.scripted_model import Reply, ScriptedModelServer
from tests.support.toy_tokenizer import ToyTokenizer
from tests.training.test_rollouts import _QUESTION, _TOOL_OUTPUT, TASKS, Adder, adder_script


async def test_each_sampled_rollout_stays_on_one_endpoint() -> None:
    seen: Counter[tuple[str, str, bool]] = Counter()
    lock = threading.Lock()

    def recording(name: str):  # type: ignore[no-untyped-def]
        def script(params: JsonDict) -> Reply:
            prompt = str(params.get("prompt"))
            question = _QUESTION.search(prompt)
            assert question is not None
            with lock:
                seen[(name, question[0], bool(_TOOL_OUTPUT.findall(prompt)))] += 1
            return adder_script(params)

        return script

    with (
        ScriptedModelServer(recording("a"), api="chat", tokenizer=ToyTokenizer()) as a,
        ScriptedModelServer(recording("b"), api="chat", tokenizer=ToyTokenizer()) as b,
    ):
        policy = ModelConfig(urls=[a.url, b.url], model="scripted-model", max_retries=0)
        sampler = RolloutSampler(Adder, tasks=TASKS, group_size=4, concurrency=4, policy=policy)
        async with sampler as rollouts:
            groups = [group async for group in rollouts.stream()]
    assert sum(len(group.rollouts) for group in groups) == 12
    assert {name for name, _, _ in seen} == {"a", "b"}  # the rollouts spread over both
    for name in ("a", "b"):  # every rollout that asked here got its answer here too
        for question in {q for n, q, _ in seen if n == name}:
            assert seen[(name, question, False)] == seen[(name, question, True)], (name, question)
