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


OLD = json.loads("[\"/app/logs/billing-6.log\", \"/app/logs/indexer-5.log\", \"/app/logs/worker-2.log\"]")
DIGESTS = json.loads("{\"/app/logs/billing-0.log\": \"feb1e1e28bd93e7e9fd7ef3b2169f17c7b25a3fcbad0b81697004566a8bb3b55\", \"/app/logs/billing-1.log\": \"60eb30412b4660d26d0c9b8872ffbb17bb028ef19d085033e1d27b7e3ea82574\", \"/app/logs/worker-2.log\": \"d21b053cdb780143100f6295c418424e99fad6ab4984895e729f4a6a448eb936\", \"/app/logs/api-3.log\": \"45d0080b0c7f38302eb68d94bb9b0fd136d8f6a135e8c7163e868b73c440921f\", \"/app/logs/mailer-4.log\": \"0ec29cc95a5c4f7f1bed5629c94dad2e63450d9474f7fc113586d22061fff44d\", \"/app/logs/indexer-5.log\": \"bb36c754b68f548bf0b854483c3eaadeb655bbaa7e32685d16ee5f99e7e6567a\", \"/app/logs/billing-6.log\": \"d3c655b57a59d62c1544e908eebbeb2b992f70cc22dc2e4f5701a040e2ffaea1\"}")

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
