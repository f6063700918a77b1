"""Finding the code in a model's final answer: a ```python block, else the raw text."""

from __future__ import annotations

import re

PYTHON_TAGS = frozenset({"", "python", "python3", "py", "py3"})
_THINKING = re.compile(r"<think>.*?</think>", flags=re.DOTALL)
_OPENING = re.compile(r"(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+.#-]*)")


def extract_code(text: str, entry_point: str | None = None) -> str | None:
    """The code of an answer, or ``None`` when there is none.

    Reasoning (``<think>...</think>``, or everything up to a lone ``</think>``) is dropped.
    Among the fenced blocks tagged python (or untagged), the last one that defines
    ``entry_point`` is taken, else the last one; a block left open (a truncated answer) runs
    to the end. With no such block, the whole remaining text is the code.
    """
    text = _THINKING.sub("", text)
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    blocks = [body for tag, body in fenced_blocks(text) if tag.lower() in PYTHON_TAGS]
    if blocks and entry_point:
        defining = re.compile(rf"^\s*(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", re.M)
        blocks = [b for b in blocks if defining.search(b)] or blocks
    code = blocks[-1] if blocks else text
    return code if code.strip() else None


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """Every fenced code block of a Markdown text as (language tag, body)."""
    blocks: list[tuple[str, str]] = []
    fence: str | None = None
    tag = ""
    body: list[str] = []
    for line in text.split("\n"):
        stripped = line.strip()
        if fence is None:
            opening = _OPENING.match(stripped)
            if opening:
                fence, tag, body = opening.group(1), opening.group(2), []
        elif stripped.startswith(fence) and not stripped.strip(fence[0]):
            blocks.append((tag, "\n".join(body) + "\n"))
            fence = None
        else:
            body.append(line)
    if fence is not None:  # never closed: the answer was cut off
        blocks.append((tag, "\n".join(body) + "\n"))
    return blocks
