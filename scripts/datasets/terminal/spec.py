"""One generated terminal task, and how it becomes a Harbor task folder.

Every family module builds ``TerminalTask`` values; ``write_folder`` turns one into a folder:

- ``environment/Dockerfile``: ``FROM debian:bookworm-slim``, then ONE ``apt-get install`` line
  that is the same for every task of a family (so a builder caches it), a user ``agent`` when
  the agent does not need root, the generated starting files copied from ``environment/files/``
  to the same absolute paths, the family's setup commands (as root, at build time: ownership,
  mtimes, a git history), ``WORKDIR /app``;
- ``tests/``: ``test.sh``, which runs ``check.py`` (standard-library Python: the hidden checks
  and their expected values, never visible to the agent, since ``tests/`` is copied in only
  after the agent is done). ``check.py`` writes ``reward.txt`` or, where partial credit is
  natural, ``reward.json`` with named components and a ``reward`` key; always beside, then
  moved, so a crashed check leaves no reward (an error, never a 0). ``CHECK_PRELUDE`` is
  what every check trusts and how: the agent's programs run only unprivileged, the reward
  directory is root's alone, the reward is written last over whatever was planted;
- ``solution/solve.sh``: the oracle, run as the agent's user in ``/app``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from palaestra.wire.harbor import (
    AgentConfig,
    EnvironmentConfig,
    TaskConfig,
    TaskFolder,
    VerifierConfig,
    write_task,
)

BASE_IMAGE = "debian:bookworm-slim"
AGENT = "agent"
FILES = "files"
"""The folder of ``environment/`` holding the starting files, laid out from ``/``."""

TEST_SCRIPT = """\
#!/bin/bash
# Runs the hidden checks on the machine the agent left; check.py writes the reward
# (/logs/verifier/reward.txt or reward.json), beside then moved. Python runs isolated (-I: no
# PYTHON* variables, no user site-packages) and without site (-S: no .pth, no sitecustomize).
set -euo pipefail
cd /
exec /usr/bin/python3 -I -S /tests/check.py
"""

CHECK_PRELUDE = '''\
"""Hidden checks of one terminal task (standard library only), run as root.

What the agent left is data here. A program of the agent's, or one that reads config from its
files, runs only as an unprivileged user (``run(..., user=...)``: its own uid and gid, no
supplementary groups, no way to gain privileges, an environment of its own) after
``/logs/verifier`` was made root's and writable by root only, and whatever a command leaves
running is killed before the next step. The reward is written last, beside then moved, over
whatever was planted at its path or beside it (never following a symlink or writing into a
directory there).
"""

import ctypes
import errno
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile

VERIFIER = ("logs", "verifier")
REWARDS = ("reward.txt", "reward.json")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
NOBODY = 65534
READ_CAP = 64 << 20
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _prctl(option, value):
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _remove(name, directory):
    """Remove ``name`` in the open ``directory``, whatever it is (a directory with its tree)."""
    try:
        info = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(name, dir_fd=directory)
    else:
        os.unlink(name, dir_fd=directory)


def _verifier():
    """``/logs/verifier`` opened without following a symlink (what is there that is not a
    directory is replaced by one), root's and writable by root only."""
    current = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    for part in VERIFIER:
        try:
            child = os.open(part, _DIRECTORY, dir_fd=current)
        except OSError as error:
            if error.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                raise
            _remove(part, current)
            os.mkdir(part, 0o755, dir_fd=current)
            child = os.open(part, _DIRECTORY, dir_fd=current)
        os.close(current)
        current = child
        if os.geteuid() == 0:
            os.fchown(current, 0, 0)
            os.fchmod(current, 0o755)
    return current


