"""Finding the code in a model's final answer: a ```python block, else the raw text."""

from __future__ import annotations

import re

from palaestra import PYTHON_TAGS, code_blocks, strip_reasoning


def extract_code(text: str, entry_point: str | None = None) -> str | None:
    """The code of an answer, or ``None`` when there is none.

    Reasoning (``<think>...</think>``, or everything up to a lone ``</think>``) is dropped.
    Among the fenced blocks tagged python (or untagged), the last one that defines
    ``entry_point`` is taken, else the last one; a block left open (a truncated answer) runs
    to the end. With no such block, the whole remaining text is the code.
    """
    text = strip_reasoning(text)
    blocks = [block.code for block in code_blocks(text, PYTHON_TAGS)]
    if blocks and entry_point:
        defining = re.compile(rf"^\s*(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", re.M)
        blocks = [b for b in blocks if defining.search(b)] or blocks
    code = blocks[-1] if blocks else text
    return code if code.strip() else None
