"""What an agent can do to its box against the verifier, on both providers: the box is sealed
(its processes killed, the image's toolchain put back), ``/logs`` is made anew as the
verifier's own, and a box the agent left unverifiable scores 0 with the reason, never a
failure left out of the mean. Each attack runs through the agent's own ``bash`` tool."""

from __future__ import annotations

import os
import stat

import pytest

from palaestra.environment.kinds.harbor.boxes import read_in_box
from palaestra.environment.kinds.harbor.environment import UNVERIFIED
from palaestra.errors import InvalidTask
from palaestra.sandbox.machines.inside import resolve_user
from palaestra.types import Verdict
from tests.environment.kinds.harbor.conftest import Rollouts, box_of
from tests.support.harbor_folders import TASK_TOML

ROOT_AGENT = TASK_TOML.replace('user = "agent"\n', "")
"""The task with the image's user, root, as the agent."""
REWARD_TXT = """\
#!/bin/bash
if [ "$(cat /app/out.txt 2>/dev/null)" = ok ]; then r=1; else r=0; fi
echo $r > /logs/verifier/reward.txt
"""
SLOW_REWARD_TXT = REWARD_TXT + "sleep 2\n"
"""Tests that take a while after writing the reward (a leftover process has time to act)."""
PYTHON_CHECK = """\
#!/bin/bash
python3 -c 'print(1 if open("/app/out.txt").read().strip() == "ok" else 0)' \\
    > /logs/verifier/reward.txt 2>/dev/null || echo 0 > /logs/verifier/reward.txt
"""
RUNS_AGENT_SCRIPT = """\
#!/bin/bash
# The check runs the agent's program as the agent's user, then scores the answer.
runuser -u agent -- bash /app/check.sh > /dev/null 2>&1
if [ "$(cat /app/out.txt 2>/dev/null)" = ok ]; then r=1; else r=0; fi
echo $r > /logs/verifier/reward.txt
"""
RUNS_AGENT_SCRIPT_AS_ROOT = """\
#!/bin/bash
bash /app/check.sh > /dev/null 2>&1
if [ "$(cat /app/out.txt 2>/dev/null)" = ok ]; then r=1; else r=0; fi
echo $r > /logs/verifier/reward.txt
"""
BASH_WRAPPER = r"""
cp /usr/bin/bash /usr/bin/bash.real
cat > /usr/bin/bash.new <<'END'
#!/usr/bin/bash.real
/usr/bin/bash.real "$@"; s=$?
mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt
exit $s
END
chmod 755 /usr/bin/bash.new && mv -f /usr/bin/bash.new /usr/bin/bash && echo replaced
"""
FAKE_PYTHON = r"""
printf '#!/bin/sh\necho 1\n' > /usr/local/bin/python3 && chmod 755 /usr/local/bin/python3
command -v python3
"""
LEFTOVER_WRITER = (
    "setsid env -i /bin/bash -c 'while :; do echo 1 > /logs/verifier/reward.txt; "
    "echo 1 > /tmp/alive; sleep 0.05; done' > /dev/null 2>&1 < /dev/null & sleep 0.5; "
    "cat /tmp/alive"
)
AGENT_SCRIPT_WRITES_REWARD = r"""cat > /app/check.sh <<'END'
echo '{"reward": 1}' > /logs/verifier/reward.json
END
echo written"""

