from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from palaestra import LocalEnvironmentClient, SingleTurnAgent
from palaestra.collection.tasks import read_tasks, task_problem
from palaestra.environment.finding.registry import find_environment
from palaestra.envs._shared import reasoning_gym as scoring
from palaestra.envs.reasoning_gym.environment import DEFAULT_MIXTURE, ReasoningGym
from palaestra.errors import ConfigError
from palaestra.types import FailureKind, JsonDict
from tests.support.fake_model import FakeModel, say

NO_SINGLE_GOLD = {"boxnet", "graph_color", "propositional_logic", "rubiks_cube", "rush_hour"}
"""Generators whose entry has no reference answer: the scorer checks a proposed solution."""


@pytest.fixture
async def env() -> AsyncIterator[LocalEnvironmentClient]:
    client = LocalEnvironmentClient(ReasoningGym())
    yield client
    await client.aclose()  # stops the worker pool


def examples() -> list[JsonDict]:
    entry = find_environment("reasoning_gym")
    assert entry.example_tasks is not None
    return [t.row for t in read_tasks(entry.example_tasks)]


async def answer(env: LocalEnvironmentClient, task: JsonDict, text: str) -> JsonDict:
    result = await SingleTurnAgent().run(task, env, FakeModel(lambda p: say(text)))
    if result.failure is not None:
        return {"failure": result.failure.kind}
    assert result.verdict is not None
    if result.verdict.failure is not None:
        return {"failure": result.verdict.failure.kind}
    return {"reward": result.verdict.reward, **result.verdict.metrics}


async def test_right_wrong_and_missing_answers(env: LocalEnvironmentClient) -> None:
    task = examples()[2]
    assert task["dataset"] == "gsm_symbolic"
    gold = task["answer"]
    right = await answer(env, task, f"Let me think. <answer>{gold}</answer>")
    assert right == {
        "reward": 1.0,
        "dataset": "gsm_symbolic",
        "answer_found": True,
        "extracted_answer": gold,
    }
    boxed = await answer(env, task, f"<answer>guess</answer> no: \\boxed{{{gold}}}")
    assert boxed["reward"] == 0.0  # the <answer> tag wins over \boxed
    assert (await answer(env, task, f"So it is \\boxed{{{gold}}}."))["reward"] == 1.0
    wrong = await answer(env, task, "<answer>-1</answer>")
    # reasoning-gym's gsm_symbolic scorer gives 0.01 to a well-formed wrong number
    assert (wrong["reward"], wrong["extracted_answer"]) == (0.01, "-1")
    missing = await answer(env, task, f"the answer is {gold}")
    assert (missing["reward"], missing["answer_found"]) == (0.0, False)
    thinking = await answer(env, task, f"<think><answer>{gold}</answer></think>nothing")
    assert thinking["answer_found"] is False


async def test_reasoning_marked_by_a_lone_tag_is_not_scored_and_fbox_is_a_box(
    env: LocalEnvironmentClient,
) -> None:
    task = examples()[2]
    gold = task["answer"]
    # The chat template opened <think> in the prompt: only the closing tag is generated.
    opened = await answer(env, task, f"<answer>{gold}</answer></think>nothing")
    assert opened["answer_found"] is False
    cut_off = await answer(env, task, f"<think>so <answer>{gold}</answer>, check")
    assert cut_off["answer_found"] is False
    assert (await answer(env, task, f"\\fbox{{{gold}}}"))["reward"] == 1.0  # as math reads it


async def test_every_example_task_scores_its_reference_answer(
    env: LocalEnvironmentClient,
) -> None:
    rows = examples()
    assert len(rows) == 5 and len({r["dataset"] for r in rows}) == 5
    for row in rows:
        assert task_problem(row) is None
        assert (await answer(env, row, f"<answer>{row['answer']}</answer>"))["reward"] == 1.0


async def test_scorer_crash_is_a_verifier_failure_and_unknown_dataset_invalid_input(
    env: LocalEnvironmentClient,
) -> None:
    [task] = [r for r in examples() if r["dataset"] == "prime_factorization"]
    # reasoning-gym's prime_factorization scorer raises on non-numeric factors.
    assert (await answer(env, task, "<answer>x \u00d7 y</answer>")) == {
        "failure": FailureKind.VERIFIER_ERROR
    }
    unknown = {**task, "dataset": "no_such_generator"}
    assert (await answer(env, unknown, "<answer>1</answer>")) == {
        "failure": FailureKind.INVALID_INPUT
    }
    bare = {"responses_create_params": {"input": "hi"}}
    assert (await answer(env, bare, "<answer>1</answer>")) == {"failure": FailureKind.INVALID_INPUT}


