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
CASES = json.loads("[[\"alpha eta\\nLambda_delta\\nlambda Nu Zeta kappa Mu\\nbeta_Eta_zeta\\nNu_lambda\\ndelta_beta_Mu_iota_Mu\\neta Lambda Theta\\nDeltathetazetagamma\\nNuZetaeta\\nNu_kappa_Beta_Theta_mu\\n\", \"alpha-eta\\nlambda-delta\\nlambda-nu-zeta-kappa-mu\\nbeta-eta-zeta\\nnu-lambda\\ndelta-beta-mu-iota-mu\\neta-lambda-theta\\ndeltathetazetagamma\\nnu-zetaeta\\nnu-kappa-beta-theta-mu\\n\"], [\"Theta_xi_gamma_Theta_Theta\\nMuepsilonMugammaEta\\nkappaLambdaepsilonDeltaDelta\\nepsilonetakappa\\neta_Xi_omicron\\nzeta epsilon iota\\nomicron Epsilon Xi Iota\\nomicron_Gamma_Xi\\nBeta_gamma_kappa_Kappa_delta\\nNu Lambda\\n\", \"theta-xi-gamma-theta-theta\\nmuepsilon-mugamma-eta\\nkappa-lambdaepsilon-delta-delta\\nepsilonetakappa\\neta-xi-omicron\\nzeta-epsilon-iota\\nomicron-epsilon-xi-iota\\nomicron-gamma-xi\\nbeta-gamma-kappa-kappa-delta\\nnu-lambda\\n\"], [\"alphaGamma\\nLambdaBeta\\nEta_Mu_Alpha_beta\\nZetaThetaepsilondelta\\n\", \"alpha-gamma\\nlambda-beta\\neta-mu-alpha-beta\\nzeta-thetaepsilondelta\\n\"], [\"Eta_mu_Xi_beta_Theta\\ndelta Beta lambda\\nlambda zeta Zeta\\ngamma Iota nu\\nKappa_Eta_Mu\\nGammathetaOmicron\\n\", \"eta-mu-xi-beta-theta\\ndelta-beta-lambda\\nlambda-zeta-zeta\\ngamma-iota-nu\\nkappa-eta-mu\\ngammatheta-omicron\\n\"], [\"beta_Nu_omicron\\nZetaxiEta\\nTheta_gamma_xi_eta\\nZeta_Theta\\neta Omicron omicron zeta gamma\\nEpsilon Kappa alpha\\nomicronkappa\\nIotaXi\\n\", \"beta-nu-omicron\\nzetaxi-eta\\ntheta-gamma-xi-eta\\nzeta-theta\\neta-omicron-omicron-zeta-gamma\\nepsilon-kappa-alpha\\nomicronkappa\\niota-xi\\n\"], [\"nuAlphaIotaBeta\\niotaLambdaMuiota\\nOmicron omicron lambda Omicron Kappa\\ndelta Nu Gamma Eta Eta\\ndelta_lambda_Mu_Theta_zeta\\n\", \"nu-alpha-iota-beta\\niota-lambda-muiota\\nomicron-omicron-lambda-omicron-kappa\\ndelta-nu-gamma-eta-eta\\ndelta-lambda-mu-theta-zeta\\n\"]]")

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
