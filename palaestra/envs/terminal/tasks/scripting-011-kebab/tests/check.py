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


SCRIPT = json.loads("\"/app/bin/kebab\"")
CASES = json.loads("[[\"gammazeta\\nmuomicronEta\\niotabetaiota\\nZetaOmicronnu\\nEpsilonnu\\nXi_lambda\\nalpha_alpha\\nnu theta Nu\\n\", \"gammazeta\\nmuomicron-eta\\niotabetaiota\\nzeta-omicronnu\\nepsilonnu\\nxi-lambda\\nalpha-alpha\\nnu-theta-nu\\n\"], [\"gammaAlpha\\nLambda Theta Xi\\nEpsilon lambda\\nDelta_Kappa_kappa\\netaetatheta\\n\", \"gamma-alpha\\nlambda-theta-xi\\nepsilon-lambda\\ndelta-kappa-kappa\\netaetatheta\\n\"], [\"gamma lambda Iota\\nxi_delta\\nzeta_Xi\\nthetazetamu\\nbetamu\\nlambdaIotaTheta\\nEtaOmicron\\nIota_beta\\nIota_Gamma_Kappa\\n\", \"gamma-lambda-iota\\nxi-delta\\nzeta-xi\\nthetazetamu\\nbetamu\\nlambda-iota-theta\\neta-omicron\\niota-beta\\niota-gamma-kappa\\n\"], [\"theta omicron Mu\\ndeltaEta\\nlambda Nu\\nlambdalambdaGamma\\nmu_Theta\\nomicron_gamma_lambda\\ndeltagammaiota\\n\", \"theta-omicron-mu\\ndelta-eta\\nlambda-nu\\nlambdalambda-gamma\\nmu-theta\\nomicron-gamma-lambda\\ndeltagammaiota\\n\"]]")

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
