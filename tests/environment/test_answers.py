"""palaestra.environment.answers: reasoning stripping, answer formats, task rows."""

from __future__ import annotations

import pytest

from palaestra.environment.answers import (
    PYTHON_TAGS,
    CodeBlock,
    code_blocks,
    last_boxed,
    last_code_block,
    last_labelled,
    last_tagged,
    strip_reasoning,
    task_row,
)

# --- strip_reasoning ---------------------------------------------------------------------------


def test_text_without_reasoning_comes_back_unchanged() -> None:
    assert strip_reasoning("  The answer is 4.\n") == "  The answer is 4.\n"


def test_every_think_block_is_removed_and_the_text_around_them_kept() -> None:
    text = "a<think>one\ntwo</think>b<think>three</think>c"
    assert strip_reasoning(text) == "abc"


def test_a_lone_closing_tag_means_everything_before_it_was_reasoning() -> None:
    # The chat template opened <think> in the prompt, so only the closing tag is generated.
    assert strip_reasoning("I should say 5.\\boxed{5}</think>\n\\boxed{6}") == "\n\\boxed{6}"


def test_an_unterminated_think_block_means_the_answer_was_never_given() -> None:
    assert strip_reasoning("<think>so it is \\boxed{5} or") == ""
    assert strip_reasoning("Draft.<think>\\boxed{5}") == "Draft."


def test_blocks_and_a_lone_closing_tag_together_keep_only_the_text_after_the_last() -> None:
    assert strip_reasoning("<think>a</think>b</think>c<think>d") == "c"


def test_stripping_reasoning_takes_linear_time_on_thousands_of_unclosed_tags() -> None:
    # A regex rescans the rest of the text for every opening tag never closed (quadratic).
    text = "<think>" * 50_000 + "x"
    assert strip_reasoning(text) == ""
    assert strip_reasoning("</think>" * 50_000 + "x") == "x"


# --- last_boxed --------------------------------------------------------------------------------


def test_a_boxed_answer_with_nested_braces_is_read_whole() -> None:
    assert last_boxed("so \\boxed{\\frac{1}{2}} it is") == "\\frac{1}{2}"
    assert last_boxed("\\boxed{\\{1, \\{2\\}\\}}") == "\\{1, \\{2\\}\\}"


def test_of_several_boxed_answers_the_last_one_counts() -> None:
    assert last_boxed("\\boxed{1} no, \\boxed{ 2 } and \\fbox{3}") == "3"
    assert last_boxed("\\fbox{3} then \\boxed{4}") == "4"


def test_no_box_or_an_unclosed_last_box_is_no_answer() -> None:
    assert last_boxed("The answer is 4.") is None
    assert last_boxed("\\boxed{1} and finally \\boxed{\\frac{1}{2}") is None


def test_an_empty_box_is_an_empty_answer_not_no_answer() -> None:
    assert last_boxed("\\boxed{ }") == ""


# --- last_tagged -------------------------------------------------------------------------------


def test_the_last_answer_tag_is_read_and_stripped_across_lines() -> None:
    assert last_tagged("<answer> 1 </answer> then <answer>\n2\n3\n</answer>") == "2\n3"


def test_another_tag_can_be_read() -> None:
    assert last_tagged("<final>yes</final><answer>no</answer>", tag="final") == "yes"


def test_an_unclosed_or_missing_tag_is_no_answer_and_an_empty_one_is_empty() -> None:
    assert last_tagged("<answer>open") is None
    assert last_tagged("no tags at all") is None
    assert last_tagged("<answer>1</answer> <answer>2") == "1"
    assert last_tagged("<answer></answer>") == ""


def test_the_first_closing_tag_after_an_opening_ends_its_block() -> None:
    assert last_tagged("<answer>1</answer></answer><answer>2</answer>") == "2"
    assert last_tagged("<answer>x<answer>y</answer>") == "x<answer>y"


