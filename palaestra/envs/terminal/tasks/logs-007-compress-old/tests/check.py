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


OLD = json.loads("[\"/app/logs/billing-6.log\", \"/app/logs/billing-7.log\", \"/app/logs/indexer-1.log\", \"/app/logs/indexer-2.log\", \"/app/logs/indexer-8.log\"]")
DIGESTS = json.loads("{\"/app/logs/api-0.log\": \"b8689688e54d1959e4d2f0360ecfeb554a301a195db74b461b8d4dd75284095c\", \"/app/logs/indexer-1.log\": \"75c9504ed55e2821f3eb75d3015bf449566e84f1221d62b7f92f7095fcc66c74\", \"/app/logs/indexer-2.log\": \"f290119c611bc974dcda2414d3635ba8f37d1b1e2ff582ad317ca00dd93e30c8\", \"/app/logs/indexer-3.log\": \"cb4ce60ec2b7813db89742f3164923cf00cc4a1bb823df4742f0ed8128b55ce0\", \"/app/logs/api-4.log\": \"cfb657dd25c43962ce9c2321c1308906f30c008cafb62d334f33269cb867375f\", \"/app/logs/billing-5.log\": \"a89afb46cac6d598fcffd06653543baf0ba3494008f3a9b30985ef7154a8d877\", \"/app/logs/billing-6.log\": \"d81f7ce71ea114e8fd0b697c9298d0cf3ab655c7a71074f32cca3e080f665dd3\", \"/app/logs/billing-7.log\": \"a596434e74092e59c5d868489043961a2e3f3ad1b3b1c649d43d90674f3c6d5a\", \"/app/logs/indexer-8.log\": \"4cb9aca5472945968040b74dd0725767395baa3ab3d64c5d5605b446b2ec24aa\"}")

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
