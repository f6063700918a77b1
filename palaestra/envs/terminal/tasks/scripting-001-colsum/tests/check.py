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
CASES = json.loads("[[\"-421|-223|464|-72|188|251\\n-230|176|398|-146|-60|-34\\n205|-201|-417|341|433|-436\\n379|71|356|294|52|-141\\n150|65|-413|391|226|290\\n224|462|-198|-218|28|439\\n184|52|242|327|-144|-76\\n22|359|-158|-101|-14|385\\n\", \"816\\n\"], [\"-192|-198|-51|-324|18|284\\n159|400|65|-295|497|265\\n367|386|457|111|265|193\\n372|137|359|-59|379|59\\n-302|-185|163|266|-181|250\\n137|-349|179|178|123|491\\n313|-439|339|-80|411|-283\\n-335|-257|-194|-441|-146|298\\n\", \"-644\\n\"], [\"443|-216|-185|-153|-128|238\\n102|-271|-148|119|-412|-461\\n-365|-463|193|-440|4|-375\\n287|-13|-226|-369|54|-402\\n286|-316|313|325|-154|451\\n-444|-41|-50|-101|-11|64\\n-17|8|-181|44|-108|99\\n-272|-29|-311|-406|460|-164\\n-68|61|-397|-304|225|-291\\n77|-316|227|-307|76|-179\\n295|38|421|-96|293|273\\n\", \"-1688\\n\"], [\"-241|57|158|72|289|-237\\n79|-388|-102|362|-119|375\\n188|419|106|-319|-262|-151\\n191|-163|-17|-394|-379|-356\\n117|-415|-391|-464|387|-93\\n-479|-200|-427|-201|453|309\\n\", \"-944\\n\"]]")

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
