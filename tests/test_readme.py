"""README.md says what the code has: every built-in environment is in its table."""

from __future__ import annotations

from pathlib import Path

from palaestra.environment.finding.registry import builtin_names

README = Path(__file__).resolve().parent.parent / "README.md"


def environment_table() -> list[str]:
    """The names in the first column of the table under "## Built-in environments"."""
    section = README.read_text(encoding="utf-8").split("\n## Built-in environments\n", 1)[1]
    names: list[str] = []
    for line in section.split("\n#", 1)[0].splitlines():
        cells = line.split("|")
        if len(cells) > 2 and not set(cells[1].strip()) <= {"-"} and cells[1].strip() != "name":
            names += [name.strip() for name in cells[1].split(",")]
    return names


def test_the_readme_table_lists_every_built_in_environment_once() -> None:
    listed = environment_table()
    assert sorted(listed) == builtin_names()  # before: code_gen and python_tool were missing
    assert len(listed) == len(set(listed))
