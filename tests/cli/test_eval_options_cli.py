"""``palaestra eval``'s scale and environment flags as a user runs them: real processes, the
scripted model over real HTTP.

``--workers``, ``--executor``, ``--ray-address`` and ``--metrics-port`` are ``collect``'s, given
to every environment's run; ``--env-arg NAME:KEY=VALUE`` goes to the environment given as
``--env NAME`` (a bare ``KEY=VALUE`` only with one ``--env``).
"""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_collect_cli import rows, run_cli, weather_script
from tests.run.test_eval import TwoEnvironments
from tests.run.test_eval_options import scaled_env
from tests.support.network import free_port
from tests.support.scripted_model import ScriptedModelServer


def figures_shown(stdout: str) -> list[str]:
    """The table's lines, without the elapsed time (the one line that differs run to run)."""
    lines = [" ".join(line.split()) for line in stdout.splitlines()]
    return [line for line in lines if line and not line.endswith(" s")]


def test_eval_on_two_workers_writes_the_rows_and_figures_of_eval_in_one_process(
    tmp_path: Path,
) -> None:
    args = ["eval", "--env", "mcqa", "--env", "weather", "--repeats", "2", "--output-dir", "ev"]
    with ScriptedModelServer(TwoEnvironments()) as server:
        here = run_cli(*args, "--model", server.url, cwd=_made(tmp_path / "here"))
        there = run_cli(
            *args, "--model", server.url, "--workers", "2", cwd=_made(tmp_path / "there")
        )
    assert here.returncode == 0, here.stderr
    assert there.returncode == 0, there.stderr
    assert "Traceback" not in there.stderr
    assert figures_shown(there.stdout) == figures_shown(here.stdout)
    assert "mcqa mean reward 0.750 [0.301, 0.954] n=4 tasks/8 rollouts, 2 failed (excluded)" in (
        figures_shown(there.stdout)
    )
    for name in ("mcqa", "weather"):
        a, b = (
            rows(tmp_path / "here" / "ev" / f"{name}.jsonl"),
            rows(tmp_path / "there" / "ev" / f"{name}.jsonl"),
        )
        assert len(b) == len(a) == {"mcqa": 8, "weather": 10}[name]
        assert sorted(row["reward"] for row in b) == sorted(row["reward"] for row in a)
    run = (tmp_path / "there" / "ev" / "weather_run.json").read_text()
    assert '"workers": 2' in run


def test_an_env_arg_reaches_the_environment_it_names_and_a_resume_with_another_is_refused(
    tmp_path: Path,
) -> None:
    scaled_env(tmp_path / "env", tasks=2)
    args = ["eval", "--env", "./env/scaled.py", "--env", "weather", "--output-dir", "ev"]
    port = free_port()
    with ScriptedModelServer(weather_script()) as server:
        args += ["--model", server.url]
        done = run_cli(
            *args, "--env-arg", "./env/scaled.py:reward=0.5", "--metrics-port", str(port),
            cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"metrics: http://127.0.0.1:{port}/metrics" in done.stderr
        assert [row["reward"] for row in rows(tmp_path / "ev" / "scaled.jsonl")] == [0.5, 0.5]
        assert {row["reward"] for row in rows(tmp_path / "ev" / "weather.jsonl")} == {1.0}
        other = run_cli(*args, "--env-arg", "./env/scaled.py:reward=0.25", "--resume", cwd=tmp_path)
        same = run_cli(*args, "--env-arg", "./env/scaled.py:reward=0.5", "--resume", cwd=tmp_path)
    assert other.returncode == 1
    [line] = other.stderr.strip().splitlines()
    assert line.startswith(
        "error: cannot resume: this is not the run recorded in ev/scaled_run.json (env.args."
        "reward: the run has 0.5, this command has 0.25)"
    )
    assert "eval's --output-dir" in line  # before: "another --output", a flag eval lacks
    assert same.returncode == 0, same.stderr


def test_a_bare_env_arg_is_the_one_environment_s(tmp_path: Path) -> None:
    scaled_env(tmp_path / "env", tasks=2)
    with ScriptedModelServer(weather_script()) as server:
        done = run_cli(
            "eval", "--env", "./env/scaled.py", "--env-arg", "reward=0.25", "--model", server.url,
            "--output-dir", "ev", cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [row["reward"] for row in rows(tmp_path / "ev" / "scaled.jsonl")] == [0.25, 0.25]


def test_an_env_arg_of_no_env_or_bare_beside_several_is_one_line_and_nothing_runs(
    tmp_path: Path,
) -> None:
    args = ["eval", "--env", "mcqa", "--env", "weather", "--model", "http://127.0.0.1:9/v1"]
    unknown = run_cli(*args, "--env-arg", "math:difficulty=3", cwd=tmp_path)
    bare = run_cli(*args, "--env-arg", "difficulty=3", cwd=tmp_path)
    for done in (unknown, bare):
        assert done.returncode == 1
        assert "Traceback" not in done.stderr
    assert unknown.stderr.strip().splitlines() == [
        "error: --env-arg 'math:difficulty=3': 'math' is not one of the --env values "
        "(mcqa, weather); give NAME exactly as --env gives it"
    ]
    assert bare.stderr.strip().splitlines() == [
        "error: --env-arg 'difficulty=3': 2 --env are given (mcqa, weather); say whose "
        "argument it is, e.g. --env-arg mcqa:difficulty=3"
    ]
    assert list(tmp_path.iterdir()) == []


def test_an_env_arg_an_environment_does_not_take_is_refused_before_any_runs(
    tmp_path: Path,
) -> None:
    done = run_cli(
        "eval", "--env", "mcqa", "--env", "weather", "--env-arg", "weather:units=F",
        "--model", "http://127.0.0.1:9/v1", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "error: environment 'weather' takes no argument 'units' (it takes: none)"
    ]
    assert list(tmp_path.iterdir()) == []


def test_a_ray_cluster_that_refuses_connections_is_one_line_as_for_collect(
    tmp_path: Path,
) -> None:
    done = run_cli(
        "eval", "--env", "weather", "--model", "http://127.0.0.1:9/v1", "--executor", "ray",
        "--ray-address", "127.0.0.1:9", "--output-dir", "ev", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: cannot join the Ray cluster at 127.0.0.1:9: ")


def test_scale_flags_are_checked_as_collect_checks_them(tmp_path: Path) -> None:
    for flag, value in (("--workers", "0"), ("--executor", "k8s"), ("--metrics-port", "0")):
        shown = {}
        for command in ("collect", "eval"):
            done = run_cli(command, "--env", "weather", flag, value, cwd=tmp_path)
            assert done.returncode == 2
            shown[command] = done.stderr.strip().splitlines()[-1]
        assert shown["eval"] == shown["collect"] and flag in shown["eval"]


def _made(directory: Path) -> Path:
    directory.mkdir()
    return directory
