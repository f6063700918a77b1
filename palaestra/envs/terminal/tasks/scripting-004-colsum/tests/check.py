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


SCRIPT = json.loads("\"/app/bin/colsum\"")
CASES = json.loads("[[\"65|-192|-357|313\\n321|-75|-249|190\\n252|-456|222|235\\n-52|-409|353|-253\\n81|-266|-276|450\\n\", \"-1398\\n\"], [\"-118|-40|-188|403\\n356|181|330|264\\n23|428|430|-109\\n329|231|-492|-500\\n97|-94|-328|321\\n-73|-343|-261|-18\\n-136|171|-266|303\\n-71|99|-126|-159\\n65|463|407|308\\n-117|431|-414|416\\n379|-251|189|-133\\n\", \"1276\\n\"], [\"194|467|-456|483\\n465|-203|-71|-203\\n484|-42|-37|47\\n465|381|-318|363\\n-281|168|-435|-101\\n401|-447|229|377\\n-183|391|115|-341\\n126|-284|134|15\\n-171|211|390|312\\n243|498|273|-457\\n-354|102|470|23\\n-256|167|-139|-280\\n-86|130|-237|10\\n299|-430|441|-432\\n\", \"1109\\n\"], [\"458|130|184|256\\n-273|-405|-387|16\\n-121|-285|5|444\\n422|-48|-47|-214\\n-213|287|-444|-147\\n-396|53|445|272\\n61|315|-308|-226\\n-153|82|-415|109\\n-272|185|335|-293\\n\", \"314\\n\"], [\"-260|336|299|-485\\n-282|-136|452|-185\\n158|-30|133|427\\n30|86|282|154\\n422|291|-405|-65\\n260|469|374|-256\\n-306|64|173|347\\n\", \"1080\\n\"]]")

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
