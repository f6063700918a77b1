"""An environment given as an object from a script, a notebook or the REPL, on worker processes.

Each case is a real Python process running the user's code (a script file, or ``python -c``
as the REPL and notebooks have no file), which collects on two real worker processes against
a scripted model server.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_collect_cli import rows, weather_script
from tests.distributed.envs import numbered_tasks
from tests.support.scripted_model import ScriptedModelServer

ROOT = Path(__file__).parents[2]

ENVIRONMENT = '''
import os
import sys

from palaestra import Environment, Session, collect, tool
from palaestra.errors import ConfigError
from palaestra.types import Verdict


class Scripted(Environment):
    name = "scripted"

    def __init__(self, bonus: float = 0.0):
        self.bonus = bonus

    @tool
    def get_weather(self, city: str) -> str:
        """Get the current weather in a city.

        Args:
            city: The name of the city.
        """
        return f"cold in {city}"

    def verify(self, session: Session, response: dict) -> Verdict:
        return Verdict(reward=0.5 + self.bonus, metrics={"pid": os.getpid()})


def run(env: object) -> None:
    model, tasks, output = sys.argv[1:4]
    try:
        summary = collect(
            env=env, model=model, input=tasks, output=output, concurrency=4, workers=2
        )
    except ConfigError as error:
        print(f"refused: {error}")
    else:
        print(f"done {summary.done} failed {summary.failed} in {os.getpid()}")
'''


def run_user_code(
    tmp_path: Path, argv: list[str], server: ScriptedModelServer
) -> subprocess.CompletedProcess[str]:
    tasks = numbered_tasks(tmp_path / "tasks.jsonl", 6)
    return subprocess.run(
        [sys.executable, *argv, server.url, str(tasks), str(tmp_path / "out.jsonl")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


@pytest.mark.parametrize("given", ["Scripted", "Scripted(bonus=0.25)"])
def test_an_environment_defined_in_a_script_runs_on_two_worker_processes(
    tmp_path: Path, given: str
) -> None:
    script = tmp_path / "my_run.py"
    script.write_text(f'{ENVIRONMENT}\nif __name__ == "__main__":\n    run({given})\n')
    with ScriptedModelServer(weather_script()) as server:
        done = run_user_code(tmp_path, [str(script)], server)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("done 6 failed 0 in "), done.stdout + done.stderr
    script_pid = int(done.stdout.split()[-1])
    written = rows(tmp_path / "out.jsonl")
    assert {r["reward"] for r in written} == {0.75 if "bonus" in given else 0.5}
    ran_in = {r["pid"] for r in written}
    assert len(ran_in) == 2 and script_pid not in ran_in  # on both worker processes
    assert "Traceback" not in done.stderr


def test_an_environment_defined_in_the_repl_is_refused_in_one_line_before_any_worker_starts(
    tmp_path: Path,
) -> None:
    code = f"{ENVIRONMENT}\nrun(Scripted)\n"  # python -c: a __main__ with no file, as a notebook
    with ScriptedModelServer(weather_script()) as server:
        done = run_user_code(tmp_path, ["-c", code], server)
        asked = server.bodies("/v1/responses")
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith("refused: Scripted is defined in a notebook or the REPL"), line
    assert "move it into a module and pass env='./my_env.py:Scripted'" in line
    assert done.stderr == ""  # no worker wrote a traceback: none started
    assert asked == [] and not (tmp_path / "out.jsonl").exists()


def test_a_script_that_starts_its_run_when_imported_is_one_line_naming_the_fix(
    tmp_path: Path,
) -> None:
    script = tmp_path / "my_run.py"
    script.write_text(f"{ENVIRONMENT}\nrun(Scripted)\n")  # no `if __name__ == "__main__":`
    with ScriptedModelServer(weather_script()) as server:
        done = run_user_code(tmp_path, [str(script)], server)
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()  # the workers importing the script printed nothing
    assert line.startswith(f"refused: {script.resolve()}: importing it in a worker process ")
    assert 'start the run under `if __name__ == "__main__":`' in line
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out.jsonl").exists()
