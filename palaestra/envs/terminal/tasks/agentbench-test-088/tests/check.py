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
    _write("reward.txt", "1\n" if ok else "0\n")


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
    _write("reward.json", json.dumps({"reward": reward, **parts}, sort_keys=True) + "\n")


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


HOME = json.loads("\"/home/agent\"")
ANSWER = json.loads("\"/answer/answer.txt\"")
EVALUATION = json.loads("{\"check\": [null, {\"language\": \"python\", \"file\": \"check/integer-match.py\"}], \"example\": \"#!/bin/bash\\nfind problem_folder/ -type f \\\\( \\\\\\n    \\\\( -iname '*.txt' -exec stat -c\\\"%s\\\" {} \\\\; \\\\) -o \\\\\\n    \\\\( -iname '*.jpg' -exec stat -c\\\"%s\\\" {} \\\\; \\\\) -o \\\\\\n    \\\\( -iname '*.png' -exec stat -c\\\"%s\\\" {} \\\\; \\\\) \\\\) \\\\\\n    | awk '{sum += $1} END {print sum}'\"}")

# The suite's commands run in bash without start-up files (a login shell would run the
# agent's ~/.profile as root) and with an environment of the check's own. The example and
# the state checks run as root; a check script calls the program the agent wrote, so it runs
# as nobody, who can write nothing the verifier reads.
SHELL_ENV = {"PATH": PATH, "HOME": HOME, "PYTHONNOUSERSITE": "1"}

def shell(command, user=None):
    argv = ["/bin/bash", "--noprofile", "--norc", "-c", "cd " + HOME + " && " + command]
    return run(argv, user=user, env=SHELL_ENV)

def passed():
    answer = read(ANSWER)
    answer = None if answer is None else answer.strip()
    if "check" not in EVALUATION:
        return answer is not None and answer == str(EVALUATION["match"]).strip()
    check = EVALUATION["check"]
    if isinstance(check, dict) and "file" in check:
        done = shell("bash /tests/scripts/" + check["file"], user=NOBODY)
        return done is not None and done.returncode == 0
    if isinstance(check, dict) and "code" in check:
        done = shell(check["code"])
        return done is not None and done.returncode == 0
    if len(check) == 1 and isinstance(check[0], str):
        done = shell(check[0])
        return done is not None and done.returncode == 0
    if answer is None:
        return False
    params = [answer]
    for item in check:
        if item is None:
            if "match" in EVALUATION:
                params.append(str(EVALUATION["match"]))
                continue
            example = EVALUATION["example"]
            code = example["code"] if isinstance(example, dict) else example
            done = shell(code)
            if done is None or done.returncode != 0:
                return False
            params.append(done.stdout.strip())
        elif isinstance(item, dict) and "file" in item:
            script = "/tests/scripts/" + item["file"]
            done = run(["/usr/bin/python3", "-I", "-S", script, *params], env=SHELL_ENV)
            if done is None or done.returncode != 0:
                return False
            if done.stdout.strip():
                params.append(done.stdout.strip())
    return True

finish(passed())
