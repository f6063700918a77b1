"""A stack's socket directory: private, removed at its stop, and removed after a kill -9 by the
next stack to start, never while its stack lives."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra.stack.sockets import PREFIX, SocketDirectory, _locked


@pytest.fixture
def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.fixture
def made() -> Iterator[list[SocketDirectory]]:
    """Directories a test makes, removed after it."""
    directories: list[SocketDirectory] = []
    yield directories
    for directory in directories:
        directory.remove()


def leftover(parent: Path, pid: int) -> Path:
    """A directory as a stack of supervisor ``pid`` killed with SIGKILL leaves it."""
    path = parent / f"{PREFIX}{pid}-abc123"
    path.mkdir(mode=0o700)
    return path


def test_a_stack_directory_is_private_named_by_its_pid_and_gone_after_remove(
    tmp_path: Path,
) -> None:
    directory = SocketDirectory.make(tmp_path)
    assert directory.path.parent == tmp_path
    assert directory.path.name.startswith(f"{PREFIX}{os.getpid()}-")
    assert directory.path.stat().st_mode & 0o777 == 0o700
    (directory.path / "0.sock").touch()
    directory.remove()
    assert not directory.path.exists()


def test_a_directory_a_dead_stack_left_is_removed_when_a_new_stack_starts(
    tmp_path: Path, dead_pid: int, made: list[SocketDirectory]
) -> None:
    left = leftover(tmp_path, dead_pid)
    (left / "0.sock").touch()  # its servers died with it; their socket files stayed
    made.append(SocketDirectory.make(tmp_path))
    assert not left.exists()


def test_a_live_stacks_directory_is_kept_when_a_new_stack_starts(
    tmp_path: Path, made: list[SocketDirectory]
) -> None:
    live = SocketDirectory.make(tmp_path)
    made.append(live)
    made.append(SocketDirectory.make(tmp_path))
    assert live.path.is_dir()
    assert made[1].path != live.path


def test_a_locked_directory_is_kept_even_when_its_pid_looks_dead(
    tmp_path: Path, dead_pid: int, made: list[SocketDirectory]
) -> None:
    """A stack in another pid namespace sharing /tmp: its pid means nothing here, its lock
    does."""
    held = leftover(tmp_path, dead_pid)
    lock = _locked(held)
    assert lock is not None
    try:
        made.append(SocketDirectory.make(tmp_path))
        assert held.is_dir()
    finally:
        os.close(lock)


def test_a_directory_made_but_not_locked_yet_is_kept_while_its_owner_lives(
    tmp_path: Path, made: list[SocketDirectory]
) -> None:
    starting = leftover(tmp_path, os.getpid())
    made.append(SocketDirectory.make(tmp_path))
    assert starting.is_dir()


def test_only_this_users_directories_of_this_prefix_are_touched(
    tmp_path: Path, dead_pid: int, made: list[SocketDirectory], monkeypatch: pytest.MonkeyPatch
) -> None:
    someone_elses = leftover(tmp_path, dead_pid)
    other_names = [tmp_path / f"palaestra-{dead_pid}-x", tmp_path / f"{PREFIX}x{dead_pid}-x"]
    for path in other_names:
        path.mkdir()
    not_a_directory = tmp_path / f"{PREFIX}{dead_pid}-file"
    not_a_directory.write_text("")
    real_uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real_uid + 1)  # the leftover is not ours now
    made.append(SocketDirectory.make(tmp_path))
    monkeypatch.undo()
    assert someone_elses.is_dir()
    assert all(path.is_dir() for path in other_names)
    assert not_a_directory.is_file()
