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


OLD = json.loads("[\"/app/logs/api-1.log\", \"/app/logs/gateway-0.log\", \"/app/logs/gateway-4.log\"]")
DIGESTS = json.loads("{\"/app/logs/gateway-0.log\": \"1d3c2b5bf9b31a7ecd0109f4aa4a99f3ad10ec686c19473692df2f0eea555b2b\", \"/app/logs/api-1.log\": \"000ddf2c047e164093bfe72c0fcd34258940260a932e3ff0179ea8c6dc5a038c\", \"/app/logs/mailer-2.log\": \"f4a7b4c0ff673afc031d2dc63768eb1f2416803c76faf4c8cf4e33e5b503ea88\", \"/app/logs/worker-3.log\": \"8b4b9cebe20c5619c8e594a42bb515e37cc3d4dd07187e98905c08e2b87aa6b9\", \"/app/logs/gateway-4.log\": \"36bf607b52329cf51a7b99e76783b35bef0d57bd36a3ee379f1995d7ba5c0416\"}")

import gzip, hashlib
parts = {}
for name, digest in sorted(DIGESTS.items()):
    if name in OLD:
        try:
            with gzip.open(name + ".gz", "rb") as f:
                same = hashlib.sha256(f.read()).hexdigest() == digest
        except OSError:
            same = False
        parts["compressed " + name] = float(same and not os.path.exists(name))
    else:
        kept = read(name, "rb")
        same = kept is not None and hashlib.sha256(kept).hexdigest() == digest
        parts["kept " + name] = float(same
                                      and not os.path.exists(name + ".gz"))
# partial credit for the old files compressed, but none when a newer file was touched
compressed = [v for k, v in parts.items() if k.startswith("compressed ")]
kept = all(v == 1.0 for k, v in parts.items() if k.startswith("kept "))
parts["_reward"] = sum(compressed) / len(compressed) if kept else 0.0
finish_parts(parts)
