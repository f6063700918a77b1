"""A Go and a Rust task in real boxes, on each provider: their machines build from the
offline base's packs, the oracle scores 1, the untouched machine 0, and what an agent plants
outside the repository for the toolchain to read never scores.

The packs are built by ``python -m palaestra.sandbox.machines.images --pack go --pack rust``
(Debian's mirror, a few minutes): without them these tests skip, saying so.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest

from palaestra.envs.swe_local.environment import PACKS
from palaestra.sandbox.machines import images
from tests.environment.kinds.harbor.conftest import docker_or_skip
from tests.envs.swe_local.languages.test_verify_native import SILENCE
from tests.envs.swe_local.test_verifier_boxes import GOLD, Player, scored

TASKS = {
    "go": "smetrics__hamming__Hamming__29946412",
    "rust": "bytesize__src.lib__add__7a7aaa8a",
}
"""One shipped task of each language (small repositories: quick builds and test runs)."""

GO_WORKSPACE = [
    "mkdir -p /opt/fake && cp -r /testbed/. /opt/fake/ && rm -rf /opt/fake/.git",
    "cd /opt/fake && for f in $(find . -name '*_test.go'); do "
    + SILENCE.format(file="$f")
    + " && sed -i 's/t\\.Fail()/t.Log()/g' $f; done",
    "chmod -R a+rX /opt/fake && printf 'go 1.19\\nuse /opt/fake\\n' > /go.work",
]
"""A workspace above ``/testbed`` whose module of the same path is a copy with its tests'
failures silenced: ``go test`` of the module's import path would run the copy's tests."""

RUNNER = r"""cat > /opt/run.sh <<'END'
#!/bin/sh
"$@" 2>&1 | sed 's/ \.\.\. FAILED$/ ... ok/'
exit 0
END
chmod 755 /opt/run.sh"""
CARGO_RUNNER = [
    RUNNER,
    "mkdir -p /.cargo && printf '[target.x86_64-unknown-linux-gnu]\\nrunner = \"/opt/run.sh\"\\n'"
    " > /.cargo/config.toml && chmod -R a+rX /.cargo",
]
"""A cargo configuration above ``/testbed`` naming a runner that reports every failed test
as passed (cargo reads ``.cargo/config.toml`` in every directory above its own)."""


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


@pytest.mark.parametrize("play", [("go", "rootfs")], indirect=True, ids="-".join)
async def test_a_go_workspace_above_the_repository_does_not_choose_the_tests(
    play: Player,
) -> None:
    assert scored(await play(GO_WORKSPACE)) == 0.0


@pytest.mark.parametrize("play", [("rust", "rootfs")], indirect=True, ids="-".join)
async def test_a_cargo_configuration_above_the_repository_does_not_run_the_tests(
    play: Player,
) -> None:
    assert scored(await play(CARGO_RUNNER)) == 0.0
