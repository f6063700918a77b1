"""How the tests are spread over pytest-xdist's workers (``scripts/test.sh`` runs ``-n 3``).

With ``--dist loadgroup`` a worker takes a whole group at a time. Every test's group is its
file, so a file's module fixtures (a served app, a built image, a Ray cluster) are made once,
by one worker, and its tests run in order as they would alone. Two exceptions:

- ``SPREAD``: files whose tests are independent and each slow (one ``palaestra test`` of a
  built-in environment with the embedded model, one program run per test): every test is its
  own group, so the workers share them.
- ``TOGETHER``: files that watch something machine-wide (the Java processes of every
  ScienceWorld game on the machine) form one group, so other workers' games are never in
  what they count.

The groups are made here from the test ids (``GroupScheduling``), not by xdist's
``xdist_group`` marks: xdist reads a mark by renaming the test's id, which pytest 9's ids
(computed, not stored) ignore, so every test was a group of its own and a file's module
fixtures were made once per worker. The groups of ``FIRST`` are handed out before the others,
longest first, so the run does not end with one worker on a long group and the others idle.
The groups of ``HEAVY`` files keep both cores busy (the embedded model, PyTorch): while two
other workers hold one, a worker takes the next group that is not heavy, so the third
worker fills the cores' idle time (tests waiting on servers, boxes, Docker) instead of
splitting them three ways (llama.cpp's threads slow down far more than a third when they do).

Without ``-n`` (a plain ``pytest``) none of this applies.
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]
from xdist.workermanage import WorkerController  # type: ignore[import-untyped]

SPREAD = frozenset(
    {
        "tests/authoring/test_local_model.py",
        "tests/authoring/test_cheats.py",
        "tests/cli/test_collect_local.py",
        "tests/training/test_training_docs.py",
    }
)
TOGETHER = {
    "tests/envs/science_world/test_environment.py": "science_world",
    "tests/envs/science_world/test_collect_local.py": "science_world",
    "tests/envs/science_world/test_games.py": "science_world",
}
FIRST = (
    "tests/authoring/test_local_model.py",
    "tests/examples/test_train_trl_multiturn.py",
    "tests/agents/test_openhands.py",
    "tests/agents/test_mini_swe_agent.py",
    "tests/environment/kinds/harbor/test_rewardkit.py",
    "tests/training/test_training_docs.py",
    "tests/envs/test_agentdojo.py",
    "tests/authoring/test_cheats.py",
    "tests/cli/test_collect_local.py",
    "tests/envs/terminal/test_environment.py",
    "tests/environment/kinds/harbor/test_collect.py",
    "tests/envs/swe_local/test_environment.py",
    "science_world",
)
"""Files (or ``TOGETHER`` groups) whose groups go first, the longest first (a run's
``--durations`` list)."""


HEAVY = frozenset(
    {
        "tests/authoring/test_local_model.py",
        "tests/cli/test_collect_local.py",
        "tests/cli/test_quickstart.py",
        "tests/training/test_training_docs.py",
        "tests/training/test_trl_async_grpo.py",
        "tests/training/test_trl_rollout_real.py",
        "tests/training/test_rollouts_local.py",
        "tests/training/test_local_policy.py",
        "tests/examples/test_train_trl_multiturn.py",
        "tests/agents/test_openhands.py",
        "tests/agents/test_mini_swe_agent.py",
        "tests/environment/kinds/test_mcp.py",
        "tests/envs/games/test_collect_local.py",
        "tests/envs/science_world/test_collect_local.py",
        "tests/envs/search_qa/test_collect_local.py",
        "tests/envs/text_worlds/test_collect_local.py",
        "tests/envs/long_context/test_cli.py",
    }
)
"""Files whose tests spend their time computing on both cores: the embedded model's rollouts,
PyTorch's training steps."""
HEAVY_AT_ONCE = 2
"""How many workers may run heavy groups at once (two cores)."""


def group_of(nodeid: str) -> str:
    """The group of the test ``nodeid``: its file, the test alone, or a shared name."""
    path = nodeid.partition("::")[0]
    return nodeid if path in SPREAD else TOGETHER.get(path, path)


def _rank(group: str) -> int:
    """Where ``group`` comes in the order of ``FIRST``; every other group after them."""
    path = group.partition("::")[0]
    return FIRST.index(path) if path in FIRST else len(FIRST)


def _heavy(group: str) -> bool:
    return group.partition("::")[0] in HEAVY


def next_group(waiting: list[str], heavy_elsewhere: int) -> str:
    """The group a worker takes next from ``waiting`` (in the queue's order) when
    ``heavy_elsewhere`` other workers hold an unfinished heavy group: the first by
    ``FIRST``'s rank, but not a heavy one while ``HEAVY_AT_ONCE`` of them are elsewhere and a
    group that is not heavy waits."""
    ranked = sorted(waiting, key=_rank)  # stable: equal ranks keep the queue's order
    if heavy_elsewhere >= HEAVY_AT_ONCE:
        return next((group for group in ranked if not _heavy(group)), ranked[0])
    return ranked[0]


class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """xdist's scheduling by scope, with ``group_of`` as the scope and ``next_group`` choosing
    the group a worker gets."""

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid)

    def _assign_work_unit(self, node: WorkerController) -> None:
        # workers, not groups: a worker holds a few groups at a time (a spread file's are
        # single tests), run one after the other
        heavy_elsewhere = sum(
            any(_heavy(group) and not all(tests.values()) for group, tests in work.items())
            for other, work in self.assigned_work.items()
            if other is not node
        )
        chosen = next_group(list(self.workqueue), heavy_elsewhere)
        self.workqueue.move_to_end(chosen, last=False)
        super()._assign_work_unit(node)


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # a plain run (-p no:xdist) has no such hook
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> GroupScheduling | None:
    if config.getvalue("dist") != "loadgroup":
        return None
    return GroupScheduling(config, log)
