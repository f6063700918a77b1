"""The shipped terminal tasks in real machines: each oracle scores 1, each untouched machine 0.

Needs a Docker daemon and the offline Debian base (``debian:bookworm-slim`` with its local
package archive, built by palaestra's machine images); skipped without them. The normal run
checks a seeded sample (one task of each family); ``PALAESTRA_TERMINAL_ALL=1`` checks every
shipped task (about 4 s a task once each family's package layer is cached: ~15 minutes).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess

import pytest

from palaestra.environment.kinds.harbor.tasks import unpacked
from palaestra.envs.terminal.environment import ARCHIVE
from scripts.datasets.terminal.generate import MANIFEST
from scripts.datasets.terminal.validate import validate

SHIPPED = unpacked(ARCHIVE)


def _base_image() -> bool:
    if shutil.which("docker") is None:
        return False
    found = subprocess.run(
        ["docker", "image", "inspect", "debian:bookworm-slim"], capture_output=True, timeout=60
    )
    return found.returncode == 0


pytestmark = pytest.mark.skipif(
    not _base_image(), reason="needs docker and the offline debian:bookworm-slim base image"
)


def _sample() -> list[str]:
    entries = json.loads((SHIPPED / MANIFEST).read_text())["tasks"]
    if os.environ.get("PALAESTRA_TERMINAL_ALL") == "1":
        return [e["id"] for e in entries]
    rng = random.Random(26)
    families = sorted({e["family"] for e in entries})
    return [rng.choice([e["id"] for e in entries if e["family"] == f]) for f in families]


@pytest.mark.parametrize("task_id", _sample())
def test_oracle_scores_one_and_untouched_machine_zero(task_id: str) -> None:
    verdict = validate(SHIPPED / task_id)
    assert verdict.error is None, verdict.error
    assert (verdict.null, verdict.oracle) == (0.0, 1.0)
