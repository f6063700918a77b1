"""Reading a model's answer out of its text, and writing the task row that asks for it.

A verifier usually reads one thing from the final assistant text (``output_text(response)``):
first drop the reasoning, then take the answer in the format the prompt asked for:

```python
text = strip_reasoning(output_text(response))
answer = last_boxed(text)          # \\boxed{...}, braces balanced
answer = last_tagged(text)         # <answer>...</answer>
answer = last_labelled(text)       # a line "Answer: ..."
code = last_code_block(text, PYTHON_TAGS)
```

Each returns ``None`` when the text holds no such answer, so "no answer" (reward 0, an
``answer_found: false`` metric) is never confused with an empty one. Every function is pure
and takes time linear in the text, fine to call inside ``verify``. ``task_row`` writes the
other side: a task row whose prompt asks for the answer, with the fields ``verify`` reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from palaestra.types import JsonDict
from palaestra.wire.rows import PARAMS

__all__ = [
    "PYTHON_TAGS",
    "CodeBlock",
    "code_blocks",
    "first_command",
    "last_boxed",
    "last_code_block",
    "last_labelled",
    "last_tagged",
    "strip_reasoning",
    "task_row",
]

_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_MARKUP = " \t\r\f\v*_"
_BOX_OPENINGS = ("\\boxed{", "\\fbox{")
_FENCE_OPENING = re.compile(r"(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+.#-]*)")
_FENCE_LINE = re.compile(r"^```\w*$")
_COMMAND_LABEL = re.compile(r"^(command|action)\s*:\s*", re.IGNORECASE)

PYTHON_TAGS = frozenset({"", "python", "python3", "py", "py3"})
"""Language tags of fenced blocks that hold Python (an untagged block counts as Python)."""


def strip_reasoning(text: str) -> str:
    """``text`` without the model's reasoning, which a verifier must never score.

    Every ``<think>...</think>`` block is removed. A lone ``</think>`` (the chat template put
    the opening tag in the prompt, as Qwen3 and DeepSeek-R1 templates do) means everything
    before it was reasoning; a ``<think>`` that is never closed (the answer was cut off while
    reasoning) means everything after it was. The rest is returned as it is, unstripped.
    """
    if _THINK_OPEN not in text and _THINK_CLOSE not in text:
        return text
    kept: list[str] = []
    position = 0
    for begin, end in _pairs(text, _THINK_OPEN, _THINK_CLOSE):
        kept.append(text[position:begin])
        position = end + len(_THINK_CLOSE)
    text = "".join(kept) + text[position:]
    closing = text.rfind(_THINK_CLOSE)
    if closing >= 0:
        text = text[closing + len(_THINK_CLOSE) :]
    opening = text.find(_THINK_OPEN)
    return text if opening < 0 else text[:opening]


def first_command(text: str) -> str:
    """The command a text-game answer gives: its first line of words, reasoning and code fences
    dropped, a ``Command:``/``Action:`` label, quotes, a prompt sign and a final full stop
    removed, lower case with single spaces; ``""`` when there is none."""
    for line in strip_reasoning(str(text)).splitlines():
        command = line.strip()
        if not command or _FENCE_LINE.match(command):
            continue
        command = command.strip("`*\"' ").lstrip(">").strip()
        command = _COMMAND_LABEL.sub("", command)
        command = command.rstrip(".!").strip("`*\"' ")
        if command:
            return " ".join(command.lower().split())
    return ""


def last_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``), stripped.

    Braces are balanced, so ``\\boxed{\\frac{1}{2}}`` gives ``\\frac{1}{2}``. ``None`` when
    there is no box, or when the last one is never closed (a truncated answer: an earlier
    box is not taken in its place, the model had moved past it).
    """
    start = max(text.rfind(opening) for opening in _BOX_OPENINGS)
    if start < 0:
        return None
    begin = text.index("{", start) + 1
    depth = 1
    for position in range(begin, len(text)):
        char = text[position]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[begin:position].strip()
    return None


def last_tagged(text: str, tag: str = "answer") -> str | None:
    """The content of the last ``<tag>...</tag>`` (default ``<answer>``), stripped.

    The content may span lines; an opening tag never closed is not an answer. ``None`` when
    there is none; ``""`` when the last one is empty.
    """
    opening = f"<{tag}>"
    pairs = list(_pairs(text, opening, f"</{tag}>"))
    if not pairs:
        return None
    begin, end = pairs[-1]
    return text[begin + len(opening) : end].strip()


