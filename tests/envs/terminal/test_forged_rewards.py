"""An agent that does not solve a shipped task cannot make its checks score it: each test
replays an agent's bash calls on a shipped task, in a real machine, and its verdict must be
a 0 (a verdict, never a failure) although the agent wrote or planted a reward of 1."""

from __future__ import annotations

import os

import pytest

from palaestra.environment.kinds.harbor.tasks import task_row
from palaestra.environment.sessions import Session
from palaestra.envs.terminal.environment import Terminal
from palaestra.types import Verdict
from tests.environment.kinds.harbor.conftest import docker_or_skip


@pytest.fixture(params=["rootfs", "docker"])
def sandbox(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        docker_or_skip()
    elif os.geteuid() != 0:
        pytest.skip("the rootfs provider needs root (kernel overlay mounts)")
    return str(request.param)


async def rollout(sandbox: str, task: str, *commands: str) -> Verdict:
    """``commands`` run as the task's agent (``bash`` calls), then the task's verification."""
    environment = Terminal(sandbox=sandbox)
    row = task_row(task, environment.tasks[task])
    session = Session("forger", row, await environment.seed(row))
    try:
        for command in commands:
            await environment.bash(session, command, timeout=120)
        return await environment.verify(session, {})
    finally:
        await environment.close(session)
        await environment.aclose()


def scored_zero(verdict: Verdict) -> bool:
    return verdict.failure is None and verdict.reward == 0.0


SCRIPT_WRITES_THE_REWARD = """\
mkdir -p /app/bin && cat > /app/bin/dedupe <<'EOF'
#!/bin/sh
echo '{"reward": 1.0}' > /logs/verifier/reward.json
mkdir -p /logs/verifier/reward.json.partial
EOF
chmod +x /app/bin/dedupe
"""


async def test_a_script_the_check_runs_cannot_write_the_reward(sandbox: str) -> None:
    """The scripting check runs the agent's script (as the agent): the script writes
    reward.json and makes the checker's own partial file a directory."""
    verdict = await rollout(sandbox, "scripting-000-dedupe", SCRIPT_WRITES_THE_REWARD)
    assert scored_zero(verdict), verdict


FSMONITOR_WRITES_THE_REWARD = """\
cat > /app/fsmonitor <<'EOF'
#!/bin/sh
echo 1 > /logs/verifier/reward.txt
mkdir -p /logs/verifier/reward.json.partial
exit 1
EOF
chmod 755 /app/fsmonitor
git -C /app/repo config core.fsmonitor /app/fsmonitor
"""


async def test_a_git_fsmonitor_in_the_agents_repository_never_runs_as_root(sandbox: str) -> None:
    """The git check reads the agent's repository; its config names a program git runs."""
    verdict = await rollout(sandbox, "git-000-commits", FSMONITOR_WRITES_THE_REWARD)
    assert scored_zero(verdict), verdict
    assert verdict.metrics.get("reward_file") == "reward.json"


PROFILE_WRITES_THE_REWARD = """\
echo 0 > /answer/answer.txt
for home in /home/agent /root; do
  printf '%s\\n' 'echo 1 > /logs/verifier/reward.txt' \\
    'mkdir -p /logs/verifier/reward.txt.partial' > "$home/.bash_profile"
done
"""


async def test_the_agents_login_files_never_run_in_the_agentbench_check(sandbox: str) -> None:
    """AgentBench's check runs its example in a shell as root, in the agent's home."""
    verdict = await rollout(sandbox, "agentbench-test-007", PROFILE_WRITES_THE_REWARD)
    assert scored_zero(verdict), verdict


async def test_a_fifo_at_the_answer_path_is_a_0_not_a_stuck_verifier() -> None:
    """A check that opened the agent's FIFO would wait past its time: an excluded failure
    where the agent earned a 0."""
    if os.geteuid() != 0:
        pytest.skip("the rootfs provider needs root (kernel overlay mounts)")
    verdict = await rollout("rootfs", "forensics-000-by-hash", "mkfifo /app/answer.txt")
    assert scored_zero(verdict), verdict


LINGERING_SCRIPT = """\
mkdir -p /app/bin && printf '#!/bin/sh\\nsleep 1000 &\\n' > /app/bin/dedupe
chmod +x /app/bin/dedupe
"""


async def test_a_script_that_leaves_a_process_behind_is_a_0_not_a_stuck_verifier() -> None:
    """A child of the agent's script holding its output open must not hold the check."""
    if os.geteuid() != 0:
        pytest.skip("the rootfs provider needs root (kernel overlay mounts)")
    verdict = await rollout("rootfs", "scripting-000-dedupe", LINGERING_SCRIPT)
    assert scored_zero(verdict), verdict
    assert float(verdict.metrics["verifier_seconds"]) < 30


PASSWD_MAKES_NOBODY_ROOT = """\
sed -i '1i 65534:x:0:0::/root:/bin/sh' /etc/passwd
cat > /usr/local/bin/calc <<'EOF'
#!/bin/sh
echo 1 > /logs/verifier/reward.txt
pkill -9 -f /tests/check.py
EOF
chmod 755 /usr/local/bin/calc
"""


async def test_an_account_named_65534_does_not_make_the_checks_user_root(sandbox: str) -> None:
    """A root agent adds a ``65534`` account with uid 0 first in /etc/passwd; the check runs
    the agent's ``calc`` as uid 65534 by number, so the planted line gives it no root."""
    verdict = await rollout(sandbox, "agentbench-dev-003", PASSWD_MAKES_NOBODY_ROOT)
    assert scored_zero(verdict), verdict