def _descendants():
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as file:
                    data = file.read()
            except OSError:
                continue
            parents[int(entry)] = int(data[data.rindex(b")") + 2 :].split()[1])
    found, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _reap():
    """Kill every process the check started that is still there (an orphan is the check's
    child: it is their subreaper), and wait for them."""
    while True:
        for pid in _descendants():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _write(name, text):
    _reap()
    directory = _verifier()
    try:
        for other in REWARDS:
            _remove(other, directory)
            _remove(other + ".partial", directory)
        partial = name + ".partial"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(partial, flags, 0o644, dir_fd=directory), "w") as file:
            file.write(text)
        os.rename(partial, name, src_dir_fd=directory, dst_dir_fd=directory)
    finally:
        os.close(directory)


def finish(ok):
    """All-or-nothing: 1 or 0 in reward.txt."""
    _write("reward.txt", "1\\n" if ok else "0\\n")


def finish_parts(parts):
    """Named components (each 0..1) in reward.json; "reward" is their mean, or 1 only when
    every component is 1 when the task is all-or-nothing (``_strict``), or ``_reward`` when
    the check computes it."""
    strict = parts.pop("_strict", False)
    given = parts.pop("_reward", None)
    values = [float(v) for v in parts.values()]
    if given is not None:
        reward = float(given)
    elif strict:
        reward = 1.0 if values and all(v == 1.0 for v in values) else 0.0
    else:
        reward = sum(values) / len(values) if values else 0.0
    _write("reward.json", json.dumps({"reward": reward, **parts}, sort_keys=True) + "\\n")


