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
CASES = json.loads("[[\"-371;465;80;48\\n-223;458;-446;156\\n408;-58;-221;7\\n475;305;-54;-378\\n241;-292;-400;-393\\n-453;-255;41;158\\n428;35;-470;183\\n-107;386;-147;46\\n156;212;-254;-324\\n429;-204;-272;333\\n-172;304;-498;-496\\n379;-221;-337;-131\\n\", \"-2978\\n\"], [\"131;29;-138;375\\n217;-298;-285;-408\\n-348;-324;-48;-216\\n478;-467;-59;438\\n-144;386;-202;-264\\n-478;201;415;-422\\n-39;485;298;-442\\n-473;-10;455;-208\\n344;231;401;-176\\n400;383;203;398\\n308;-142;74;-171\\n311;-56;-245;132\\n-148;-435;148;11\\n-141;290;-324;47\\n\", \"693\\n\"], [\"168;-374;217;-340\\n-258;423;366;-340\\n184;63;239;-8\\n44;282;-322;-228\\n82;231;1;-66\\n338;138;-301;-94\\n387;325;-204;-463\\n221;185;-416;-449\\n-143;-464;-273;-455\\n-10;252;346;38\\n440;-52;361;-471\\n31;-151;318;-326\\n\", \"332\\n\"], [\"374;22;333;-321\\n-199;-459;249;-257\\n-1;387;-171;150\\n-433;328;-29;-300\\n-8;-475;243;-483\\n33;-81;-450;478\\n-442;-57;357;-338\\n-226;69;-75;152\\n260;165;-484;368\\n-37;245;-454;144\\n-402;161;-306;452\\n308;349;-248;-41\\n-113;447;-453;291\\n403;121;271;60\\n-198;-404;233;-495\\n\", \"-984\\n\"]]")

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
