"""``palaestra test``'s adversarial sweep: every cheat scores 0 on a sound machine task, and a
task whose tests can be steered by what the agent leaves fails it, naming the cheat.

The rollouts are real: boxes from the rootfs provider (and Docker when its daemon answers),
the cheats' commands sent through the environment's ``bash`` tool, its own seal and verify."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from palaestra.authoring import Status, check_environment
from palaestra.authoring.cheats import CHEATS, instruction_paths, sample_tasks
from palaestra.cli import cli
from palaestra.environment.kinds.harbor import HarborEnvironment
from palaestra.environment.kinds.harbor.tasks import task_row
from tests.environment.kinds.harbor.conftest import (  # noqa: F401 (fixtures)
    base_tar,
    default_rootfs,
    docker_or_skip,
    layer_cache,
    runtime,
)
from tests.support.harbor_folders import TASK_TOML, components_task

SOUND_TEST_SH = """\
#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat /app/out.txt 2>/dev/null)" = ok ]; then echo 1; else echo 0; fi \\
    > /logs/verifier/reward.txt
"""
"""Root compares a file's content with the answer, after the agent's phase: nothing the agent
left runs."""
WEAK_TEST_SH = """\
#!/bin/bash
mkdir -p /logs/verifier
cd /app
if PYTHONPATH=/app python3 -c 'import answer, sys; sys.exit(0 if answer.answer() == 42 else 1)'
then echo 1; else echo 0; fi > /logs/verifier/reward.txt
"""
"""Imports the agent's module as root with the workdir first on the path and trusts Python's
exit status: a ``sitecustomize`` the agent left in the workdir decides both."""
WEAK_SOLVE_SH = "#!/bin/bash\nprintf 'def answer():\\n    return 42\\n' > /app/answer.py\n"
ROOT_AGENT = TASK_TOML.replace('user = "agent"', 'user = "root"')


def categorised(toml: str, category: str | None) -> str:
    return toml if category is None else f'{toml}\n[metadata]\ncategory = "{category}"\n'


@pytest.fixture(params=["rootfs", "docker"])
def sandbox(request: pytest.FixtureRequest) -> str:
    """Each provider that can run here, as ``--env-arg sandbox=...`` names it (rootfs on the
    test's base, layers and box directory)."""
    if request.param == "docker":
        docker_or_skip()
    else:
        if os.geteuid() != 0:
            pytest.skip("the rootfs provider needs root (kernel overlay mounts)")
        request.getfixturevalue("default_rootfs")
    return str(request.param)


def test_the_sample_is_spread_over_each_category_and_deterministic(tmp_path: Path) -> None:
    folders = {"a1": "a", "a2": "a", "a3": "a", "b1": "b", "x1": None, "x2": None}
    for name, category in folders.items():
        components_task(tmp_path / name, toml=categorised(TASK_TOML, category))
    environment = HarborEnvironment(str(tmp_path))
    rows = [task_row(name, environment.tasks[name]) for name in sorted(folders)]
    rows.insert(2, {"harbor_task": "gone"})  # names no folder: left out, not a crash

    def chosen(per_category: int) -> list[tuple[int, str, str]]:
        sample = sample_tasks(environment, rows, per_category)
        return [(task.index, task.folder, task.category) for task in sample]

    assert chosen(1) == [(1, "a2", "a"), (4, "b1", "b"), (6, "x2", "uncategorised")]
    assert chosen(2) == [
        (0, "a1", "a"),
        (3, "a3", "a"),
        (4, "b1", "b"),
        (5, "x1", "uncategorised"),
        (6, "x2", "uncategorised"),
    ]
    assert chosen(5) == chosen(3) and len(chosen(3)) == 6
    assert chosen(1) == chosen(1)


def test_each_cheat_is_documented_and_named_once() -> None:
    names = [cheat.name for cheat in CHEATS]
    assert len(set(names)) == len(names) >= 12
    for cheat in CHEATS:
        assert cheat.tries and cheat.why and cheat.commands


def test_the_deliverables_are_the_paths_the_instruction_names_outside_the_verifiers() -> None:
    text = (
        "Write `/app/bin/dedupe` (see /app/example/input.txt.) and leave the answer in "
        "/answer/answer.txt, not in /logs/verifier/reward.txt or /tests; see ./rel/x and a/b/c."
    )
    row = {"responses_create_params": {"input": [{"role": "user", "content": text}]}}
    expected = ["/app/bin/dedupe", "/app/example/input.txt", "/answer/answer.txt"]
    assert instruction_paths(row) == expected
    assert instruction_paths({"responses_create_params": {"input": text}}) == expected


def test_an_environment_that_is_no_machine_gets_no_sweep(tmp_path: Path) -> None:
    from tests.support.gold_envs import Ledger

    rows = tmp_path / "t.jsonl"
    rows.write_text(json.dumps({"responses_create_params": {"input": "Pay 5."}, "amount": 5}))
    report = check_environment(Ledger, tasks=rows, smoke=None)
    assert "cheats" not in [check.name for check in report.checks]


def test_no_cheat_scores_on_a_task_judged_by_root_after_the_agent(
    tmp_path: Path, sandbox: str
) -> None:
    for name, toml in (("as-agent", TASK_TOML), ("as-root", ROOT_AGENT)):
        components_task(tmp_path / name, toml=toml, test_sh=SOUND_TEST_SH)
    report = check_environment(
        f"harbor:{tmp_path}", env_args={"sandbox": sandbox}, smoke=None, cheat_sample=2
    )
    cheats = report.check("cheats")
    assert cheats.status is Status.PASS, cheats.details.get("results")
    every = f"{len(CHEATS)} cheats scored 0"
    assert cheats.reason.startswith(f"{every} on 2 tasks (2 per category of 1) in ")
    assert cheats.details["results"] == [
        f"ok   task 0 (as-agent): {every}",
        f"ok   task 1 (as-root): {every}",
    ]
    assert report.ok


def test_a_task_that_trusts_pythons_exit_status_fails_naming_the_cheat(
    tmp_path: Path, sandbox: str
) -> None:
    components_task(
        tmp_path / "weak",
        test_sh=WEAK_TEST_SH,
        solve_sh=WEAK_SOLVE_SH,
        instruction="Write /app/answer.py whose answer() returns 42.\n",
    )
    arguments = ["test", f"harbor:{tmp_path}", "--no-model", "--env-arg", f"sandbox={sandbox}"]
    result = CliRunner().invoke(cli, arguments)
    assert result.exit_code == 1, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    assert "PASS null agent: doing nothing scores 0 on 1 task that require an action" in lines
    (failed,) = [line for line in lines if line.startswith("FAIL cheats: ")]
    assert failed == "FAIL cheats: task 0 (weak): sitecustomize scored 1 (reward.json)"
    assert "FAIL task 0 (weak): sitecustomize scored 1 (reward.json)" in lines  # alone
