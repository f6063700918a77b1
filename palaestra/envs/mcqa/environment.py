"""mcqa: multiple-choice questions, graded by extracting one option letter from the answer.

Task fields: ``options`` (a list, lettered A, B, C, ... in order, or an object mapping letters
to option texts), ``expected_answer`` (the right letter), ``grading_mode`` (below) and, for the
``regex`` mode, ``answer_regex``. Grading modes, each reading the last match in the answer:

- ``strict_boxed`` (default): ``\\boxed{B}`` holding exactly one option letter.
- ``lenient_boxed``: ``\\boxed{...}`` holding a letter in any dress (``(B)``, ``B)``, ``B. Paris``,
  ``\\text{B}``) or the text of an option.
- ``answer_colon``: a line ``Answer: B`` (also ``answer: (B)``, ``**Answer:** B``).
- ``regex``: the task's ``answer_regex``; its first group (or the whole match) is the letter.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

from palaestra import (
    Environment,
    FailureKind,
    InvalidTask,
    JsonDict,
    Session,
    Verdict,
    last_boxed,
    last_labelled,
    output_text,
    strip_reasoning,
    task_row,
)
from palaestra.envs._shared.puzzles import make_question

GRADING_MODES = ("strict_boxed", "lenient_boxed", "answer_colon", "regex")
_LETTER = re.compile(r"\(?([A-Za-z])\)?[\s*_.]*")


class InvalidChoices(InvalidTask):
    """The task row is malformed: an ``invalid_input`` failure, not a 0."""


class MultipleChoice(Environment):
    """Multiple-choice questions; reward 1 when the extracted option letter is the right one."""

    name = "mcqa"
    generated_grading_mode = "strict_boxed"
    """The grading mode of tasks from ``generate_tasks`` (their prompts ask for that format)."""

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        task = session.task
        try:
            letters = option_letters(task)
            expected = str(task.get("expected_answer", "")).strip().upper()
            if expected not in letters:
                raise InvalidChoices(
                    f"expected_answer {expected!r} is not one of the options {letters}"
                )
            mode = str(task.get("grading_mode", "strict_boxed"))
            chosen = extract_choice(strip_reasoning(output_text(response)), task, mode)
        except (InvalidChoices, re.error) as error:
            return Verdict.failed(FailureKind.INVALID_INPUT, str(error))
        return Verdict(
            reward=1.0 if chosen == expected else 0.0,
            metrics={
                "extracted_answer": chosen or "",
                "answer_found": chosen is not None,
                "grading_mode": mode,
            },
        )

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """Arithmetic, prime, comparison, sequence and letter-count questions, 4 options each."""
        rng = random.Random(seed)
        for _ in range(count):
            question, options, answer = make_question(rng)
            yield question_row(question, options, answer, self.generated_grading_mode)


def option_letters(task: JsonDict) -> dict[str, str]:
    """Letter -> option text, from a list (A, B, C, ...) or an object of letters."""
    options = task.get("options")
    if isinstance(options, list) and 2 <= len(options) <= 26:
        return {chr(ord("A") + i): str(text) for i, text in enumerate(options)}
    if (
        isinstance(options, dict)
        and options
        and all(isinstance(k, str) and re.fullmatch(r"[A-Za-z]", k) for k in options)
    ):
        return {k.upper(): str(v) for k, v in options.items()}
    raise InvalidChoices(
        "task field 'options' must be a list of 2-26 options or an object of letters"
    )


def extract_choice(text: str, task: JsonDict, mode: str) -> str | None:
    """The option letter the answer gives under ``mode``, or None when it gives none."""
    letters = option_letters(task)
    if mode == "strict_boxed":
        boxed = last_boxed(text)
        candidate = boxed.upper() if boxed is not None else None
        return candidate if candidate in letters else None
    if mode == "lenient_boxed":
        boxed = last_boxed(text)
        return None if boxed is None else _lenient_letter(boxed, letters)
    if mode == "answer_colon":
        labelled = _LETTER.fullmatch(last_labelled(text, "answer") or "")
        chosen = labelled.group(1).upper() if labelled else None
        return chosen if chosen in letters else None
    if mode == "regex":
        pattern = task.get("answer_regex")
        if not isinstance(pattern, str) or not pattern:
            raise InvalidChoices("grading_mode 'regex' needs a task field 'answer_regex'")
        matches = list(re.finditer(pattern, text, flags=re.M))
        if not matches:
            return None
        last = matches[-1]
        letter = (last.group(1) if last.groups() else last.group(0)).strip().upper()
        return letter if letter in letters else None
    raise InvalidChoices(f"grading_mode must be one of {GRADING_MODES}, not {mode!r}")


def _lenient_letter(boxed: str, letters: dict[str, str]) -> str | None:
    inner = re.sub(r"\\(?:text|textbf|mathrm|mathbf)\{([^{}]*)\}", r"\1", boxed).strip()
    letter = re.fullmatch(r"\(?([A-Za-z])\)?(?:[.):]\s*.*)?", inner, flags=re.S)
    if letter and letter.group(1).upper() in letters:
        return letter.group(1).upper()
    by_text = [k for k, v in letters.items() if v.strip().lower() == inner.strip(" .").lower()]
    return by_text[0] if len(by_text) == 1 else None


_FORMAT_HINT = {
    "strict_boxed": "Think it through, then give only the letter X of the right option as "
    "\\boxed{X}.",
    "lenient_boxed": "Think it through, then put your final choice in \\boxed{}.",
    "answer_colon": "Think it through, then end with a line 'Answer: X', where X is the letter "
    "of the right option.",
}


def question_row(question: str, options: list[str], answer: str, mode: str) -> JsonDict:
    """A task row whose prompt lists the options and asks for the format ``mode`` grades."""
    listed = "\n".join(f"{chr(ord('A') + i)}) {text}" for i, text in enumerate(options))
    prompt = f"{question}\n\n{listed}\n\n{_FORMAT_HINT[mode]}"
    return task_row(
        prompt, question=question, options=options, expected_answer=answer, grading_mode=mode
    )
