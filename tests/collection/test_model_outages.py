"""A model the environment uses (the simulated user's, a judge) that goes down stops the run as
the policy's model does: a few rollouts in a row that found it gone, then exit 3, resumable,
each of those rollouts a failure classed ``transient``.

Every model here is a real HTTP server on loopback; a model that is down is one stopped under
the run (its port closed).
"""

from __future__ import annotations

import threading
from pathlib import Path

import orjson

from palaestra.collection.collector import UNREACHABLE_STOP
from palaestra.types import JsonDict
from palaestra.wire.rows import ROLLOUT_INDEX, TASK_INDEX
from tests.cli.test_collect_cli import rows, run_cli
from tests.support.scripted_model import ScriptedModelServer, text_response

USER_ENV = str(Path(__file__).resolve().parents[1] / "support" / "user_envs.py") + ":ModelInterview"


def persona_tasks(path: Path, count: int) -> Path:
    lines = [
        orjson.dumps({"responses_create_params": {"input": f"Hello {n}"}, "persona": "Ana"})
        for n in range(count)
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def collect_interviews(tmp_path: Path, policy: str, user: str, *more: str) -> tuple[int, str]:
    """``palaestra collect`` of the interviews, one at a time; the user model, named in the
    model config, retries once at once (a short wait for a model that is down)."""
    entry = {"url": user, "max_retries": 1, "retry_delay": 0}
    (tmp_path / "palaestra_models.yaml").write_bytes(orjson.dumps({"user-sim": entry}))
    done = run_cli(
        "collect",
        "--env",
        USER_ENV,
        "--input",
        str(tmp_path / "tasks.jsonl"),
        "--output",
        str(tmp_path / "out.jsonl"),
        "--concurrency",
        "1",
        "--model",
        policy,
        "--user-model",
        "user-sim",
        *more,
        cwd=tmp_path,
        timeout=60,
    )
    return done.returncode, done.stdout + done.stderr


def test_a_user_model_that_goes_down_stops_the_run_and_a_resume_finishes_it(
    tmp_path: Path,
) -> None:
    persona_tasks(tmp_path / "tasks.jsonl", 12)
    user = ScriptedModelServer(lambda params: text_response("Thanks, DONE"))
    user.__enter__()
    stopped_once = threading.Event()

    def policy_script(params: JsonDict) -> JsonDict:
        if not stopped_once.is_set():  # the user model goes down once the run is under way
            stopped_once.set()
            user.__exit__(None, None, None)
        return text_response("How can I help?")

    try:
        with ScriptedModelServer(policy_script) as policy:
            code, shown = collect_interviews(tmp_path, policy.url, user.url)
            policy_port = policy.port
    finally:
        user.__exit__(None, None, None)
    assert code == 3, shown
    assert "stopped" in shown and "the user model is unreachable" in shown
    failures = rows(tmp_path / "out_failures.jsonl")
    assert len(failures) == UNREACHABLE_STOP  # not one per task: the run stopped
    assert {row["failure"]["kind"] for row in failures} == {"user_model_error"}
    assert {row["_ng_failure_class"] for row in failures} == {"transient"}
    assert all(row["failure"]["reason"].startswith("the user model") for row in failures)

    with (
        ScriptedModelServer(lambda params: text_response("Hi"), port=policy_port) as policy,
        ScriptedModelServer(lambda params: text_response("Thanks, DONE"), port=user.port) as back,
    ):
        code, shown = collect_interviews(tmp_path, policy.url, back.url, "--resume")
    assert code == 0, shown
    pairs = sorted((row[TASK_INDEX], row[ROLLOUT_INDEX]) for row in rows(tmp_path / "out.jsonl"))
    assert pairs == [(task, 0) for task in range(12)]
