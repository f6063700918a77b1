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


SCRIPT = json.loads("\"/app/bin/dedupe\"")
CASES = json.loads("[[\"delta\\ndelta\\ndelta\\ndelta x\\nkappa\\neta x\\nmu\\nepsilon\\nomicron\\ndelta\\neta x\\neta x\\ndelta\\neta x\\nkappa\\nkappa\\nomicron\\nepsilon\\nomicron x\\nepsilon\\n\", \"delta\\ndelta x\\nkappa\\neta x\\nmu\\nepsilon\\nomicron\\nomicron x\\n\"], [\"zeta\\niota\\nxi\\nzeta\\nnu x\\nzeta x\\neta x\\nxi\\neta\\niota x\\niota\\n\", \"zeta\\niota\\nxi\\nnu x\\nzeta x\\neta x\\neta\\niota x\\n\"], [\"xi\\nxi\\nxi\\ndelta\\ntheta x\\nnu\\nxi x\\nkappa\\nxi\\nxi\\nkappa x\\nxi\\nkappa\\nxi\\ntheta\\nalpha\\n\", \"xi\\ndelta\\ntheta x\\nnu\\nxi x\\nkappa\\nkappa x\\ntheta\\nalpha\\n\"], [\"zeta\\nalpha x\\nxi\\nzeta\\nepsilon x\\niota x\\nalpha x\\nepsilon\\nalpha\\nxi\\nkappa x\\niota x\\nzeta\\nalpha x\\niota\\nzeta x\\nzeta\\nxi\\nxi\\nxi\\n\", \"zeta\\nalpha x\\nxi\\nepsilon x\\niota x\\nepsilon\\nalpha\\nkappa x\\niota\\nzeta x\\n\"], [\"xi\\nnu\\ndelta\\ntheta\\nxi\\nxi\\nnu x\\nnu\\nxi\\ndelta\\nmu x\\ntheta\\nnu\\n\", \"xi\\nnu\\ndelta\\ntheta\\nnu x\\nmu x\\n\"]]")

import tempfile
parts = {}
for idx, (text, expected) in enumerate(CASES):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    os.chmod(f.name, 0o644)
    done = run(["runuser", "-u", "agent", "--", SCRIPT, f.name])
    os.unlink(f.name)
    ok = done is not None and done.returncode == 0
    ok = ok and done.stdout.rstrip("\n") == expected.rstrip("\n")
    parts[f"case_{idx}"] = 1.0 if ok else 0.0
finish_parts(parts)
