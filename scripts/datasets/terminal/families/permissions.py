"""Permissions: set modes and ownership on generated files; create a user and a group.

The agent works as root here (ownership and accounts need it). Checked with ``os.stat``,
``pwd`` and ``grp``: one component per file or fact, all of which must hold."""

from __future__ import annotations

import random
from collections.abc import Callable

from scripts.datasets.terminal.spec import TerminalTask, constants

FAMILY = "permissions"
PACKAGES = ("python3", "procps", "less")
NAMES = [
    "atlas",
    "borealis",
    "cirrus",
    "draco",
    "eridani",
    "fornax",
    "gemini",
    "hydra",
    "lyra",
    "orion",
    "perseus",
    "vega",
]
MODES = (0o600, 0o640, 0o644, 0o700, 0o750, 0o755, 0o444, 0o400, 0o660)


def generate(rng: random.Random, difficulty: int) -> TerminalTask:
    """One permissions task. (a kind drawn at random)."""
    return rng.choice(KINDS)(rng, difficulty)


def _modes(rng: random.Random, difficulty: int) -> TerminalTask:
    names = rng.sample(NAMES, 2 + 2 * difficulty)
    wanted = {
        f"/app/share/{n}.{rng.choice(('sh', 'txt', 'key', 'conf'))}": rng.choice(MODES)
        for n in names
    }
    start = {path: rng.choice([m for m in MODES if m != mode]) for path, mode in wanted.items()}
    owner = rng.choice(NAMES) + "svc"
    owned = sorted(wanted)[: 1 + difficulty // 2]
    table = "\n".join(f"| `{path}` | `{mode:04o}` |" for path, mode in sorted(wanted.items()))
    instruction = f"""\
Set the permission bits of these files exactly as listed (no other bits set):

| file | mode |
|---|---|
{table}

Also make the user `{owner}` (it exists) the owner of {", ".join(f"`{p}`" for p in owned)}
(leave their group as it is).
"""
    setup = (
        f"useradd --no-create-home {owner} && "
        + " && ".join(f"chmod {mode:04o} {path}" for path, mode in sorted(start.items())),
    )
    solve = "\n".join(f"chmod {mode:04o} {path}" for path, mode in sorted(wanted.items()))
    solve += "\n" + "\n".join(f"chown {owner} {path}" for path in owned)
    check = (
        constants(WANTED={p: m for p, m in wanted.items()}, OWNER=owner, OWNED=owned)
        + """
import pwd, stat
parts = {}
for path, mode in sorted(WANTED.items()):
    try:
        info = os.stat(path, follow_symlinks=False)
        parts["mode " + path] = float(stat.S_IMODE(info.st_mode) == mode)
        if path in OWNED:
            owner = pwd.getpwuid(info.st_uid).pw_name
            parts["owner " + path] = float(owner == OWNER and info.st_gid == 0)
    except (OSError, KeyError):
        parts["mode " + path] = 0.0
parts["_strict"] = True
finish_parts(parts)
"""
    )
    return TerminalTask(
        family=FAMILY,
        name="modes",
        instruction=instruction,
        files={path: f"{path}\n" for path in wanted},
        setup=setup,
        check=check,
        solve=solve,
        packages=PACKAGES,
        agent_user="root",
        difficulty=difficulty,
    )


def _account(rng: random.Random, difficulty: int) -> TerminalTask:
    user, group = rng.sample(NAMES, 2)
    group += "-team"
    uid = rng.randint(2000, 2999)
    project = f"/srv/{rng.choice(NAMES)}-project"
    shell = rng.choice(("/bin/bash", "/bin/sh"))
    instruction = f"""\
Create a group `{group}`, and a user `{user}` with user id {uid}, login shell `{shell}`, a home
directory `/home/{user}` (created) and `{group}` as a supplementary group.

Then create the directory `{project}`, owned by `{user}` and the group `{group}`, with mode
`2770` (group members can work in it; new files inherit its group).
"""
    solve = f"""\
groupadd {group}
useradd --create-home --uid {uid} --shell {shell} --groups {group} {user}
mkdir -p {project}
chown {user}:{group} {project}
chmod 2770 {project}
"""
    check = (
        constants(USER=user, GROUP=group, UID=uid, SHELL=shell, PROJECT=project)
        + """
import grp, pwd, stat
def fact(test):
    try:
        return float(bool(test()))
    except (KeyError, OSError):
        return 0.0
finish_parts({
    "user": fact(lambda: pwd.getpwnam(USER).pw_uid == UID and pwd.getpwnam(USER).pw_shell == SHELL),
    "home": fact(lambda: os.lstat("/home/" + USER).st_uid == UID),
    "group": fact(lambda: USER in grp.getgrnam(GROUP).gr_mem),
    "directory": fact(lambda: stat.S_ISDIR(os.lstat(PROJECT).st_mode)
        and os.lstat(PROJECT).st_uid == UID
        and os.lstat(PROJECT).st_gid == grp.getgrnam(GROUP).gr_gid
        and stat.S_IMODE(os.lstat(PROJECT).st_mode) == 0o2770),
    "_strict": True,
})
"""
    )
    return TerminalTask(
        family=FAMILY,
        name="account",
        instruction=instruction,
        check=check,
        solve=solve,
        packages=PACKAGES,
        agent_user="root",
        difficulty=difficulty,
    )


KINDS: tuple[Callable[[random.Random, int], TerminalTask], ...] = (_modes, _account)
"""The task kinds, in the order ``generate`` cycles through them."""
