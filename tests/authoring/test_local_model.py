"""``palaestra test`` with the real embedded model: an ``init``-ed package and every built-in.

The smoke runs are kept small (two tasks, short answers, one model turn each: the model's
prompt is most of the cost, and two one-turn rollouts cost what one two-turn rollout did) so
the whole file stays within its budget on two cores; the two rollouts run side by side, as
every smoke run's do, so a built-in that is not safe under concurrent rollouts fails here.
The model reads each prompt once (a second prompt that begins like the first reuses its
prefix), so each built-in's smoke run takes the two tasks whose prompts cost least together
(``smoke_first``).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from palaestra.authoring import SmokeOptions, Status, check_environment, init_environment
from palaestra.authoring.golden import GOLDEN
from palaestra.cli.review import test_env_command as palaestra_test
from palaestra.environment.finding.registry import builtin_names, find_environment
from tests.models.test_local import needs_local

pytestmark = [pytest.mark.local_model, needs_local]

SMALL = SmokeOptions(tasks=2, max_output_tokens=48, max_steps=1)
ENV_ARGS = {"tau2": {"user": "gold"}}
"""Built-ins that need an argument to run here: tau2's user is a model (``--user-model``) unless
it is told to replay the gold user, which makes its oracle and null checks deterministic."""
SAMPLED = {"swe_local": 180, "terminal": 46, "science_world": 5}
"""Built-ins whose every example task is too slow to check in this file: every ``n``-th task
here, the oracle and null checks of each and the cheat sweep on one of each family
(``palaestra test NAME --no-model`` checks them all). swe_local runs each task's tests twice
(six tasks here, Python and Go, across the manifest's repositories); terminal's tasks each
start a machine twice, and each family sampled adds a machine per cheat (four tasks of two
families here); each ScienceWorld game starts its simulator in Java (the 10 took longer than
every other built-in of this file together)."""


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


SMOKE_CANDIDATES = {
    "long_context": ({"family": "niah_single_1,niah_single_2", "length": 512}, 2),
    "bfcl_multi_turn": ({}, 100),
}
"""Built-ins whose smoke run takes two generated tasks (drawn from ``count`` generated with
these arguments, the two ``smoke_first`` puts first) that the model reads faster than any two
examples, put before the examples (the oracle and null checks take them and every example):
long_context's examples fill 2,048 tokens, and two 512-token needle tasks are a quarter of the
model's work; a bfcl_multi_turn task offers every function of the classes it involves, and two
tasks of one class share their whole tool list (about 1,950 prompt tokens, not 3,240)."""


SYSTEM_ROLES = ("system", "developer")


def prompt_text(line: str) -> str:
    """A task's prompt as the model reads it, in its order: the system turn (instructions,
    system messages, the tools), then the conversation."""
    params = orjson.loads(line).get("responses_create_params", {})
    given = params.get("input")
    turns = [{"role": "user", "content": given}] if isinstance(given, str) else given or []
    system = [t for t in turns if isinstance(t, dict) and t.get("role") in SYSTEM_ROLES]
    rest = [t for t in turns if t not in system]
    return orjson.dumps([params.get("instructions"), system, params.get("tools"), rest]).decode()


def shared_prefix(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` share from their start (a binary search over
    slices: a character loop over every pair of a hundred candidates takes seconds)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def smoke_first(lines: list[str]) -> list[str]:
    """The task lines with the two the model reads fastest first (the others in their order):
    the smoke run takes the first two, and the model's prompt is most of its cost. Two prompts
    that begin alike cost little more than one (llama.cpp keeps the first's prefix): their
    cost is both lengths less what they share. The oracle and null checks still take them all.
    """
    texts = [prompt_text(line) for line in lines]

    def cost(pair: tuple[int, int]) -> int:
        a, b = texts[pair[0]], texts[pair[1]]
        return len(a) + len(b) - shared_prefix(a, b)

    if len(lines) < 2:
        return lines
    first = min(itertools.combinations(range(len(lines)), 2), key=cost)
    return [lines[i] for i in first] + [line for i, line in enumerate(lines) if i not in first]


def task_lines(name: str) -> list[str]:
    """The task lines the built-in ``name`` is checked on here: its examples (every
    ``SAMPLED`` one), after the two ``SMOKE_CANDIDATES`` ones, the smoke run's two first."""
    examples = find_environment(name).example_tasks
    assert examples is not None
    lines = [line for line in examples.read_text().splitlines() if line.strip()]
    lines = lines[:: SAMPLED.get(name, 1)]
    if name in SMOKE_CANDIDATES:
        arguments, count = SMOKE_CANDIDATES[name]
        generated = find_environment(name).environment(**arguments).generate_tasks(count, 0)
        lines = smoke_first([orjson.dumps(row).decode() for row in generated])[:2] + lines
    return smoke_first(lines)


@pytest.mark.parametrize("name", builtin_names())
def test_every_builtin_environment_passes_palaestra_test(name: str, tmp_path: Path) -> None:
    lines = task_lines(name)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(lines) + "\n")
    report = check_environment(name, env_args=ENV_ARGS.get(name), tasks=tasks, smoke=SMALL)
    assert report.ok, [(check.name, check.reason) for check in report.failures]
    golden = sum(GOLDEN in orjson.loads(line) for line in lines)  # every one is scored
    answers = report.check("golden answers")
    assert (answers.status, answers.details.get("tasks")) == (
        (Status.PASS, golden) if golden else (Status.SKIP, None)
    )
    run = report.check("smoke run")
    assert run.status is Status.PASS and run.details["rollouts"] == 2
    assert report.check("sessions closed").details == {"opened": 2, "closed": 2, "left_open": 0}
    assert report.check("framework CPU").details["per_rollout_ms"] is not None