def _pairs(text: str, opening: str, closing: str) -> Iterator[tuple[int, int]]:
    """(start of ``opening``, start of ``closing``) of each block, left to right, the first
    closing after an opening ending its block: what a lazy regex finds, in linear time (a
    regex rescans the rest of the text for every opening never closed)."""
    position = 0
    while (begin := text.find(opening, position)) >= 0:
        end = text.find(closing, begin + len(opening))
        if end < 0:
            return
        yield begin, end
        position = end + len(closing)


def last_labelled(text: str, label: str = "Answer") -> str | None:
    """The value of the last line that reads ``Answer: X`` (``label``, any case), stripped.

    Markdown around the label and the value is ignored (``**Answer:** X``, ``## Answer: X``,
    ``> answer: _X_``), and the value may stand on the next line that is not blank. A label
    with no value is no answer. ``None`` when no line gives one.
    """
    line_label = re.compile(rf"[ \t*_#>-]*{re.escape(label)}[ \t*_]*:(.*)", flags=re.IGNORECASE)
    lines = text.split("\n")
    found = None
    for number, line in enumerate(lines):
        labelled = line_label.match(line)
        if labelled is None:
            continue
        value = labelled.group(1).strip(_MARKUP)
        if not value:  # "Answer:" alone: the value is on the next line that is not blank
            later = (lines[after].strip(_MARKUP) for after in range(number + 1, len(lines)))
            value = next((v for v in later if v), "")
        found = value or found
    return found


class CodeBlock(NamedTuple):
    """One fenced code block of a Markdown text."""

    language: str
    """The tag after the opening fence as written (``Python``, ``json``); ``""`` when none."""
    code: str
    """The lines between the fences, each ending in a newline."""


def code_blocks(text: str, languages: Iterable[str] | None = None) -> list[CodeBlock]:
    """Every fenced code block of ``text`` in order; only those tagged ``languages`` if given.

    Fences are lines of three or more backticks or tildes (CommonMark). Tags compare
    case-insensitively and ``""`` stands for an untagged block (``PYTHON_TAGS`` is the set
    for Python). Forgiving where model answers are sloppy: a block left open (the answer was
    cut off) runs to the end; a fence that ends a line of prose opens a block ("Here it is:
    ```json"), and one that ends a line of code closes it.
    """
    wanted = None if languages is None else {tag.lower() for tag in languages}
    blocks: list[CodeBlock] = []
    fence: str | None = None
    tag = ""
    body: list[str] = []
    for line in text.split("\n"):
        stripped = line.strip()
        if fence is None:
            opening = _FENCE_OPENING.search(stripped)
            if opening is None:
                continue
            rest = stripped[opening.end() :]
            # At the line's start a fence may carry more words ("```python title"); after
            # prose ("Here it is: ```json") it must end the line, else it is inline code.
            if opening.group(1) not in rest and (opening.start() == 0 or not rest.strip()):
                fence, tag, body = opening.group(1), opening.group(2), []
            continue
        if stripped.startswith(fence) and not stripped.strip(fence[0]):
            blocks.append(CodeBlock(tag, "\n".join(body) + "\n"))
            fence = None
        elif stripped.endswith(fence):  # "return x```": the model closed it on the same line
            body.append(line.rstrip().rstrip(fence[0]))
            blocks.append(CodeBlock(tag, "\n".join(body) + "\n"))
            fence = None
        else:
            body.append(line)
    if fence is not None:  # never closed: the answer was cut off
        blocks.append(CodeBlock(tag, "\n".join(body) + "\n"))
    return [b for b in blocks if wanted is None or b.language.lower() in wanted]


def last_code_block(text: str, languages: Iterable[str] | None = None) -> str | None:
    """The code of the last fenced block (tagged ``languages`` if given), or ``None``."""
    blocks = code_blocks(text, languages)
    return blocks[-1].code if blocks else None


def task_row(prompt: str | None, /, *, system: str | None = None, **fields: Any) -> JsonDict:
    """A task row (a NeMo Gym dataset row) asking ``prompt``, with the task's own fields.

    ``responses_create_params.input`` holds the ``system`` message (if given), then the user
    message ``prompt`` (if given: a turn-based environment may start from the system message
    alone); ``fields`` (``expected_answer=...``) follow as they are, and ``verify`` reads
    them from ``session.task``.
    """
    messages: list[JsonDict] = []
    if system is not None:
        messages.append({"role": "system", "content": system})
    if prompt is not None:
        messages.append({"role": "user", "content": prompt})
    return {PARAMS: {"input": messages}, **fields}
