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
CASES = json.loads("[[\"Xi_delta\\nomicron_theta_Zeta_Epsilon\\nlambda iota eta\\nAlpha_Alpha\\n\", \"xi-delta\\nomicron-theta-zeta-epsilon\\nlambda-iota-eta\\nalpha-alpha\\n\"], [\"etaNugamma\\nalpha Zeta Epsilon lambda\\nEpsilon Zeta beta Eta\\nGammazetanuxi\\nkappa_lambda\\nLambda iota beta Zeta\\nlambdabetaBetaZeta\\ndeltaAlphaXi\\n\", \"eta-nugamma\\nalpha-zeta-epsilon-lambda\\nepsilon-zeta-beta-eta\\ngammazetanuxi\\nkappa-lambda\\nlambda-iota-beta-zeta\\nlambdabeta-beta-zeta\\ndelta-alpha-xi\\n\"], [\"Alphamuzeta\\nDelta theta gamma omicron\\nbeta_iota\\nThetagamma\\nxi Nu Alpha\\nOmicronkappa\\nmu Xi\\nNu_Nu_Iota\\ngammaThetaAlphamu\\ngamma Mu epsilon\\n\", \"alphamuzeta\\ndelta-theta-gamma-omicron\\nbeta-iota\\nthetagamma\\nxi-nu-alpha\\nomicronkappa\\nmu-xi\\nnu-nu-iota\\ngamma-theta-alphamu\\ngamma-mu-epsilon\\n\"], [\"Epsilon Iota gamma\\nNu_kappa_Kappa_eta\\nAlpha gamma Alpha\\nGamma alpha\\nGamma_Eta_Xi_Mu\\nzeta_kappa\\nKappaBetadelta\\ndelta_zeta_Alpha\\n\", \"epsilon-iota-gamma\\nnu-kappa-kappa-eta\\nalpha-gamma-alpha\\ngamma-alpha\\ngamma-eta-xi-mu\\nzeta-kappa\\nkappa-betadelta\\ndelta-zeta-alpha\\n\"], [\"Omicron Beta eta gamma\\nKappa xi eta\\nTheta Xi\\nXi_Theta_delta\\nkappa_Gamma_Kappa_alpha\\nXi zeta lambda\\nepsilon_kappa_kappa_alpha\\nIota_Eta_kappa_eta\\n\", \"omicron-beta-eta-gamma\\nkappa-xi-eta\\ntheta-xi\\nxi-theta-delta\\nkappa-gamma-kappa-alpha\\nxi-zeta-lambda\\nepsilon-kappa-kappa-alpha\\niota-eta-kappa-eta\\n\"]]")

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