def read(path, mode="r"):
    """The content of the regular file ``path`` (at most ``READ_CAP`` bytes), or None when it
    cannot be read or is something else (a FIFO or a device is never read)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        descriptor = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        with os.fdopen(os.dup(descriptor), "rb") as file:
            data = file.read(READ_CAP + 1)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    if len(data) > READ_CAP:
        return None
    if "b" in mode:
        return data
    try:
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()
    except UnicodeDecodeError:
        return None


def account(user):
    """(uid, gid, home) of ``user``: a uid (an int) as it is, never looked up (a root agent
    may rewrite /etc/passwd); a name as /etc/passwd has it; None when there is none."""
    if isinstance(user, int):
        return user, user, "/nonexistent"
    for line in (read("/etc/passwd") or "").splitlines():
        fields = line.split(":")
        if len(fields) >= 7 and str(user) in (fields[0], fields[2]):
            try:
                return int(fields[2]), int(fields[3]), fields[5]
            except ValueError:
                return None
    return None


def run(command, user=None, env=None, cwd="/", timeout=60):
    """``command`` (a list) run with a time budget; its CompletedProcess (text), or None.

    ``user`` (a name or a uid): as that user, unprivileged (no supplementary groups,
    no_new_privs: a setuid file runs as its caller), with only ``PATH``, ``HOME`` (the
    user's), ``LANG`` and ``env``; else as root, with ``env`` or the check's environment.
    Whatever it leaves running is killed."""
    options = {}
    if user is not None:
        ids = account(user)
        if ids is None:
            return None
        uid, gid, home = ids
        options = {"user": uid, "group": gid, "extra_groups": [], "preexec_fn": _no_new_privs}
        env = {"PATH": PATH, "HOME": home, "LANG": "C.UTF-8", **(env or {})}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                cwd=cwd,
                env=env,
                start_new_session=True,
                **options,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        try:
            status = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            status = None
        _reap()
        if status is None:
            return None
        texts = []
        for file in (out, err):
            file.seek(0)
            texts.append(file.read(READ_CAP).decode("utf-8", "replace"))
    return subprocess.CompletedProcess(command, status, texts[0], texts[1])


def _no_new_privs():
    if not _prctl(38, 1):  # PR_SET_NO_NEW_PRIVS
        os._exit(126)


_prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: what a command orphans stays the check's to kill
os.close(_verifier())


'''


@dataclass(frozen=True)
class TerminalTask:
    """One generated task, before it is written.

    ``files`` maps absolute paths in the machine to their content (text or bytes);
    ``setup`` are shell commands run as root at build time, after the files are in place;
    ``check`` is the Python body appended to ``CHECK_PRELUDE`` (it must call ``finish`` or
    ``finish_parts``); ``solve`` is the body of ``solve.sh`` (run in ``/app``)."""

    family: str
    name: str
    instruction: str
    check: str
    solve: str
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    setup: Sequence[str] = ()
    packages: Sequence[str] = ("python3",)
    agent_user: str = AGENT
    difficulty: int = 1
    tests: Mapping[str, str] = field(default_factory=dict)
    """Other hidden files of ``tests/`` (name to text), read by ``check.py``."""
    tags: Sequence[str] = ()
    source: str = "palaestra:terminal"
    timeout_sec: float = 900.0


def constants(**values: Any) -> str:
    """Python source binding each value (JSON-compatible) to its name, for a check body."""
    return "".join(
        f"{name} = json.loads({json.dumps(json.dumps(v))})\n" for name, v in values.items()
    )


def dockerfile(task: TerminalTask) -> str:
    """The task's Dockerfile (see the module docstring)."""
    lines = [
        # The name the factories had when the shipped set was made: every task's digest
        # covers this line, so it stays.
        f"# terminal/{task.family}: generated by palaestra.envs.terminal (do not edit by hand).",
        f"FROM {BASE_IMAGE}",
        "RUN apt-get update && apt-get install -y --no-install-recommends "
        + " ".join(task.packages)
        + " && rm -rf /var/lib/apt/lists/*",
    ]
    if task.agent_user == AGENT:
        lines.append(f"RUN useradd --create-home --shell /bin/bash {AGENT}")
    lines.append("RUN mkdir -p /app")
    if task.files:
        lines.append(f"COPY {FILES}/ /")
    if task.agent_user == AGENT:
        lines.append(f"RUN chown -R {AGENT}:{AGENT} /app")
    lines.extend(f"RUN {command}" for command in task.setup)
    lines.append("WORKDIR /app")
    return "\n".join(lines) + "\n"


def solve_script(task: TerminalTask) -> str:
    return (
        "#!/bin/bash\n"
        f"# The oracle of terminal/{task.family} ({task.name}): a run must score 1.\n"
        "set -euo pipefail\n"
        "cd /app\n" + task.solve.strip("\n") + "\n"
    )


def task_config(task: TerminalTask, task_id: str) -> TaskConfig:
    return TaskConfig(
        metadata={
            "author_name": "palaestra",
            "category": task.family,
            "difficulty": ("easy", "medium", "hard")[min(max(task.difficulty, 1), 3) - 1],
            "tags": ["terminal", task.family, task.name, *task.tags],
            "id": task_id,
        },
        source=task.source,
        verifier=VerifierConfig(timeout_sec=120.0, user="root"),
        agent=AgentConfig(timeout_sec=task.timeout_sec, user=task.agent_user),
        environment=EnvironmentConfig(
            build_timeout_sec=600.0,
            cpus=1,
            memory_mb=1024,
            storage_mb=2048,
            network_mode="no-network",
        ),
    )


def write_folder(task: TerminalTask, task_id: str, path: str | os.PathLike[str]) -> Path:
    """Write ``task`` as the Harbor task folder ``path`` (which must not exist)."""
    root = write_task(
        TaskFolder(
            config=task_config(task, task_id),
            instruction=task.instruction.strip("\n") + "\n",
            dockerfile=dockerfile(task),
            test_script=TEST_SCRIPT,
            tests={"check.py": CHECK_PRELUDE + task.check.strip("\n") + "\n", **task.tests},
            solve_script=solve_script(task),
        ),
        path,
    )
    for name, content in sorted(task.files.items()):
        if not name.startswith("/"):
            raise ValueError(f"{task.family}/{task.name}: file path {name!r} is not absolute")
        target = root / "environment" / FILES / name.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
        target.chmod(0o644)
    return root
