from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from palaestra.environment.finding.registry import builtin_names, find_environment, task_split
from palaestra.errors import ConfigError

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


def install_fake_plugin(root: Path, *, broken: bool = False) -> dict[str, str]:
    """A package with a ``palaestra.environments`` entry point, importable from ``root``."""
    (root / "dice_plugin.py").write_text(PLUGIN)
    dist = root / "dice_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: dice-plugin\nVersion: 1.0\n")
    target = "missing_module:Nope" if broken else "dice_plugin:Dice"
    (dist / "entry_points.txt").write_text(f"[palaestra.environments]\ndice = {target}\n")
    return {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "200"}


def test_envs_lists_entry_point_plugins(tmp_path: Path) -> None:
    environ = install_fake_plugin(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "palaestra", "envs"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert any(line.strip().startswith("dice ") for line in done.stdout.splitlines())
    details = subprocess.run(
        [sys.executable, "-m", "palaestra", "envs", "--details", "dice"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert details.returncode == 0, details.stderr
    assert "roll" in details.stdout and "plug-in dice_plugin:Dice" in details.stdout


def test_a_broken_plugin_is_reported_not_fatal(tmp_path: Path) -> None:
    environ = install_fake_plugin(tmp_path, broken=True)
    done = subprocess.run(
        [sys.executable, "-m", "palaestra", "envs"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert "weather" in done.stdout
    assert "environment 'dice' (missing_module:Nope) failed to load" in done.stderr


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
