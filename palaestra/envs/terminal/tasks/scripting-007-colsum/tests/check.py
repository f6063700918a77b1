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
CASES = json.loads("[[\"-96;-5;388\\n463;-156;359\\n-33;44;486\\n-20;-252;-366\\n-380;-27;421\\n-164;-482;-480\\n-178;237;-274\\n\", \"534\\n\"], [\"-333;90;-263\\n89;-315;156\\n121;169;287\\n155;401;290\\n-391;32;-296\\n-391;312;447\\n-126;103;8\\n105;314;216\\n414;264;-388\\n-79;152;270\\n180;-260;439\\n-452;321;323\\n\", \"1489\\n\"], [\"171;343;-493\\n227;352;24\\n-269;-468;-248\\n-73;-72;484\\n-353;-386;82\\n321;306;404\\n-103;274;370\\n\", \"623\\n\"], [\"200;192;47\\n-282;69;195\\n474;277;250\\n-430;-388;-408\\n282;-129;410\\n172;-474;259\\n-368;20;-77\\n\", \"676\\n\"], [\"-62;-176;21\\n185;295;311\\n343;441;429\\n61;-284;-473\\n-279;201;371\\n11;347;25\\n-414;-424;496\\n-103;-233;-220\\n-491;-37;-231\\n-267;123;358\\n446;-90;-417\\n-443;-50;-126\\n\", \"544\\n\"], [\"-233;-440;-242\\n-456;472;437\\n-229;107;-82\\n178;347;254\\n-423;180;-355\\n490;360;37\\n470;-257;-451\\n-335;449;-281\\n26;-369;-7\\n-130;445;327\\n\", \"-363\\n\"]]")

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
