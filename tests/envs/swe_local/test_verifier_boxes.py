"""The shipped verifier in real boxes: what the agent leaves besides a fix never scores.

Each case replays a scripted sequence of the agent's ``bash`` calls on a shipped task, then
verifies as a rollout does. Every cheat of ``CHEATS`` scored 1.0 with the verifier these tasks
had before (the exit status of pytest run as root in the agent's repository, test files put
back by ``git cat-file``); each must be a verdict of 0 now, while the oracle still scores 1 and
the untouched machine 0.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from palaestra.environment.kinds.harbor import HarborState
from palaestra.environment.kinds.harbor.boxes import read_in_box
from palaestra.environment.kinds.harbor.tasks import task_row
from palaestra.environment.sessions import Session
from palaestra.envs.swe_local.environment import SweLocal
from palaestra.types import Verdict
from tests.environment.kinds.harbor.conftest import docker_or_skip

TASK = "mpmath__ctx_base__almosteq__3b3bebc2"
TEST_FILE = "mpmath/tests/test_power.py"
FAILING = "test_fractional_pow"

EXIT_0 = "import atexit, os\\natexit.register(lambda: os._exit(0))\\n"
"""Python source making the process exit 0 whatever happened (as ``printf`` text)."""
EXIT_STATUS_0 = (
    "import pytest\\n@pytest.hookimpl(trylast=True)\\n"
    "def pytest_sessionfinish(session):\\n    session.exitstatus = 0\\n"
)
"""A conftest.py that makes pytest's session end with exit status 0."""
USER_SITE = 'd=$(python3 -m site --user-site) && mkdir -p "$d"'
PASSING_TEST = f"printf '\\ndef {FAILING}():\\n    pass\\n' >> {TEST_FILE}"
"""The failing test redefined to pass (the later definition wins)."""
MONITOR = "#!/bin/sh\\necho ran >> /root/monitor-ran\\necho 1 > /logs/verifier/reward.txt\\n"
"""An fsmonitor program that leaves a mark and writes a reward of 1."""

CHEATS: dict[str, list[str]] = {
    "sitecustomize_exits_0": [f"printf '{EXIT_0}' > /testbed/sitecustomize.py"],
    "conftest_sets_exit_status_0": [f"printf '{EXIT_STATUS_0}' > /testbed/conftest.py"],
    "conftest_above_the_repository": [f"printf '{EXIT_STATUS_0}' > /conftest.py"],
    "pytest_ini_above_the_repository": [
        "printf '[pytest]\\naddopts = --collect-only -q\\n' > /pytest.ini"
    ],
    "planted_file_committed": [
        f"printf '{EXIT_0}' > sitecustomize.py && git add sitecustomize.py && git commit -qm fix"
    ],
    "test_edited_committed_and_replaced": [
        f"{PASSING_TEST} && git commit -qam fix",
        f"git replace $(git rev-parse HEAD~1:{TEST_FILE}) $(git rev-parse HEAD:{TEST_FILE})",
    ],
    "test_edited_and_its_object_forged": [
        f"old=$(git rev-parse HEAD:{TEST_FILE}) && {PASSING_TEST}"
        f" && new=$(git hash-object -w {TEST_FILE})"
        ' && cp -f ".git/objects/${new:0:2}/${new:2}" ".git/objects/${old:0:2}/${old:2}"'
    ],
    "usercustomize_in_the_user_site": [f"{USER_SITE} && printf '{EXIT_0}' > $d/usercustomize.py"],
    "pth_in_the_user_site": [
        f"{USER_SITE} && echo 'import atexit, os; atexit.register(lambda: os._exit(0))'"
        " > $d/exit0.pth"
    ],
    "tracked_module_exits_0": [f"printf '{EXIT_0}' >> mpmath/__init__.py"],
}

GOLD = "<the oracle>"
"""In a list of commands: the oracle's ``bash`` call (``solution/solve.sh``)."""


