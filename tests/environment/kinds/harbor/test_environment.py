"""A Harbor task in a real box (the rootfs provider): the tests are the verifier, never a 0
for what they could not say, and every box is closed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from palaestra.environment.kinds.harbor import HarborState
from palaestra.environment.kinds.harbor.boxes import run, stage
from palaestra.environment.kinds.harbor.environment import UNVERIFIED
from palaestra.environment.kinds.harbor.rewards import RewardRefused
from palaestra.environment.sessions import Session
from palaestra.errors import SandboxFailure, ToolError
from palaestra.types import FailureKind
from tests.environment.kinds.harbor.conftest import box_of
from tests.support.harbor_folders import TASK_TOML, TEST_SH


async def test_untouched_machine_scores_0_and_the_solution_1(harbor) -> None:  # type: ignore[no-untyped-def]
    rollouts = await harbor(a={})
    null = await rollouts.verify(await rollouts.seed())
    assert (null.failure, null.reward) == (None, 0.0)
    assert null.reward_components == {"reward": 0.0, "exists": 0.0}
    assert null.metrics["exists"] == 0.0
    assert UNVERIFIED not in null.metrics

    session = await rollouts.seed()
    box = box_of(session).box
    assert box is not None
    await stage(box, rollouts.environment.tasks["a"].path / "solution", "/solution")
    ran = await run(box, "bash /solution/solve.sh && id -un", timeout=60, user="agent")
    assert (ran.status, ran.output) == (0, b"agent\n")
    solved = await rollouts.verify(session)
    assert (solved.failure, solved.reward) == (None, 1.0)
    assert solved.reward_components == {"reward": 1.0, "exists": 1.0}


async def test_the_agent_never_sees_the_tests_or_plants_a_reward(harbor) -> None:  # type: ignore[no-untyped-def]
    rollouts = await harbor(a={})
    session = await rollouts.seed()
    box = box_of(session).box
    assert box is not None
    ran = await run(
        box,
        "ls /tests /solution 2>&1; mkdir -p /logs/verifier /tests;"
        " echo 1 > /logs/verifier/reward.txt; echo 'echo 1 > /logs/verifier/reward.txt'"
        " > /tests/test.sh",
        timeout=30,
    )
    assert b"No such file" in ran.output and b"test.sh" not in ran.output.split(b"\n")[0]
    verdict = await rollouts.verify(session)
    assert (verdict.failure, verdict.reward) == (None, 0.0)  # its own test.sh ran, on a clean dir


async def test_symlinked_logs_never_reach_the_host(harbor, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    secret = tmp_path / "secret"
    (secret / "verifier").mkdir(parents=True)
    (secret / "verifier" / "reward.txt").write_text("1")
    rollouts = await harbor(a={"test_sh": "#!/bin/bash\nln -sfn /etc /logs/verifier/reward.txt\n"})
    session = await rollouts.seed()
    verdict = await rollouts.verify(session)
    assert (verdict.failure, verdict.reward) == (None, 0.0)
    assert "wrote no reward" in verdict.metrics[UNVERIFIED]


@pytest.mark.parametrize(
    ("test_sh", "toml", "said"),
    [
        (
            "#!/bin/bash\necho checking; exit 3\n",
            TASK_TOML,
            "a: the tests wrote no reward (/logs/verifier/reward.txt or reward.json) "
            "(test.sh exit status 3; its output ends: checking)",
        ),
        (
            "#!/bin/bash\necho pass > /logs/verifier/reward.txt\n",
            TASK_TOML,
            "reward.txt is not a number: 'pass'",
        ),
        (
            "#!/bin/bash\nsleep 30\n",
            TASK_TOML.replace("timeout_sec = 30.0", "timeout_sec = 1.0"),
            "a: tests/test.sh ran past verifier.timeout_sec (1 s)",
        ),
    ],
)
async def test_tests_that_give_no_reward_score_0_with_the_reason_never_a_failure(  # type: ignore[no-untyped-def]
    harbor, test_sh: str, toml: str, said: str
) -> None:
    rollouts = await harbor(a={"test_sh": test_sh, "toml": toml})
    verdict = await rollouts.verify(await rollouts.seed())
    assert (verdict.failure, verdict.reward, verdict.reward_components) == (None, 0.0, None)
    assert said in verdict.metrics[UNVERIFIED]
    assert verdict.metrics["harbor_task"] == "a"


async def test_a_reward_json_with_text_fails_as_verifier_error_never_a_0(harbor) -> None:  # type: ignore[no-untyped-def]
    test_sh = '#!/bin/bash\necho \'{"reward": 1, "note": "fine"}\' >/logs/verifier/reward.json\n'
    rollouts = await harbor(a={"test_sh": test_sh})
    with pytest.raises(RewardRefused) as refused:
        await rollouts.verify(await rollouts.seed())
    assert str(refused.value) == (
        "a: /logs/verifier/reward.json: key 'note' is '\"fine\"', not a number (Harbor "
        "refuses such a file: the tests must write numbers only)"
    )
    assert refused.value.kind is FailureKind.VERIFIER_ERROR


async def test_verifier_user_and_env_are_honoured(harbor) -> None:  # type: ignore[no-untyped-def]
    toml = TASK_TOML + '\n[verifier.env]\nWANT = "yes"\n'
    toml = toml.replace("[verifier]\n", '[verifier]\nuser = "agent"\n')
    test_sh = (
        "#!/bin/bash\n"
        'if [ "$(id -un)" = agent ] && [ "$WANT" = yes ]; then r=1; else r=0; fi\n'
        "echo $r > /logs/verifier/reward.txt\n"
    )
    rollouts = await harbor(a={"toml": toml, "test_sh": test_sh})
    verdict = await rollouts.verify(await rollouts.seed())
    assert (verdict.failure, verdict.reward) == (None, 1.0)
    assert TEST_SH  # the default test is the components one


async def test_a_box_that_cannot_be_built_is_a_sandbox_failure(harbor, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rollouts = await harbor(a={})
    (tmp_path / "tasks" / "a" / "environment" / "Dockerfile").write_text(
        "FROM debian:bookworm-slim\nRUN exit 7\n"
    )
    with pytest.raises(SandboxFailure):
        await rollouts.seed()


async def test_close_closes_the_box(harbor) -> None:  # type: ignore[no-untyped-def]
    rollouts = await harbor(a={})
    session = await rollouts.seed()
    root = box_of(session).box.root  # type: ignore[union-attr]
    assert root.is_dir()
    await rollouts.environment.close(session)
    assert not root.exists()
    await rollouts.environment.close(session)  # twice: nothing


async def test_the_agent_works_as_its_user_until_its_time_is_up(harbor) -> None:  # type: ignore[no-untyped-def]
    toml = TASK_TOML.replace("timeout_sec = 120.0", "timeout_sec = 3.0")
    toml = toml.replace(
        'network_mode = "no-network"\n',
        'network_mode = "no-network"\nworkdir = "/tmp"\n[environment.env]\nGREETING = "hi"\n',
    )
    rollouts = await harbor(a={"toml": toml})
    environment = rollouts.environment
    session = await rollouts.seed()
    said = await environment.bash(session, "id -un; pwd; echo $GREETING; echo ok > /app/out.txt")
    assert said == "agent\n/tmp\nhi\n[exit status 0]"
    cut = await environment.bash(session, "sleep 10; echo late", timeout=30)
    assert "late" not in cut  # the command's timeout was cut to the agent's time left
    with pytest.raises(ToolError, match=r"your time is up \(3 s\)"):
        await environment.bash(session, "echo more")
    verdict = await rollouts.verify(session)
    assert (verdict.failure, verdict.reward) == (None, 1.0)  # Harbor verifies it all the same
    assert verdict.metrics["agent_timed_out"] is True


async def test_a_cancelled_verify_and_a_runner_stopping_leave_no_box(harbor) -> None:  # type: ignore[no-untyped-def]
    rollouts = await harbor(a={"test_sh": "#!/bin/bash\nsleep 60\n"})
    environment = rollouts.environment
    session = await rollouts.seed()
    verifying = asyncio.ensure_future(rollouts.verify(session))
    await asyncio.sleep(1.0)
    verifying.cancel()
    with pytest.raises(asyncio.CancelledError):
        await verifying
    await environment.close(session)
    assert box_of_closed(session)
    forgotten = await rollouts.seed()  # never closed: the runner stops with it open
    root = box_of(forgotten).box.root  # type: ignore[union-attr]
    await environment.aclose()
    assert not root.exists()
    rollouts.sessions.remove(forgotten)


def box_of_closed(session: Session) -> bool:
    state = session.state
    return isinstance(state, HarborState) and state.box is None
