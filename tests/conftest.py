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
}
FIRST = (
    "tests/authoring/test_local_model.py",
    "tests/examples/test_train_trl_multiturn.py",
    "tests/agents/test_openhands.py",
    "tests/agents/test_mini_swe_agent.py",
    "tests/environment/harbor/test_rewardkit.py",
    "tests/training/test_training_docs.py",
    "tests/envs/test_agentdojo.py",
    "tests/authoring/test_cheats.py",
    "tests/cli/test_collect_local.py",
    "tests/envs/terminal/test_environment.py",
    "tests/environment/harbor/test_collect.py",
    "tests/envs/swe_local/test_environment.py",
    "science_world",
)
"""Files (or ``TOGETHER`` groups) whose groups go first, the longest first (a run's
``--durations`` list)."""


def group_of(nodeid: str) -> str:
    """The group of the test ``nodeid``: its file, the test alone, or a shared name."""
    path = nodeid.partition("::")[0]
    return nodeid if path in SPREAD else TOGETHER.get(path, path)


def _rank(group: str) -> int:
    """Where ``group`` comes in the order of ``FIRST``; every other group after them."""
    path = group.partition("::")[0]
    return FIRST.index(path) if path in FIRST else len(FIRST)


class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """xdist's scheduling by scope, with ``group_of`` as the scope and ``FIRST`` first."""

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid)

    def _assign_work_unit(self, node: WorkerController) -> None:
        # min keeps the first of equal ranks: the others go in the order they were collected
        self.workqueue.move_to_end(min(self.workqueue, key=_rank), last=False)
        super()._assign_work_unit(node)


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # a plain run (-p no:xdist) has no such hook
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> GroupScheduling | None:
    if config.getvalue("dist") != "loadgroup":
        return None
    return GroupScheduling(config, log)