# --- last_labelled -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Reasoning.\nAnswer: B", "B"),
        ("**Answer:** (b)", "(b)"),
        ("## ANSWER: 42\nThat is all.", "42"),
        ("> answer: _Paris_", "Paris"),
        ("Answer: A\n...actually\nAnswer: D", "D"),
        ("Answer:\n\n  C  \n", "C"),
        ("The answer: B", None),  # the label must open its line
        ("Answer:", None),
        ("no label", None),
    ],
)
def test_the_last_labelled_line_gives_the_answer(text: str, value: str | None) -> None:
    assert last_labelled(text) == value


def test_a_later_label_without_a_value_does_not_erase_an_earlier_answer() -> None:
    assert last_labelled("Answer: B\nAnswer:") == "B"


def test_another_label_can_be_read() -> None:
    assert last_labelled("Result: 7\nAnswer: 8", label="result") == "7"


# --- code blocks -------------------------------------------------------------------------------


def test_every_fenced_block_is_found_with_its_language_tag() -> None:
    text = "Intro\n```Python\nx = 1\n```\ntext\n~~~\nplain\n~~~\n````json\n{}\n````"
    assert code_blocks(text) == [
        CodeBlock("Python", "x = 1\n"),
        CodeBlock("", "plain\n"),
        CodeBlock("json", "{}\n"),
    ]


def test_blocks_can_be_chosen_by_language_case_insensitively() -> None:
    text = "```bash\nrm -rf /\n```\n```PY\nok = 1\n```\n```\nuntagged = 2\n```"
    assert [b.code for b in code_blocks(text, PYTHON_TAGS)] == ["ok = 1\n", "untagged = 2\n"]
    assert last_code_block(text, ["bash"]) == "rm -rf /\n"
    assert last_code_block(text, PYTHON_TAGS) == "untagged = 2\n"


def test_a_block_cut_off_by_the_end_of_the_answer_runs_to_the_end() -> None:
    assert last_code_block("```python\ndef f():\n    return 1") == "def f():\n    return 1\n"


def test_a_closing_fence_at_the_end_of_a_code_line_closes_the_block() -> None:
    assert code_blocks('```json\n{"a": 1}```\nDone.') == [CodeBlock("json", '{"a": 1}\n')]


def test_a_shorter_fence_inside_a_block_is_code() -> None:
    text = "````markdown\n```python\nx\n```\n````"
    assert code_blocks(text) == [CodeBlock("markdown", "```python\nx\n```\n")]


def test_a_fence_that_opens_and_closes_on_one_line_is_not_a_block() -> None:
    assert code_blocks('```json {"a": 1}```') == []


def test_text_without_blocks_has_no_code() -> None:
    assert code_blocks("just prose, with `inline` code") == []
    assert last_code_block("just prose") is None


# --- task_row ----------------------------------------------------------------------------------


def test_a_task_row_holds_the_system_and_user_messages_then_the_fields() -> None:
    row = task_row("What is 2+2?", system="Box it.", expected_answer="4")
    assert row == {
        "responses_create_params": {
            "input": [
                {"role": "system", "content": "Box it."},
                {"role": "user", "content": "What is 2+2?"},
            ]
        },
        "expected_answer": "4",
    }
    assert list(row) == ["responses_create_params", "expected_answer"]


def test_a_task_row_may_start_from_the_system_message_alone() -> None:
    row = task_row(None, system="Guess the number.", low=1)
    assert row["responses_create_params"]["input"] == [
        {"role": "system", "content": "Guess the number."}
    ]


def test_a_task_field_may_be_named_prompt() -> None:
    row = task_row("Write a poem.", prompt="Write a poem.")
    assert row["prompt"] == "Write a poem."
    assert row["responses_create_params"]["input"] == [{"role": "user", "content": "Write a poem."}]


def test_a_fence_ending_a_line_of_prose_opens_a_block() -> None:
    assert code_blocks('Here it is: ```json\n{"a": 1}\n```') == [CodeBlock("json", '{"a": 1}\n')]


def test_inline_triple_backticks_in_prose_open_no_block() -> None:
    assert code_blocks("Run ```ls``` first.\nThen stop.") == []