ATTACKS = {
    "logs_made_a_symlink": (ROOT_AGENT, REWARD_TXT, "rm -rf /logs; ln -s /tmp /logs && echo ok"),
    "logs_made_a_file": (ROOT_AGENT, REWARD_TXT, "rm -rf /logs; echo x > /logs && echo ok"),
    "workdir_removed": (ROOT_AGENT, REWARD_TXT, "cd / && rm -rf /app && echo ok"),
    "bash_replaced_by_a_wrapper": (ROOT_AGENT, REWARD_TXT, BASH_WRAPPER),
    "python3_first_on_the_path": (ROOT_AGENT, PYTHON_CHECK, FAKE_PYTHON),
    "a_leftover_process_writes_the_reward": (ROOT_AGENT, SLOW_REWARD_TXT, LEFTOVER_WRITER),
    "the_agents_script_run_by_the_check_writes_the_reward": (
        TASK_TOML,
        RUNS_AGENT_SCRIPT,
        AGENT_SCRIPT_WRITES_REWARD,
    ),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_an_attack_on_the_verifier_scores_0_not_1_and_not_a_failure(  # type: ignore[no-untyped-def]
    harbor, attack: str
) -> None:
    toml, test_sh, command = ATTACKS[attack]
    rollouts: Rollouts = await harbor(a={"toml": toml, "test_sh": test_sh})
    session = await rollouts.seed()
    said = await rollouts.environment.bash(session, command)
    assert said.endswith("[exit status 0]"), said  # the attack itself worked in the box
    verdict = await rollouts.verify(session)
    assert (verdict.failure, verdict.reward) == (None, 0.0), _shown(verdict)


@pytest.mark.parametrize("attack", ["logs_made_a_symlink", "bash_replaced_by_a_wrapper"])
async def test_the_same_task_solved_honestly_after_the_attack_scores_1(  # type: ignore[no-untyped-def]
    harbor, attack: str
) -> None:
    toml, test_sh, command = ATTACKS[attack]
    rollouts: Rollouts = await harbor(a={"toml": toml, "test_sh": test_sh})
    honest = await rollouts.seed()
    await rollouts.environment.bash(honest, "echo ok > /app/out.txt")
    assert (await rollouts.verify(honest)).reward == 1.0
    both = await rollouts.seed()
    await rollouts.environment.bash(both, f"echo ok > /app/out.txt; {command}")
    verdict = await rollouts.verify(both)
    assert (verdict.failure, verdict.reward) == (None, 1.0), _shown(verdict)


async def test_tests_the_agent_kills_score_0_with_the_reason(harbor) -> None:  # type: ignore[no-untyped-def]
    rollouts: Rollouts = await harbor(a={"toml": ROOT_AGENT, "test_sh": RUNS_AGENT_SCRIPT_AS_ROOT})
    session = await rollouts.seed()
    await rollouts.environment.bash(session, "echo 'kill -9 $PPID' > /app/check.sh")
    verdict = await rollouts.verify(session)
    assert (verdict.failure, verdict.reward) == (None, 0.0), _shown(verdict)
    assert verdict.metrics[UNVERIFIED].startswith(
        "a: the tests wrote no reward (/logs/verifier/reward.txt or reward.json) "
        "(test.sh exit status"
    )


@pytest.mark.parametrize(
    ("verifier", "owner"), [("", "root"), ('[verifier]\nuser = "agent"\n', "agent")]
)
async def test_logs_are_the_verifiers_own_and_its_environment_is_set(  # type: ignore[no-untyped-def]
    harbor, verifier: str, owner: str
) -> None:
    toml = TASK_TOML.replace("[verifier]\n", verifier or "[verifier]\n") + (
        '\n[verifier.env]\nGIT_CONFIG_GLOBAL = "/etc/taskgit"\n'
    )
    test_sh = (
        "#!/bin/bash\n"
        'echo "$(id -un) $PYTHONNOUSERSITE $GIT_CONFIG_GLOBAL" > /logs/verifier/seen\n'
        "echo 0 > /logs/verifier/reward.txt\n"
    )
    rollouts: Rollouts = await harbor(a={"toml": toml, "test_sh": test_sh})
    session = await rollouts.seed()
    verdict = await rollouts.verify(session)
    assert (verdict.failure, verdict.reward) == (None, 0.0), _shown(verdict)
    root = box_of(session).box.root  # type: ignore[union-attr]
    assert read_in_box(root, "/logs/verifier/seen") == f"{owner} 1 /etc/taskgit\n".encode()
    uid = resolve_user(root, owner).uid
    logs, verifier_dir = (os.lstat(root / path) for path in ("logs", "logs/verifier"))
    assert (logs.st_uid, stat.S_IMODE(logs.st_mode)) == (0, 0o755)
    assert (verifier_dir.st_uid, stat.S_IMODE(verifier_dir.st_mode)) == (uid, 0o755)


async def test_a_user_the_image_lacks_is_one_line_before_any_agent_turn(  # type: ignore[no-untyped-def]
    harbor, tmp_path
) -> None:
    toml = TASK_TOML.replace('user = "agent"', 'user = "ghost"')
    rollouts: Rollouts = await harbor(a={"toml": toml})
    said = (
        f"{tmp_path / 'tasks' / 'a' / 'task.toml'}: agent.user = 'ghost': the image built "
        f"from environment/ cannot run as it (user 'ghost' is not in the image's /etc/passwd)"
    )
    for _ in range(2):  # the second rollout is refused without a box
        with pytest.raises(InvalidTask) as raised:
            await rollouts.seed()
        assert str(raised.value) == said
    assert rollouts.environment._boxes == set()


def _shown(verdict: Verdict) -> str:
    failure = verdict.failure
    shown = f"{failure.kind}: {failure.reason}" if failure is not None else ""
    return f"reward {verdict.reward} {shown} {verdict.metrics}"
