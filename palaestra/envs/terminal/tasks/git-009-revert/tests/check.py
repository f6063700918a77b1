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


REPO = json.loads("\"/app/repo\"")

def git(*args):
    done = run(["git", "-C", REPO, *args])
    return None if done is None or done.returncode != 0 else done.stdout.strip()
def subjects():
    return (git("log", "--format=%s") or "").split("\n")
CONFIG = json.loads("\"timeout = 30\\nretries = 3\\nlog_level = info\\n\"")
BAD = json.loads("\"Adjust runtime settings (#945)\"")
COUNT = json.loads("10")
FILES = json.loads("{\"src/metrics.py\": \"# metrics.py\\nDEPTH_0 = 252\\nLIMIT_1 = 523\\nRETRIES_2 = 282\\nLIMIT_3 = 557\\nDEPTH_4 = 676\\nWIDTH_5 = 737\\nRETRIES_6 = 965\\nOPTION_1 = 851\\nOPTION_7 = 94\\nOPTION_8 = 451\\n\", \"src/cache.py\": \"# cache.py\\nRETRIES_0 = 635\\nWIDTH_1 = 486\\nLIMIT_2 = 735\\nLIMIT_3 = 487\\nRETRIES_4 = 7\\nLIMIT_5 = 634\\nRETRIES_6 = 899\\nOPTION_4 = 769\\n\", \"src/storage.py\": \"# storage.py\\nDEPTH_0 = 243\\nDEPTH_1 = 275\\nLIMIT_2 = 661\\nLIMIT_3 = 968\\nWIDTH_4 = 257\\nLIMIT_5 = 28\\nRETRIES_6 = 764\\nOPTION_2 = 571\\nOPTION_3 = 180\\nOPTION_5 = 724\\nOPTION_6 = 731\\n\"}")

tree_ok = read(REPO + "/config.ini") == CONFIG
tree_ok = tree_ok and all(read(REPO + "/" + n) == t for n, t in FILES.items())
finish_parts({
    "config_restored": float(git("show", "HEAD:config.ini") == CONFIG.strip() and tree_ok),
    "history_kept": float(BAD in subjects() and len(subjects()) == COUNT + 1),
    "clean": float(git("status", "--porcelain") == ""),
    "_strict": True,
})
