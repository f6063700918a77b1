"""The work dir: files in, files out, and nothing of the host reachable through it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from palaestra._util.processes import pid_namespace, started
from palaestra.errors import SandboxLimitExceeded
from palaestra.sandbox import Limit, Sandbox
from palaestra.sandbox.workdir import PREFIX, WorkDir, mount_tmpfs, sweep_stale


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_collecting_skips_directories_and_leaks_no_file_descriptor(
    sandbox: Sandbox,
) -> None:
    code = (
        "import os\n"
        "os.mkdir('out.d')\n"
        "os.mkfifo('out.fifo')\n"
        "open('out.txt', 'w').write('mine')\n"
        "os.mkdir('inner')\n"
        "open('inner/kept.txt', 'w').write('inner')\n"
        "os.symlink('inner', 'linked')\n"
    )
    await sandbox.run_python("1")  # the event loop's and the sandbox's own fds are open now
    before = open_fds()
    for _ in range(5):
        result = await sandbox.run_python(code, collect=["out*", "linked/*", "inner"])
        assert result.ok, result.stderr
        assert result.files == {"out.txt": b"mine", "linked/kept.txt": b"inner"}
    assert open_fds() == before


async def test_collecting_more_files_than_the_limit_is_an_error_naming_it(
    sandbox: Sandbox,
) -> None:
    code = "import os\nos.mkdir('out')\nfor i in range(1200): open(f'out/{i}', 'w').write('x')\n"
    with pytest.raises(SandboxLimitExceeded) as raised:  # before: 1,000 of them, silently
        await sandbox.run_python(code, collect=["out/*"])
    assert raised.value.limit == Limit.FILES_OUT
    assert "['out/*']: 1,200 files match" in str(raised.value)
    assert "limit of 1,000" in str(raised.value) and "max_files" in str(raised.value)
    assert sandbox.limit_hits[Limit.FILES_OUT] == 1
    result = await sandbox.run_python(code, collect=["out/*"], max_files=1200)
    assert len(result.files) == 1200 and result.files["out/1199"] == b"x"


def test_a_bounded_work_dir_left_by_a_dead_process_is_unmounted_and_removed(
    runs_dir: Path,
) -> None:
    dead = 2**22 + 1  # above the kernel's pid_max default: no such process
    stale = runs_dir / f"{PREFIX}{dead}-left"
    stale.mkdir()
    mount_tmpfs(stale, 1, None)
    (stale / "file").write_bytes(b"x" * 1000)
    sweep_stale(runs_dir)
    assert not stale.exists()
    assert str(stale) not in Path("/proc/self/mounts").read_text()


def test_a_bounded_work_dir_is_gone_with_its_mount_after_a_run(runs_dir: Path) -> None:
    work = WorkDir(runs_dir, None, disk_mb=4)
    work.write({"a.txt": "a"})
    assert os.path.ismount(work.base) and work.tmp is not None and work.shm is not None
    work.remove()
    assert not work.base.exists()
    assert str(work.base) not in Path("/proc/self/mounts").read_text()


def test_a_work_dir_is_judged_by_its_owners_pid_start_time_and_pid_namespace(
    runs_dir: Path,
) -> None:
    pid, start = os.getpid(), started(os.getpid())
    namespace = pid_namespace()
    assert start is not None and namespace is not None
    ours = WorkDir(runs_dir, None)  # named after this process: pid, start time, pid namespace
    assert ours.base.name.startswith(f"{PREFIX}{pid}-{start}-{namespace}-")
    reused = runs_dir / f"{PREFIX}{pid}-{start - 1}-{namespace}-abcd1234"  # a reused pid
    dead = 2**22 + 1  # above the kernel's pid_max default: no such process here
    elsewhere = runs_dir / f"{PREFIX}{dead}-{start}-{namespace + 1}-abcd1234"  # another pid ns
    old_live, old_dead = runs_dir / f"{PREFIX}{pid}-abcd1234", runs_dir / f"{PREFIX}{dead}-x_y"
    for made in (reused, elsewhere, old_live, old_dead):
        made.mkdir()
    try:
        sweep_stale(runs_dir)
        assert ours.base.exists()  # its owner is this very process
        assert not reused.exists()  # before: kept forever, the pid being alive
        assert elsewhere.exists()  # before: removed under a live sandbox of another namespace
        assert old_live.exists() and not old_dead.exists()  # the old names: by pid, as before
    finally:
        ours.remove()
        for made in (elsewhere, old_live):
            made.rmdir()
