from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra.environment.finding.registry import (
    available_environments,
    builtin_names,
    environments,
    find_environment,
    task_split,
)
from palaestra.errors import ConfigError
from tests.support.distribution import on_sys_path, write_distribution

PLUGIN = '''
from palaestra import Environment, tool


class Dice(Environment):
    """Roll dice; a plug-in environment."""

    @tool
    def roll(self) -> int:
        """Roll a die."""
        return 4

    def verify(self, session, response):
        return 1.0
'''


@pytest.fixture
def plugins(tmp_path: Path) -> Iterator[Path]:
    """An installed distribution with two ``palaestra.environments`` entry points: ``dice``,
    and ``broken``, whose module does not exist (``palaestra envs`` on them: test_envs_cli)."""
    write_distribution(
        tmp_path,
        "dice-plugin",
        modules={"dice_plugin.py": PLUGIN},
        entry_points={
            "palaestra.environments": {"dice": "dice_plugin:Dice", "broken": "missing_module:Nope"}
        },
    )
    with on_sys_path(tmp_path):
        yield tmp_path


def test_entry_point_plugins_are_found_by_name_after_the_built_ins(plugins: Path) -> None:
    names = environments().names()
    assert {"dice", "broken", "weather"} <= set(names)
    assert names.index("dice") > names.index("weather")
    dice = find_environment("dice")
    assert dice.source == "plug-in dice_plugin:Dice"
    assert dice.environment.__name__ == "Dice" and list(dice.environment.tool_specs) == ["roll"]


def test_a_broken_plugin_is_reported_not_fatal(plugins: Path) -> None:
    found, problems = available_environments()
    assert {"dice", "weather"} <= {entry.name for entry in found}
    assert "broken" not in {entry.name for entry in found}
    assert problems == [
        "environment 'broken' (missing_module:Nope) failed to load: "
        "ModuleNotFoundError: No module named 'missing_module'"
    ]


def test_the_pieces_built_ins_share_are_not_listed_as_a_built_in() -> None:
    names = builtin_names()
    assert "math" in names
    assert [name for name in names if name.startswith("_")] == []
    with pytest.raises(ConfigError):
        find_environment("_shared")


def test_find_by_import_path_and_file(tmp_path: Path) -> None:
    assert find_environment("palaestra.envs.counter.environment:Counter").name == "counter"
    (tmp_path / "two.py").write_text(PLUGIN + PLUGIN.replace("Dice", "Coin"))
    with pytest.raises(ConfigError, match=r"2 Environment subclasses.*two.py:ClassName"):
        find_environment(str(tmp_path / "two.py"))
    assert find_environment(f"{tmp_path / 'two.py'}:Coin").name == "coin"
    with pytest.raises(ConfigError, match="not found"):
        find_environment(str(tmp_path / "absent.py"))


def test_a_split_is_the_file_of_its_name_in_the_splits_folder_beside_the_module(
    tmp_path: Path,
) -> None:
    (tmp_path / "dice_env.py").write_text(PLUGIN)
    (tmp_path / "splits").mkdir()
    row = '{"responses_create_params": {"input": "Roll."}}\n'
    (tmp_path / "splits" / "smoke.jsonl").write_text(row)
    (tmp_path / "splits" / "hard.jsonl").write_text(row)
    dice = find_environment(str(tmp_path / "dice_env.py")).environment
    assert task_split(dice, "smoke") == tmp_path / "splits" / "smoke.jsonl"
    with pytest.raises(ConfigError) as absent:
        task_split(dice, "tiny")
    named = "environment 'dice' has no task split 'tiny' (its splits: hard, smoke)"
    assert str(absent.value) == named


def test_a_split_of_an_environment_without_any_says_it_has_none(tmp_path: Path) -> None:
    (tmp_path / "dice_env.py").write_text(PLUGIN)
    dice = find_environment(str(tmp_path / "dice_env.py")).environment
    with pytest.raises(ConfigError) as absent:
        task_split(dice, "smoke")
    assert str(absent.value) == "environment 'dice' has no task split 'smoke' (it has none)"


EXAMPLES = '''
import json
from pathlib import Path

from palaestra import Environment, tool


class Dice(Environment):
    """Roll a die of some sides; its example tasks are made for the sides it is given."""

    def __init__(self, sides: int = 6, colour: str = "red") -> None:
        self.sides = sides

    @classmethod
    def example_tasks_file(cls, sides: int = 6) -> Path:
        path = Path(__file__).with_name(f"tasks-{sides}.jsonl")
        row = {"responses_create_params": {"input": f"Roll a d{sides}."}, "sides": sides}
        path.write_text(json.dumps(row) + "\\n")
        return path

    @tool
    def roll(self) -> int:
        """Roll the die."""
        return 4

    def verify(self, session, response):
        return 1.0
'''


def test_the_example_tasks_are_made_with_the_environment_arguments_they_take(
    tmp_path: Path,
) -> None:
    (tmp_path / "dice_env.py").write_text(EXAMPLES)
    found = find_environment(str(tmp_path / "dice_env.py"), {"sides": "20", "colour": "blue"})
    assert found.example_tasks == tmp_path / "tasks-20.jsonl"
    assert '"sides": 20' in found.example_tasks.read_text()  # typed as the method says
    assert find_environment(str(tmp_path / "dice_env.py")).example_tasks == (
        tmp_path / "tasks-6.jsonl"
    )
