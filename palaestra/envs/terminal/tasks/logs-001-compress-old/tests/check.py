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


OLD = json.loads("[\"/app/logs/indexer-3.log\", \"/app/logs/worker-1.log\", \"/app/logs/worker-4.log\"]")
DIGESTS = json.loads("{\"/app/logs/api-0.log\": \"435593e854e7a8101599b91aede594fc9456f7953329161f7bf507718701cfdd\", \"/app/logs/worker-1.log\": \"82af34f0b61212aabd8c2ea1f8dd2e77151fab452f6304644fc98dcb32173a2b\", \"/app/logs/gateway-2.log\": \"bc34b371dbf0b9df65493159a24ca6ce8ffdd8056ed22d81181640ae8cac888c\", \"/app/logs/indexer-3.log\": \"f59ef8e1f3085921f3dc003ee8f4c90edebccf67e4c7be08dedaa66cb7c58f50\", \"/app/logs/worker-4.log\": \"c8fa8a8b372923793d6508db9e77fba92b089a682399b0189dd3c59511ec06f5\"}")

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
