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


HOME = json.loads("\"/home/agent\"")
ANSWER = json.loads("\"/answer/answer.txt\"")
EVALUATION = json.loads("{\"check\": [null, {\"language\": \"python\", \"file\": \"check/integer-match.py\"}], \"example\": \"#!/bin/bash\\n\\n# Count the total number of lines across all log files and output the result\\nfind log_files -name '*.log' -exec wc -l {} \\\\; | awk '{ total += $1 } END {print total}'\"}")

def shell(command):
    return run(["bash", "--login", "-c", "cd " + HOME + " && " + command])

def passed():
    answer = read(ANSWER)
    answer = None if answer is None else answer.strip()
    if "check" not in EVALUATION:
        return answer is not None and answer == str(EVALUATION["match"]).strip()
    check = EVALUATION["check"]
    if isinstance(check, dict) and "file" in check:
        done = shell("bash /tests/scripts/" + check["file"])
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
            done = run(["python3", "/tests/scripts/" + item["file"], *params])
            if done is None or done.returncode != 0:
                return False
            if done.stdout.strip():
                params.append(done.stdout.strip())
    return True

finish(passed())
