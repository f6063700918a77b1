"""``palaestra test`` with the real embedded model: an ``init``-ed package and every built-in.

The smoke runs are kept small (two tasks, short answers, one model turn each: the model's
prompt is most of the cost, and two one-turn rollouts cost what one two-turn rollout did) so
the whole file stays within its budget on two cores; the two rollouts run side by side, as
every smoke run's do, so a built-in that is not safe under concurrent rollouts fails here.
Workplace's 25 tool schemas make its prompt the longest (about 20 s of model CPU for one
rollout).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from palaestra.authoring import SmokeOptions, Status, check_environment, init_environment
from palaestra.cli.review import test_env_command as palaestra_test
from palaestra.environment.registry import builtin_names, find_environment
from tests.models.test_local import needs_local

pytestmark = [pytest.mark.local_model, needs_local]

SMALL = SmokeOptions(tasks=2, max_output_tokens=48, max_steps=1)
ENV_ARGS = {"tau2": {"user": "gold"}}
"""Built-ins that need an argument to run here: tau2's user is a model (``--user-model``) unless
it is told to replay the gold user, which makes its oracle and null checks deterministic."""
SAMPLED = {"swe_local": 90, "terminal": 23, "science_world": 5}
"""Built-ins whose every example task is too slow to check in this file: every ``n``-th task
here, the oracle and null checks of each (``palaestra test NAME --no-model`` checks them all).
swe_local runs each task's tests twice (a few of its Python tasks here, across the
manifest's repositories); terminal's tasks each start a machine twice; each ScienceWorld game
starts its simulator in Java (the 10 took longer than every other built-in of this file
together)."""


def test_a_freshly_initialised_package_passes_palaestra_test(tmp_path: Path) -> None:
    scaffold = init_environment("my-env", tmp_path / "my-env")
    result = CliRunner().invoke(
        palaestra_test, [str(scaffold.environment_file), "--smoke-tasks", "2"]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"my_env ({scaffold.environment_file})"
    assert [line.split(":")[0].split(maxsplit=1) for line in lines[1:-1]] == [
        ["PASS", "tool schemas"],
        ["PASS", "tool docs"],
        ["PASS", "example tasks"],
        ["PASS", "task tools"],
        ["PASS", "golden answers"],
        ["SKIP", "oracle"],
        ["SKIP", "null agent"],
        ["SKIP", "generated tasks"],
        ["PASS", "seeded start"],
        ["PASS", "smoke run"],
        ["PASS", "sessions closed"],
        ["PASS", "framework CPU"],
    ]
    assert "2 rollouts with SmolLM2" in result.output
    assert "2 sessions opened, all closed by their rollout" in result.output
    assert "ms of CPU per rollout outside the model" in result.output
    assert lines[-1] == "passed: 12 checks, 0 failed, 3 skipped"


def prompt_size(line: str) -> int:
    """How long a task's prompt is: the characters of its input and tools."""
    params = orjson.loads(line).get("responses_create_params", {})
    return len(orjson.dumps([params.get("input"), params.get("tools")]))


def shortest_first(lines: list[str]) -> list[str]:
    """The task lines with the shortest prompts first (ties in their order): the smoke run
    takes the first two, and the model's prompt is most of its cost (AgentDojo's first two
    examples are three times its last two); the oracle and null checks still take them all."""
    return sorted(lines, key=prompt_size)


@pytest.mark.parametrize("name", builtin_names())
def test_every_builtin_environment_passes_palaestra_test(name: str, tmp_path: Path) -> None:
    examples = find_environment(name).example_tasks
    assert examples is not None
    lines = [line for line in examples.read_text().splitlines() if line.strip()]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(shortest_first(lines[:: SAMPLED.get(name, 1)])) + "\n")
    report = check_environment(name, env_args=ENV_ARGS.get(name), tasks=tasks, smoke=SMALL)
    assert report.ok, [(check.name, check.reason) for check in report.failures]
    run = report.check("smoke run")
    assert run.status is Status.PASS and run.details["rollouts"] == 2
    assert report.check("sessions closed").details == {"opened": 2, "closed": 2, "left_open": 0}
    assert report.check("framework CPU").details["per_rollout_ms"] is not None
