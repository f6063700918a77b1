"""Every sandbox test must leave no process and no work dir behind: checked after each one."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra.sandbox import Limits, Sandbox, isolation
from palaestra.sandbox.cgroup import find_memory_cgroups
from palaestra.sandbox.workdir import PREFIX

OUR_UIDS: list[range] = []
"""The uid blocks of the sandboxes made in this test process (others may run beside us)."""


class RecordedUidPool(isolation.UidPool):
    def __init__(self, size: int = 1024) -> None:
        super().__init__(size)
        OUR_UIDS.append(range(self._base, self._base + size))


def process_table(*, zombies_of_init: bool = True) -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, real uid) of every process on the machine.

    ``zombies_of_init=False`` leaves out dead processes waiting for PID 1 to reap them:
    bubblewrap leaves its namespace init to PID 1 (which reaps it a moment later here).
    """
    table: dict[int, tuple[int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        parent = int(fields["PPid"])
        if not zombies_of_init and parent == 1 and fields["State"].split()[0] in "ZX":
            continue
        table[int(entry)] = (parent, int(fields["Uid"].split()[0]))
    return table


def leftovers(*, zombies_of_init: bool = False) -> list[str]:
    """Our descendants and any process of a sandbox uid, described."""
    table = process_table(zombies_of_init=zombies_of_init)
    ours = {os.getpid()}
    grew = True
    while grew:
        grew = False
        for pid, (parent, _) in table.items():
            if parent in ours and pid not in ours:
                ours.add(pid)
                grew = True
    ours.discard(os.getpid())
    found = ours | {
        pid for pid, (_, uid) in table.items() if any(uid in block for block in OUR_UIDS)
    }
    return [f"{pid}: {_cmdline(pid)}" for pid in sorted(found)]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
    except OSError:
        return "?"


def new_leftovers(
    before: set[str], grace: float = 5.0, *, zombies_of_init: bool = False
) -> list[str]:
    """Processes that were not there ``before``; killed ones get ``grace`` seconds to go."""
    deadline = time.monotonic() + grace
    while (
        found := sorted(set(leftovers(zombies_of_init=zombies_of_init)) - before)
    ) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


@pytest.fixture(autouse=True)
def _no_leaks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(isolation, "UidPool", RecordedUidPool)
    before = set(leftovers())  # other tests of the suite may have left their own
    yield
    assert new_leftovers(before) == [], "the test left processes behind"
    stale = [p for p in Path("/tmp").glob(f"{PREFIX}{os.getpid()}-*")]
    assert stale == [], "the test left sandbox work dirs in /tmp"
    assert busy_cgroups() == [], "the test left processes in a run's memory cgroup"


def busy_cgroups(grace: float = 5.0) -> list[str]:
    """This process's run cgroups that still hold a process after ``grace`` seconds.

    The empty ones are removed here: a cgroup stays busy until the run's namespace init is
    reaped, after the test's event loop (which retries the removal) may be gone.
    """
    cgroups = find_memory_cgroups()
    if isinstance(cgroups, str):
        return []
    ours = list(cgroups.base.glob(f"{PREFIX}{os.getpid()}-*"))
    deadline = time.monotonic() + grace
    while ours and time.monotonic() < deadline:
        for path in list(ours):
            with contextlib.suppress(OSError):
                path.rmdir()
                ours.remove(path)
        time.sleep(0.05)
    return [str(path) for path in ours]


@pytest.fixture
def runs_dir() -> Iterator[Path]:
    """Where the sandbox makes its work dirs; it must be empty after the test.

    Not under pytest's tmp_path: that is private to root, and the sandbox's uid must be able
    to enter the directories above its work dir.
    """
    path = Path(tempfile.mkdtemp(prefix="palaestra-test-runs-"))
    path.chmod(0o711)
    try:
        yield path
        assert list(path.iterdir()) == [], "the test left sandbox work dirs behind"
    finally:
        shutil.rmtree(path)


@pytest.fixture
def sandbox(runs_dir: Path) -> Sandbox:
    """A real bubblewrap sandbox: these tests fail (not skip) where bubblewrap is missing."""
    return Sandbox(Limits(wall_time=10, cpu_time=5), isolation="bubblewrap", root_dir=runs_dir)
