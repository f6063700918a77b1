"""Real machines for the Harbor tests: the rootfs provider over the offline Debian base."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from palaestra.environment.kinds.harbor import HarborEnvironment, HarborState
from palaestra.environment.kinds.harbor.tasks import task_row
from palaestra.environment.sessions import Session
from palaestra.errors import ConfigError
from palaestra.sandbox.machines import images
from palaestra.sandbox.machines.provider import Provider
from palaestra.sandbox.machines.registry import make_provider
from palaestra.sandbox.machines.rootfs import RootfsProvider
from palaestra.types import Verdict
from tests.support.harbor_folders import components_task


@pytest.fixture(scope="session")
def base_tar() -> Path:
    """The offline Debian base (``images.base_tar``: built by scripts/install_machines.sh)."""
    if os.geteuid() != 0:
        pytest.skip("the rootfs provider needs root (kernel overlay mounts)")
    return images.base_tar(build=True)


@pytest.fixture(scope="session")
def layer_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One layer store for the whole run, shared by its xdist workers: each layer is built
    under its own lock (a second worker that needs it waits for the first), so the base is
    unpacked and each task's image built once per run rather than once per worker. It lives in
    the run's temporary folder, which pytest removes with old runs' (a worker's teardown
    removing it cost over a minute)."""
    run = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run = run.parent  # the workers' folders (popen-gw0, ...) share the run's
    path = run / "harbor-layers"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture
def runtime() -> Iterator[Path]:
    """Where the test's boxes live; it must be empty after the test (leases included)."""
    path = Path(tempfile.mkdtemp(prefix="palaestra-test-harbor-boxes-"))
    path.chmod(0o711)
    try:
        yield path
        assert list(path.iterdir()) == [], "the test left boxes or leases behind"
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def rootfs(base_tar: Path, layer_cache: Path, runtime: Path) -> RootfsProvider:
    return RootfsProvider(cache=layer_cache, runtime=runtime, base=lambda: base_tar)


@pytest.fixture
def default_rootfs(
    base_tar: Path, layer_cache: Path, runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sandbox=rootfs`` as the CLI makes it, on the test's base, layers and box directory."""
    from palaestra.sandbox.machines import rootfs

    monkeypatch.setattr(rootfs, "offline_base", lambda: base_tar)
    monkeypatch.setattr(rootfs, "default_runtime", lambda: runtime)
    monkeypatch.setattr(rootfs, "default_cache", lambda: layer_cache)


@pytest.fixture(params=["rootfs", "docker"])
def machines(request: pytest.FixtureRequest) -> Provider:
    """Each provider that can run here: rootfs on the test's base and box directory, docker
    through its daemon (skipped when it has none, or its provider is not installed)."""
    if request.param == "rootfs":
        provider: Provider = request.getfixturevalue("rootfs")
        return provider
    return docker_or_skip()


def docker_or_skip() -> Provider:
    """The docker provider, or the test skipped saying why it cannot run here."""
    try:
        provider = make_provider("docker")
    except ConfigError as error:
        pytest.skip(f"no docker provider: {error}")
    problem = provider.problem()
    if problem is not None:
        pytest.skip(f"docker cannot run here: {problem}")
    return provider


class Rollouts:
    """Seed, verify and close rollouts of one Harbor environment directly."""

    def __init__(self, environment: HarborEnvironment) -> None:
        self.environment = environment
        self.sessions: list[Session] = []

    async def seed(self, name: str = "a") -> Session:
        row = task_row(name, self.environment.tasks[name])
        state = await self.environment.seed(row)
        session = Session(f"s{len(self.sessions)}", row, state)
        self.sessions.append(session)
        return session

    async def verify(self, session: Session) -> Verdict:
        return await self.environment.verify(session, {})


@pytest.fixture
async def harbor(tmp_path: Path, machines: Provider) -> AsyncIterator[Rollouts]:
    """An environment over ``tmp_path/tasks`` (a test writes its folders first)."""
    (tmp_path / "tasks").mkdir()
    holder: list[Rollouts] = []

    async def make(**folders: dict[str, str | None]) -> Rollouts:
        for name, options in folders.items():
            components_task(tmp_path / "tasks" / name, **options)  # type: ignore[arg-type]
        environment = HarborEnvironment(str(tmp_path / "tasks"), sandbox=machines.name)
        environment._provider = machines
        holder.append(Rollouts(environment))
        return holder[-1]

    yield make  # type: ignore[misc]
    for rollouts in holder:
        for session in rollouts.sessions:
            await rollouts.environment.close(session)
        await rollouts.environment.aclose()


def box_of(session: Session) -> HarborState:
    state = session.state
    assert isinstance(state, HarborState) and state.box is not None
    return state