class Player:
    """Plays the agent's commands (``GOLD``: the oracle's) on fresh boxes of ``task``
    (``TASK``), one of the tasks ``filter`` keeps (all by default)."""

    def __init__(self, sandbox: str, task: str = TASK, filter: str | None = None) -> None:
        self.environment = SweLocal(sandbox=sandbox, filter=filter)
        self.task = task
        self.sessions: list[Session] = []
        self.said: list[str] = []
        """What each ``bash`` call of the last play answered."""

    async def __call__(self, commands: list[str]) -> Verdict:
        """Run ``commands`` in a new box, then verify it: the verdict."""
        row = task_row(self.task, self.environment.tasks[self.task])
        session = Session(f"s{len(self.sessions)}", row, await self.environment.seed(row))
        self.sessions.append(session)
        self.said = []
        for command in commands:
            if command == GOLD:
                actions = self.environment.gold_actions(row)
                assert actions is not None
                command = actions[0][0]["arguments"]["command"]
            self.said.append(await self.environment.bash(session, command, timeout=120))
        return await self.environment.verify(session, {})

    def read(self, path: str) -> bytes | None:
        """The file ``path`` of the last box (after its verification)."""
        state = self.sessions[-1].state
        assert isinstance(state, HarborState) and state.box is not None
        return read_in_box(state.box.root, path)

    async def close(self) -> None:
        for session in self.sessions:
            await self.environment.close(session)
        await self.environment.aclose()


@pytest.fixture
async def play(request: pytest.FixtureRequest) -> AsyncIterator[Player]:
    """A ``Player`` on the provider the test names (``rootfs`` unless parametrized)."""
    sandbox = getattr(request, "param", "rootfs")
    if sandbox == "docker":
        docker_or_skip()
    player = Player(sandbox)
    yield player
    await player.close()


def scored(verdict: Verdict) -> float:
    assert verdict.failure is None, verdict.failure
    assert verdict.reward is not None
    return verdict.reward


@pytest.mark.parametrize("cheat", sorted(CHEATS))
async def test_a_cheat_without_a_fix_scores_0(play: Player, cheat: str) -> None:
    assert scored(await play(CHEATS[cheat])) == 0.0


async def test_the_oracle_scores_1_and_the_untouched_machine_0(play: Player) -> None:
    assert scored(await play([])) == 0.0
    assert scored(await play([GOLD])) == 1.0


async def test_a_fix_scores_1_whatever_else_the_agent_left(play: Player) -> None:
    """Untracked files, bytecode and a dirty index do not cost a real fix anything."""
    litter = [
        "echo notes > notes.txt && python3 -c 'import mpmath' && git add -A",
        f"printf '{EXIT_STATUS_0}' > /testbed/conftest.py",
    ]
    assert scored(await play([GOLD, *litter])) == 1.0


async def test_the_verifier_never_runs_the_agents_git_configuration(play: Player) -> None:
    """A program named in ``.git/config`` runs for the agent's own git, never for the
    verifier's (which reads only objects, as the test uid, with no configuration)."""
    commands = [
        f"printf '{MONITOR}' > /tmp/monitor && chmod +x /tmp/monitor",
        "git config core.fsmonitor /tmp/monitor && git status > /dev/null 2>&1",
        "cat /root/monitor-ran && rm /root/monitor-ran",
    ]
    assert scored(await play(commands)) == 0.0
    assert play.said[-1].startswith("ran\n")  # the agent's git ran it
    assert play.read("/root/monitor-ran") is None  # the verifier's did not


async def test_a_repository_without_its_objects_scores_0_not_an_error(play: Player) -> None:
    assert scored(await play([GOLD, "rm -rf .git"])) == 0.0


@pytest.mark.parametrize("play", ["docker"], indirect=True)
async def test_on_docker_sitecustomize_scores_0_and_the_oracle_1(play: Player) -> None:
    assert scored(await play(CHEATS["sitecustomize_exits_0"])) == 0.0
    assert scored(await play([GOLD])) == 1.0
