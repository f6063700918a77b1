"""Hidden checks of one terminal task (standard library only)."""

import json
import os
import subprocess
import sys

VERIFIER = "/logs/verifier"


def _write(name, text):
    os.makedirs(VERIFIER, exist_ok=True)
    partial = os.path.join(VERIFIER, name + ".partial")
    with open(partial, "w", encoding="utf-8") as file:
        file.write(text)
    os.replace(partial, os.path.join(VERIFIER, name))


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
    """The file's content, or None when it cannot be read."""
    try:
        with open(path, mode) as file:
            return file.read()
    except (OSError, UnicodeDecodeError):
        return None


def run(command, **kwargs):
    """``command`` (a list) run with a time budget; its CompletedProcess, or None."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=60, **kwargs)
    except (OSError, subprocess.SubprocessError):
        return None


WANTED = json.loads("{\"/app/share/orion.conf\": 256, \"/app/share/perseus.conf\": 384, \"/app/share/fornax.sh\": 493, \"/app/share/lyra.key\": 493}")
OWNER = json.loads("\"cirrussvc\"")
OWNED = json.loads("[\"/app/share/fornax.sh\"]")

import pwd, stat
parts = {}
for path, mode in sorted(WANTED.items()):
    try:
        info = os.stat(path)
        parts["mode " + path] = float(stat.S_IMODE(info.st_mode) == mode)
        if path in OWNED:
            owner = pwd.getpwuid(info.st_uid).pw_name
            parts["owner " + path] = float(owner == OWNER and info.st_gid == 0)
    except (OSError, KeyError):
        parts["mode " + path] = 0.0
parts["_strict"] = True
finish_parts(parts)
