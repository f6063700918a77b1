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


DESTINATION = json.loads("\"/app/recovered/iris-notes.txt\"")
DIGEST = json.loads("\"242bfe22b0f1fd72b2b22ffb67d8d98c924d1df9c670961e25671a9ac3c364bb\"")

import hashlib
got = read(DESTINATION, "rb")
finish(got is not None and hashlib.sha256(got).hexdigest() == DIGEST)
