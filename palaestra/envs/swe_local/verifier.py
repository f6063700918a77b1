"""The swe_local verifier's own steps, shipped in every task as ``tests/verify.py``.

``tests/test.sh`` runs this file as root in the task's machine, after the agent's processes
are gone, with ``python3 -I -S`` (no ``site``: no sitecustomize, no ``.pth``, no user site, no
``PYTHON*`` variables), so nothing the agent left runs with root's rights. It uses the standard
library only (the machine's Debian python3) and never imports palaestra.

- ``prepare``: put ``/testbed`` in a state the agent's extra files cannot steer. The base
  commit's tree (its id is in ``tests/config.json``, recorded when the task was generated) is
  read from the repository's objects by ``git cat-file --batch`` run as the unprivileged test
  uid with a scratch ``GIT_DIR`` and no configuration at all (the agent's ``.git/config``,
  index, refs and replacements are never read); every object is checked against its id in
  Python, so the agent's objects are trusted only as far as their hashes. Every path the base
  commit did not track is removed (``sitecustomize.py``, ``conftest.py``, ``*.pth``,
  ``__pycache__``, ...), every test and test-infrastructure file is put back as the base had it,
  and the tracked files the agent changed (its fix) are kept, owned by root and read-only to
  the tests. A repository that cannot give the base (objects deleted or forged) is the agent's
  doing: reward 0, with the reason printed.
- ``ids``: the node ids to run (FAIL_TO_PASS then PASS_TO_PASS), one a line.
- ``judge JUNIT``: each node id's own outcome in pytest's JUnit report (written by the test
  uid); reward 1 when every one passed, else 0 (a node missing, failed, errored or skipped is
  0). The exit status of pytest plays no part. The reward is written beside, then moved.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

TESTBED = Path("/testbed")
CONFIG = Path("/tests/config.json")
REWARD_DIR = Path("/logs/verifier")
TEST_UID = 65534
"""Who runs what the agent can influence (git over its objects, the package's tests)."""
DAMAGED = 3
"""``prepare``'s exit status when the agent left no usable repository (reward 0 written)."""
PREPARE_SECONDS = 60.0
"""How long putting ``/testbed`` back may take (a few seconds for sympy) before what the agent
left counts as unusable (millions of files, a FIFO among the objects): a 0, never a verifier
that runs out of time."""
JUNIT_CAP = 64 << 20
OBJECT_CAP = 64 << 20
INFRASTRUCTURE = frozenset({"conftest.py", "pytest.ini", "setup.cfg", "tox.ini", "pyproject.toml"})
TEST_DIRECTORIES = frozenset({"tests", "test", "_test", "testsuite"})
"""Directories of a test suite (with any ``*_tests``): what is in them is the tests' own."""


class Unusable(Exception):
    """The repository the agent left cannot give the base commit's files."""


@dataclass(frozen=True)
class Entry:
    """A file of the base commit's tree: its git mode (``100644``, ``100755``, ``120000``)
    and blob id."""

    mode: str
    blob: str


def is_test_file(path: str) -> bool:
    """Whether the tracked file ``path`` belongs to the tests (put back as the base had it):
    a file under a test suite's directory (``tests``, ``test``, ``_test``, ``testsuite``,
    ``*_tests``), a ``test_*.py``/``*_test.py`` module, or a file pytest reads its setup
    from. A package's helpers for its tests (``sympy/testing``) are its code: a bug may be
    there, and the agent's fix of it is kept."""
    *parents, name = path.split("/")
    return (
        name in INFRASTRUCTURE
        or (name.startswith("test_") and name.endswith(".py"))
        or name.endswith("_test.py")
        or any(part in TEST_DIRECTORIES or part.endswith("_tests") for part in parents)
    )


def object_id(kind: str, data: bytes) -> str:
    """Git's id of an object of ``kind`` (``blob``, ``tree``) holding ``data``."""
    return hashlib.sha1(b"%s %d\0" % (kind.encode(), len(data)) + data).hexdigest()


def as_test_uid() -> list[str]:
    """The command prefix that drops to ``TEST_UID``: no groups, no way back to privilege."""
    uid = str(TEST_UID)
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs"]


class Objects:
    """Objects of the repository's object directory, read by ``git cat-file --batch`` as the
    test uid (a scratch ``GIT_DIR``, no system, global or repository configuration, no
    replacements), each checked against its id before it is used."""

    def __init__(self, objects: Path, scratch: Path) -> None:
        git_dir = scratch / "git"
        for part in ("objects", "refs"):
            (git_dir / part).mkdir(parents=True)
        (git_dir / "HEAD").write_text("ref: refs/heads/base\n")
        (git_dir / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = true\n")
        for path in (git_dir, git_dir / "objects", git_dir / "refs"):
            os.chown(path, TEST_UID, TEST_UID)
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": "/nonexistent",
            "XDG_CONFIG_HOME": "/nonexistent",
            "GIT_DIR": str(git_dir),
            "GIT_OBJECT_DIRECTORY": str(objects),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_TERMINAL_PROMPT": "0",
        }
        self.process = subprocess.Popen(
            [*as_test_uid(), "git", "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=str(scratch),
        )
        # A FIFO or an endless alternate among the agent's objects must not hang the verifier.
        self.timer = threading.Timer(PREPARE_SECONDS, self.process.kill)
        self.timer.start()

    def read(self, oid: str, kind: str) -> bytes:
        """The content of object ``oid``, which must be a ``kind``; ``Unusable`` if it is
        missing, of another kind, or not what its id says."""
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(f"{oid}\n".encode())
            stdin.flush()
            header = stdout.readline().split()
        except OSError:
            header = []
        if len(header) != 3 or header[1].decode() != kind or not header[2].isdigit():
            raise Unusable(f"git object {oid} ({kind}) cannot be read from the repository")
        if int(header[2]) > OBJECT_CAP:  # a forged giant must not exhaust the box's memory
            raise Unusable(f"git object {oid} is larger than any file of the base")
        data = stdout.read(int(header[2]) + 1)[:-1]
        if object_id(kind, data) != oid:
            raise Unusable(f"git object {oid} does not hold what its id says")
        return data

    def close(self) -> None:
        self.timer.cancel()
        self.process.kill()
        self.process.wait()


def tree_entries(data: bytes) -> Iterator[tuple[str, str, str]]:
    """(mode, name, id) of each entry of a tree object's content."""
    at = 0
    while at < len(data):
        space = data.index(b" ", at)
        nul = data.index(b"\0", space)
        mode, name = (
            data[at:space].decode(),
            data[space + 1 : nul].decode("utf-8", "surrogateescape"),
        )
        yield mode, name, data[nul + 1 : nul + 21].hex()
        at = nul + 21


def base_files(objects: Objects, tree: str) -> dict[str, Entry]:
    """Every file of the tree ``tree`` (recursively), by path."""
    files: dict[str, Entry] = {}
    pending = [("", tree)]
    while pending:
        prefix, oid = pending.pop()
        for mode, name, child in tree_entries(objects.read(oid, "tree")):
            if "/" in name or name in ("", ".", "..", ".git"):
                raise Unusable(f"tree {oid} names a file {name!r}")
            if mode == "40000":
                pending.append((f"{prefix}{name}/", child))
            elif mode in ("100644", "100755", "120000"):
                files[f"{prefix}{name}"] = Entry(mode, child)
            else:
                raise Unusable(f"tree {oid} holds {name!r} of mode {mode}")
    return files


class Deadline:
    """The end of ``prepare``'s time (``PREPARE_SECONDS`` from now)."""

    def __init__(self) -> None:
        self.end = time.monotonic() + PREPARE_SECONDS

    def check(self) -> None:
        if time.monotonic() > self.end:
            raise Unusable(f"/testbed takes more than {PREPARE_SECONDS:g} s to put back")


def _remove(path: Path, deadline: Deadline | None = None) -> None:
    """Remove ``path`` (a directory with all it holds), never following a symlink, checking
    ``deadline`` at each file."""
    if path.is_symlink() or not path.is_dir():
        path.unlink()
        return
    for here, directories, names in os.walk(path, topdown=False):
        for name in names:
            if deadline is not None:
                deadline.check()
            os.unlink(os.path.join(here, name))
        for name in directories:
            inner = os.path.join(here, name)
            if os.path.islink(inner):
                os.unlink(inner)
            else:
                os.rmdir(inner)
    path.rmdir()


def clean(root: Path, files: dict[str, Entry], deadline: Deadline | None = None) -> list[str]:
    """Remove from ``root`` every path the base did not track (``.git`` aside), and every
    tracked path that is no longer of its kind (a file made a directory, a symlink or a FIFO);
    the paths removed. Nothing is opened or followed."""
    directories = {""}
    for path in files:
        parts = path.split("/")
        directories.update("/".join(parts[:i]) for i in range(1, len(parts)))
    removed: list[str] = []
    pending = [""]
    while pending:
        if deadline is not None:
            deadline.check()
        here = pending.pop()
        for entry in sorted(os.scandir(root / here), key=lambda item: item.name):
            path = f"{here}{entry.name}"
            if path == ".git":
                continue
            mode = entry.stat(follow_symlinks=False).st_mode
            tracked = files.get(path)
            if path in directories and stat.S_ISDIR(mode):
                pending.append(f"{path}/")
                continue
            if tracked is not None and (
                stat.S_ISLNK(mode) if tracked.mode == "120000" else stat.S_ISREG(mode)
            ):
                continue
            _remove(root / path, deadline)
            removed.append(path)
    return removed


def _same(path: Path, entry: Entry) -> bool:
    """Whether ``path`` holds exactly the base's ``entry`` (content and executable bit)."""
    info = path.lstat()
    if entry.mode == "120000":
        return (
            stat.S_ISLNK(info.st_mode)
            and object_id("blob", os.fsencode(os.readlink(path))) == entry.blob
        )
    executable = bool(info.st_mode & stat.S_IXUSR)
    return (
        stat.S_ISREG(info.st_mode)
        and executable == (entry.mode == "100755")
        and info.st_size <= OBJECT_CAP
        and object_id("blob", path.read_bytes()) == entry.blob
    )


def restore(
    root: Path,
    files: dict[str, Entry],
    objects: Objects,
    protected: Callable[[str, Entry], bool] | None = None,
) -> list[str]:
    """Put every file of the base that is ``protected`` (by default ``is_test_file``: the tests
    and their infrastructure) back as it was (content checked against its blob id); the
    paths put back."""
    restored: list[str] = []
    for path, entry in sorted(files.items()):
        if not (protected(path, entry) if protected is not None else is_test_file(path)):
            continue
        target = root / path
        if (target.exists() or target.is_symlink()) and _same(target, entry):
            continue
        put_back(target, objects.read(entry.blob, "blob"), entry.mode)
        restored.append(path)
    return restored


def put_back(target: Path, data: bytes, mode: str) -> None:
    """Make ``target`` the file (or, mode ``120000``, the link) ``data``: written beside,
    then moved over, so nothing the agent left at ``target`` is written through."""
    target.parent.mkdir(parents=True, exist_ok=True)
    beside = target.with_name(f".{target.name}.verifier")
    if beside.exists() or beside.is_symlink():
        _remove(beside)
    if mode == "120000":
        os.symlink(os.fsdecode(data), beside)
    else:
        beside.write_bytes(data)
        beside.chmod(0o755 if mode == "100755" else 0o644)
    os.replace(beside, target)


def _settle(path: str, info: os.stat_result) -> None:
    """``path`` owned by root, a directory ``0755``, a file ``0644`` (``0755`` if its owner
    may run it); touched only when it differs (a change copies a file up an overlay)."""
    if (info.st_uid, info.st_gid) != (0, 0):
        os.lchown(path, 0, 0)
    if stat.S_ISDIR(info.st_mode):
        mode = 0o755
    elif stat.S_ISREG(info.st_mode):
        mode = 0o755 if info.st_mode & stat.S_IXUSR else 0o644
    else:
        return
    if stat.S_IMODE(info.st_mode) != mode:
        os.chmod(path, mode)


def settle(root: Path, deadline: Deadline | None = None) -> None:
    """Everything under ``root`` but ``.git`` owned by root, directories ``0755`` and files
    ``0644`` (``0755`` if executable; no setuid, setgid or sticky bits): the tests, run as the
    test uid, read the repository and change nothing in it."""
    for here, directories, names in os.walk(root):
        if deadline is not None:
            deadline.check()
        if Path(here) == root and ".git" in directories:
            directories.remove(".git")
        for name in [*directories, *names]:
            path = os.path.join(here, name)
            _settle(path, os.lstat(path))
    _settle(str(root), os.lstat(root))


def write_reward(value: int, directory: Path = REWARD_DIR) -> None:
    """``reward.txt`` in ``directory``, written beside and then moved (never half a file)."""
    partial = directory / "reward.txt.partial"
    if partial.is_dir() and not partial.is_symlink():
        shutil.rmtree(partial)
    elif partial.exists() or partial.is_symlink():
        partial.unlink()
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(descriptor, "w") as file:
        file.write(f"{value}\n")
    os.replace(partial, directory / "reward.txt")


def junit_address(node_id: str) -> tuple[str, str]:
    """The (classname, name) pytest's JUnit report gives the test ``node_id``: the file's
    path dotted without ``.py``, the classes, then the function with its parameters."""
    path, bracket, parameters = node_id.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + parameters
    return ".".join(names[:-1]), names[-1]


def junit_outcomes(data: bytes) -> dict[tuple[str, str], str]:
    """Each test case of a JUnit report by (classname, name): ``passed``, or the first of
    ``failure``, ``error``, ``skipped`` it holds (a case reported twice keeps its worst).
    ``ValueError`` for a report that is not one (a DTD or entities are refused outright)."""
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise ValueError("the report declares a DTD or entities")
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError as error:
        raise ValueError(f"the report is not XML: {error}") from None
    outcomes: dict[tuple[str, str], str] = {}
    for case in root.iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcome = kinds[0] if kinds else "passed"
        if outcomes.get(key, "passed") == "passed":
            outcomes[key] = outcome
    return outcomes


def read_report(path: Path) -> bytes | None:
    """The report the test uid wrote at ``path`` (a regular file, never followed, at most
    ``JUNIT_CAP`` bytes); None when there is none."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return None
        data = file.read(JUNIT_CAP + 1)
    return data if len(data) <= JUNIT_CAP else None


@dataclass(frozen=True)
class Config:
    """What ``tests/config.json`` tells the verifier."""

    base_tree: str
    node_ids: list[str]
    """FAIL_TO_PASS then PASS_TO_PASS."""


def load_config(path: Path = CONFIG) -> Config:
    data = json.loads(path.read_text(encoding="utf-8"))
    ids = [str(node) for node in [*data["FAIL_TO_PASS"], *data["PASS_TO_PASS"]]]
    return Config(base_tree=str(data["base_tree"]), node_ids=ids)


Restore = Callable[[Path, dict[str, Entry], Objects], list[str]]
"""Puts a language's test files of the base back (``restore`` with its predicate)."""


def prepare(config: Config, root: Path, scratch: Path, rewards: Path = REWARD_DIR) -> int:
    """``/testbed`` as the base with the agent's changes to its tracked files (see above);
    0, or ``DAMAGED`` when the repository cannot give the base (reward 0 written)."""
    return put_back_base(config.base_tree, root, scratch, rewards, restore)


def put_back_base(tree: str, root: Path, scratch: Path, rewards: Path, tests: Restore) -> int:
    """The base commit's ``tree`` at ``root``: untracked paths removed, the test files put
    back by ``tests``, the agent's other changes kept, all settled; 0, or ``DAMAGED`` when
    the repository cannot give it (reward 0 written, with the reason)."""
    if root.is_symlink() or not root.is_dir():
        print(f"{root} is not a directory: nothing to test")
        write_reward(0, rewards)
        return DAMAGED
    deadline = Deadline()
    objects = Objects(root / ".git" / "objects", scratch)
    try:
        files = base_files(objects, tree)
        removed = clean(root, files, deadline)
        restored = tests(root, files, objects)
        settle(root, deadline)
    except (Unusable, OSError) as problem:
        # Root may remove and write anything here: what fails is what the agent left
        # (objects missing or forged, an immutable file, ...), its outcome, not ours.
        print(f"the repository cannot be put back to its base: {problem}")
        write_reward(0, rewards)
        return DAMAGED
    finally:
        objects.close()
    for verb, paths in (("removed (not in the base commit)", removed), ("put back", restored)):
        if paths:
            shown = ", ".join(paths[:10]) + (f" and {len(paths) - 10} more" if paths[10:] else "")
            print(f"{verb}: {shown}")
    return 0


def judge(config: Config, report: Path, rewards: Path = REWARD_DIR) -> int:
    """Write the reward from the report's outcome of each node id (see above); 0."""
    data = read_report(report)
    try:
        outcomes = junit_outcomes(data) if data is not None else None
    except ValueError as problem:
        print(f"{report}: {problem}")
        outcomes = None
    if outcomes is None:
        print(f"no usable test report at {report}: every test counts as not passed")
        outcomes = {}
    found = {node: outcomes.get(junit_address(node), "missing") for node in config.node_ids}
    return decide(config.node_ids, found, rewards)


def decide(ids: list[str], outcomes: Mapping[str, str], rewards: Path = REWARD_DIR) -> int:
    """Write the reward: 1 when every one of ``ids`` (there is at least one) ``passed`` in
    ``outcomes``, else 0, the ones that did not printed; 0."""
    wrong = [
        f"{test}: {outcomes.get(test, 'missing')}" for test in ids if outcomes.get(test) != "passed"
    ]
    for line in wrong[:20]:
        print(f"not passed: {line}")
    write_reward(0 if wrong or not ids else 1, rewards)
    return 0


def main(argv: list[str]) -> int:
    config = load_config()
    if argv[:1] == ["prepare"] and len(argv) == 2:
        return prepare(config, TESTBED, Path(argv[1]))
    if argv == ["ids"]:
        print("\n".join(config.node_ids))
        return 0
    if argv[:1] == ["judge"] and len(argv) == 2:
        return judge(config, Path(argv[1]))
    print("usage: verify.py prepare SCRATCH | ids | judge JUNIT", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