def test_every_generator_makes_tasks_whose_reference_answer_scores_one() -> None:
    names = scoring.dataset_names()
    assert len(names) > 100 and "composite" not in names
    for name in names:
        [row] = scoring.generate({name: 1.0}, {}, 1, seed=5)
        assert row["dataset"] == name and task_problem(row) is None
        if name in NO_SINGLE_GOLD:
            continue
        regenerated = scoring.score(row, str(row["answer"]))
        assert regenerated == {"score": 1.0, "entry": "regenerated"}, name
        stored = {k: v for k, v in row.items() if k != "index"}  # a task without provenance
        if name not in ("arc_agi", "rearc"):  # their boards are tuples, lost in JSON
            assert scoring.score(stored, str(row["answer"]))["score"] == 1.0, name


def test_a_first_run_prints_nothing_of_the_suites_own_compile_warnings(tmp_path: Path) -> None:
    """A fresh cache makes Python compile reasoning-gym and its dependencies, as on a user's
    first run; what one of them warns about then must not reach the user's terminal."""
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path / "pycache")}
    code = "from palaestra.envs._shared import reasoning_gym as r; print(len(r.dataset_names()))"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and int(done.stdout) > 100, done.stderr
    assert done.stderr == ""


def test_generation_is_deterministic_and_follows_the_mixture() -> None:
    mix = {"chain_sum": 3.0, "gcd": 1.0}
    first = list(scoring.generate(mix, {"chain_sum": {"max_terms": 2}}, 40, seed=9))
    assert first == list(scoring.generate(mix, {"chain_sum": {"max_terms": 2}}, 40, seed=9))
    assert first != list(scoring.generate(mix, {"chain_sum": {"max_terms": 2}}, 40, seed=10))
    counts = {name: sum(r["dataset"] == name for r in first) for name in mix}
    assert counts["chain_sum"] > counts["gcd"] > 0
    for row in first:
        if row["dataset"] == "chain_sum":
            assert row["dataset_config"] == {"max_terms": 2}
            assert row["question"].count("+") + row["question"].count(" - ") <= 1
    assert set(DEFAULT_MIXTURE) <= set(scoring.dataset_names())


def test_a_generator_or_mixture_is_chosen_by_argument_or_subclass(tmp_path: Path) -> None:
    single = find_environment("reasoning_gym")
    rows = list(single.environment(datasets="gsm_symbolic").generate_tasks(3, seed=1))
    assert {r["dataset"] for r in rows} == {"gsm_symbolic"}
    mixed = ReasoningGym(datasets={"gcd": 1.0, "lcm": 1.0}, dataset_configs={"gcd": {}})
    assert {r["dataset"] for r in mixed.generate_tasks(20, seed=1)} == {"gcd", "lcm"}
    typed = ReasoningGym(datasets="gcd:1, lcm:3")  # as --env-arg datasets=... gives it
    assert typed.datasets == {"gcd": 1.0, "lcm": 3.0}
    (tmp_path / "mix.py").write_text(
        "from palaestra.envs.reasoning_gym.environment import ReasoningGym\n"
        "class Mix(ReasoningGym):\n"
        "    name = 'my_mix'\n"
        "    datasets = {'gcd': 1.0, 'lcm': 1.0}\n"
    )
    mine = find_environment(str(tmp_path / "mix.py"))
    rows = list(mine.environment().generate_tasks(20, seed=1))
    assert {r["dataset"] for r in rows} == {"gcd", "lcm"}
    with pytest.raises(ConfigError, match="unknown reasoning-gym datasets"):
        ReasoningGym(datasets={"gcd": 1.0, "nope": 2.0})
    with pytest.raises(ConfigError, match="not NAME or NAME:WEIGHT"):
        ReasoningGym(datasets="gcd:x")


def test_answer_extraction() -> None:
    assert scoring.extract_answer("<answer> 1 </answer> then <answer>\n2\n</answer>") == "2"
    assert scoring.extract_answer("x \\boxed{\\frac{1}{2}} y") == "\\frac{1}{2}"
    assert scoring.extract_answer("<answer>open") is None
    assert scoring.extract_answer("no answer") is None
