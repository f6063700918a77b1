"""How the tests are spread over pytest-xdist's workers (``scripts/test.sh`` runs ``-n 2``).

With ``--dist loadgroup`` a worker takes a whole group at a time. Every test's group is its
file, so a file's module fixtures (a served app, a built image, a Ray cluster) are made once,
by one worker, and its tests run in order as they would alone. Two exceptions:

- ``SPREAD``: files whose tests are independent and each slow (one ``palaestra test`` of a
  built-in environment with the embedded model per test): every test is its own group, so
  both workers share them.
- ``TOGETHER``: files that watch something machine-wide (the Java processes of every
  ScienceWorld game on the machine) form one group, so the other worker's games are never in
  what they count.

Without ``-n`` (a plain ``pytest``) the marks change nothing.
"""

from __future__ import annotations

import pytest

SPREAD = frozenset({"tests/authoring/test_local_model.py", "tests/authoring/test_cheats.py"})
TOGETHER = {
    "tests/envs/science_world/test_environment.py": "science_world",
    "tests/envs/science_world/test_collect_local.py": "science_world",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = item.nodeid.partition("::")[0]
        group = item.nodeid if path in SPREAD else TOGETHER.get(path, path)
        item.add_marker(pytest.mark.xdist_group(group))
