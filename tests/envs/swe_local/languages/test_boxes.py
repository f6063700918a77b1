"""A Go and a Rust task in real boxes, on each provider: their machines build from the
offline base's packs, the oracle scores 1 and the untouched machine 0.

The packs are built by ``python -m palaestra.sandbox.machines.images --pack go --pack rust``
(Debian's mirror, a few minutes): without them these tests skip, saying so.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest

from palaestra.envs.swe_local.environment import PACKS
from palaestra.sandbox.machines import images
from tests.environment.harbor.conftest import docker_or_skip
from tests.envs.swe_local.test_verifier_boxes import GOLD, Player, scored

TASKS = {
    "go": "smetrics__hamming__Hamming__29946412",
    "rust": "bytesize__src.lib__add__7a7aaa8a",
}
"""One shipped task of each language (small repositories: quick builds and test runs)."""


@pytest.fixture(scope="session")
def packs() -> list[str]:
    """The Go and Rust packs, built already (building them is a user's download, not a
    test's)."""
    built = images.built_packs()
    missing = sorted(set(PACKS.values()) - set(built))
    if missing:
        flags = " ".join(f"--pack {name}" for name in missing)
        pytest.skip(f"build the packs first: python -m palaestra.sandbox.machines.images {flags}")
    return built


@pytest.fixture
async def play(request: pytest.FixtureRequest, packs: list[str]) -> AsyncIterator[Player]:
    """A ``Player`` of the language's task on the provider the test names."""
    language, sandbox = request.param
    if sandbox == "docker":
        docker_or_skip()
    elif os.geteuid() != 0:
        pytest.skip("the rootfs provider needs root (kernel overlay mounts)")
    repo = TASKS[language].split("__", 1)[0]
    player = Player(sandbox, TASKS[language], filter=f"repo={repo}")
    yield player
    await player.close()


@pytest.mark.parametrize(
    "play",
    [("go", "rootfs"), ("rust", "rootfs"), ("go", "docker"), ("rust", "docker")],
    indirect=True,
    ids="-".join,
)
async def test_the_oracle_scores_1_and_the_untouched_machine_0(play: Player) -> None:
    assert scored(await play([])) == 0.0
    assert scored(await play([GOLD])) == 1.0
