"""A separate verifier machine, collect hooks, artifacts and ``/logs/agent`` kept with the row,
health checks and multi-step tasks, on real boxes of each provider."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from palaestra.environment.kinds.harbor import HarborEnvironment
from palaestra.environment.sessions import Session
from palaestra.errors import SandboxFailure
from palaestra.sandbox.machines.provider import Provider
from palaestra.types import Verdict
from tests.environment.kinds.harbor.conftest import Rollouts
from tests.support.harbor_folders import TASK_TOML, components_task

EXAMPLE = Path(__file__).parents[4] / "examples" / "harbor" / "notes"

SEPARATE = 'artifacts = ["/app/out.txt"]\n' + TASK_TOML.replace(
    "[verifier]\n", '[verifier]\nenvironment_mode = "separate"\n'
)
# The separate verifier also says whether it sees what the agent left outside the artifacts.
SEPARATE_TEST = """\
#!/bin/bash
if [ "$(cat /app/out.txt 2>/dev/null)" = ok ]; then reward=1; else reward=0; fi
if [ -e /app/elsewhere.txt ]; then leaked=1; else leaked=0; fi
printf '{"reward": %s, "leaked": %s}\\n' "$reward" "$leaked" > /logs/verifier/reward.json
"""

Make = Callable[..., Awaitable[Rollouts]]


@pytest.fixture
async def tasks(tmp_path: Path, machines: Provider) -> AsyncIterator[Make]:
    """An environment over folders a test writes under ``tmp_path/tasks`` (``components_task``
    options by folder name, or a folder copied whole with ``copy=PATH``)."""
    holder: list[Rollouts] = []

    async def make(copy: Path | None = None, **folders: dict[str, str | None]) -> Rollouts:
        (tmp_path / "tasks").mkdir(exist_ok=True)
        if copy is not None:
            shutil.copytree(copy, tmp_path / "tasks" / copy.name)
        for name, options in folders.items():
            components_task(tmp_path / "tasks" / name, **options)  # type: ignore[arg-type]
        environment = HarborEnvironment(str(tmp_path / "tasks"), sandbox=machines.name)
        environment._provider = machines
        holder.append(Rollouts(environment))
        return holder[-1]

    yield make
    for rollouts in holder:
        for session in rollouts.sessions:
            await rollouts.environment.close(session)
        await rollouts.environment.aclose()


async def bash(rollouts: Rollouts, session: Session, command: str) -> str:
    return await rollouts.environment.bash(session, command)


async def test_a_separate_verifier_sees_only_the_agents_artifacts_in_a_fresh_machine(
    tasks: Make,
) -> None:
    rollouts = await tasks(a={"toml": SEPARATE, "test_sh": SEPARATE_TEST})
    session = await rollouts.seed("a")
    await bash(rollouts, session, "echo ok > /app/out.txt; echo x > /app/elsewhere.txt")
    verdict = await rollouts.verify(session)
    assert verdict.failure is None, verdict
    assert (verdict.reward, verdict.metrics["leaked"]) == (1.0, 0.0)
    files = {entry["path"]: entry for entry in verdict.metrics["artifacts"]["files"]}
    assert files["/app/out.txt"]["text"] == "ok\n"
    assert Path(verdict.metrics["artifacts"]["dir"], "app", "out.txt").read_text() == "ok\n"


async def test_a_separate_verifier_scores_an_untouched_machine_0(tasks: Make) -> None:
    rollouts = await tasks(a={"toml": SEPARATE, "test_sh": SEPARATE_TEST})
    verdict = await rollouts.verify(await rollouts.seed("a"))
    assert verdict.failure is None and verdict.reward == 0.0
    assert "artifacts" not in verdict.metrics


async def test_a_symlink_to_the_verifiers_logs_in_an_artifact_cannot_write_its_reward(
    tasks: Make,
) -> None:
    rollouts = await tasks(a={"toml": SEPARATE, "test_sh": SEPARATE_TEST})
    session = await rollouts.seed("a")
    await bash(rollouts, session, "ln -s /logs/verifier/reward.txt /app/out.txt")
    verdict = await rollouts.verify(session)
    assert verdict.reward == 0.0
    assert "is a link to an absolute path" in verdict.metrics["artifacts_problem"]
    assert "cannot be given the agent's files" in verdict.metrics["unverified"]


async def test_collect_hooks_run_after_the_agent_and_their_files_reach_the_verifier(
    tasks: Make,
) -> None:
    toml = SEPARATE.replace(
        "[agent]\n",
        '[[verifier.collect]]\ncommand = "mkdir -p /logs/artifacts && id -un > '
        '/logs/artifacts/who.txt"\n\n[[verifier.collect]]\ncommand = "exit 3"\n\n[agent]\n',
    )
    test_sh = (
        "#!/bin/bash\n"
        'if [ "$(cat /logs/artifacts/who.txt)" = root ]; then r=1; else r=0; fi\n'
        "echo $r > /logs/verifier/reward.txt\n"
    )
    rollouts = await tasks(a={"toml": toml, "test_sh": test_sh})
    verdict = await rollouts.verify(await rollouts.seed("a"))
    assert verdict.reward == 1.0, verdict
    assert verdict.metrics["collect_failed"] == [{"command": "exit 3", "problem": "exit status 3"}]


async def test_the_agents_logs_are_kept_with_the_row_in_the_shared_mode_too(tasks: Make) -> None:
    rollouts = await tasks(a={})
    session = await rollouts.seed("a")
    await bash(rollouts, session, "mkdir -p /logs/agent && echo step1 > /logs/agent/log.txt")
    verdict = await rollouts.verify(session)
    (entry,) = verdict.metrics["agent_logs"]["files"]
    assert (entry["path"], entry["text"]) == ("/logs/agent/log.txt", "step1\n")


async def test_a_machine_that_never_passes_its_health_check_is_not_the_agents_score(
    tasks: Make,
) -> None:
    healthy = TASK_TOML + '\n[environment.healthcheck]\ncommand = "test -d /app"\n'
    sick = TASK_TOML + (
        '\n[environment.healthcheck]\ncommand = "test -e /nowhere"\ninterval_sec = 0.1\n'
        "retries = 2\n"
    )
    rollouts = await tasks(good={"toml": healthy}, bad={"toml": sick})
    await rollouts.seed("good")
    with pytest.raises(SandboxFailure, match="healthcheck 'test -e /nowhere' failed 2 times"):
        await rollouts.seed("bad")


async def _steps(rollouts: Rollouts, session: Session, commands: list[str]) -> Verdict:
    environment = rollouts.environment
    for index, command in enumerate(commands):
        if command:
            await bash(rollouts, session, command)
        if index + 1 < len(commands):
            turn = await environment.user_turn(session, [])
            assert turn is not None and not turn.done
    assert await environment.user_turn(session, []) is None
    return await rollouts.verify(session)


async def test_a_multi_step_task_carries_its_machine_and_scores_each_step(tasks: Make) -> None:
    rollouts = await tasks(copy=EXAMPLE)
    assert rollouts.environment.user_turns
    session = await rollouts.seed("notes")
    environment = rollouts.environment
    await bash(rollouts, session, "echo hello > /app/notes.txt")
    turn = await environment.user_turn(session, [])
    assert turn is not None and "world" in turn.text and not turn.done
    await bash(rollouts, session, "echo world >> /app/notes.txt")
    assert await environment.user_turn(session, []) is None
    verdict = await rollouts.verify(session)
    assert verdict.reward == 1.0, verdict
    steps = verdict.metrics["harbor_steps"]
    assert [(s["name"], s["reward"]) for s in steps] == [("write", 1.0), ("append", 1.0)]
    assert steps[1]["components"] == {"reward": 1.0, "lines": 1.0, "listed": 1.0}
    assert (verdict.metrics["steps_run"], verdict.metrics["steps_total"]) == (2, 2)


async def test_a_multi_step_reward_is_the_mean_of_its_steps_and_a_missed_step_counts_0(
    tasks: Make,
) -> None:
    rollouts = await tasks(copy=EXAMPLE)
    session = await rollouts.seed("notes")
    verdict = await _steps(rollouts, session, ["echo hello > /app/notes.txt", ""])
    assert verdict.reward == 0.5
    assert [s["reward"] for s in verdict.metrics["harbor_steps"]] == [1.0, 0.0]


async def test_a_step_under_its_min_reward_ends_the_rollout_there(
    tasks: Make, tmp_path: Path
) -> None:
    copy = tmp_path / "src" / "notes"
    shutil.copytree(EXAMPLE, copy)
    config = copy / "task.toml"
    config.write_text(
        config.read_text().replace('name = "write"\n', 'name = "write"\nmin_reward = 1.0\n')
    )
    rollouts = await tasks(copy=copy)
    session = await rollouts.seed("notes")
    turn = await rollouts.environment.user_turn(session, [])
    assert turn is not None and turn.done
    verdict = await rollouts.verify(session)
    assert verdict.reward == 0.0
    assert verdict.metrics["stopped_at_step"] == "write"
    assert (verdict.metrics["steps_run"], verdict.metrics["steps_total"]) == (1, 2)


async def test_in_a_shared_multi_step_task_the_next_step_sees_no_earlier_tests_or_reward(
    tasks: Make, tmp_path: Path
) -> None:
    copy = tmp_path / "src" / "notes"
    shutil.copytree(EXAMPLE, copy)
    config = copy / "task.toml"
    config.write_text(config.read_text().replace('environment_mode = "separate"\n', ""))
    rollouts = await tasks(copy=copy)
    session = await rollouts.seed("notes")
    await bash(rollouts, session, "echo hello > /app/notes.txt")
    turn = await rollouts.environment.user_turn(session, [])
    assert turn is not None and not turn.done
    seen = await bash(rollouts, session, "ls /tests /logs/verifier 2>&1; echo world >> notes.txt")
    assert "No such file or directory" in seen and "test.sh" not in seen, seen
    assert await rollouts.environment.user_turn(session, []) is None
    verdict = await rollouts.verify(session)
    # The collect hook's listing in /logs/artifacts outlives /logs made anew for the tests.
    assert verdict.reward == 1.0, verdict
    assert verdict.metrics["harbor_steps"][1]["components"]["listed"] == 1.0


async def test_a_verifier_image_from_tests_dockerfile_holds_the_tests_and_its_own_user(
    tasks: Make, tmp_path: Path
) -> None:
    toml = SEPARATE.replace("[verifier]\n", '[verifier]\nuser = "judge"\n')
    test_sh = (
        "#!/bin/bash\n"
        'if [ "$(id -un)" = judge ] && [ "$(cat /app/out.txt)" = ok ]; then r=1; else r=0; fi\n'
        "echo $r > /logs/verifier/reward.txt\n"
    )
    rollouts = await tasks(a={"toml": toml, "test_sh": test_sh})
    dockerfile = "FROM debian:bookworm-slim\nRUN useradd judge && mkdir -p /app\nCOPY . /tests/\n"
    (tmp_path / "tasks" / "a" / "tests" / "Dockerfile").write_text(dockerfile)
    rollouts = await tasks()  # read again: the folder changed
    session = await rollouts.seed("a")  # the agent's image has no user judge: not its concern
    await bash(rollouts, session, "echo ok > /app/out.txt")
    verdict = await rollouts.verify(session)
    assert verdict.reward == 1.0, verdict


async def test_a_prebuilt_image_the_provider_has_is_used_by_name(
    tasks: Make, tmp_path: Path
) -> None:
    toml = TASK_TOML.replace('user = "agent"\n', "").replace(
        'network_mode = "no-network"',
        'network_mode = "no-network"\ndocker_image = "debian:bookworm-slim"',
    )
    components_task(tmp_path / "tasks" / "a", toml=toml)
    (tmp_path / "tasks" / "a" / "environment" / "Dockerfile").unlink()
    rollouts = await tasks()
    session = await rollouts.seed("a")
    assert "bookworm" in await bash(rollouts, session, "cat /etc/debian_version /etc/os-release")
    await bash(rollouts, session, "mkdir -p /app && echo ok > /app/out.txt")
    assert (await rollouts.verify(session)).reward == 1.0
