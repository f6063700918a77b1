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
import pytest

import palaestra
from palaestra.collection.collector import UNREACHABLE_STOP
from palaestra.envs.equivalence_judge.environment import EquivalenceJudge
from palaestra.errors import ServiceUnreachable
from palaestra.models.openai.endpoint import TIMEOUTS_TO_STOP
from palaestra.types import JsonDict
from palaestra.wire.rows import ROLLOUT_INDEX, TASK_INDEX
from tests.cli.test_collect_cli import rows, run_cli
from tests.collection.test_model_timeouts import NEVER
from tests.support.network import free_port
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


def judge_at(url: str, seconds: float = 300.0) -> type[EquivalenceJudge]:
    """``equivalence_judge`` with its judge named by ``url`` and verifies of ``seconds``."""
    attributes = {"name": "judged", "judge_model": url, "verify_timeout": seconds}
    return type("Judged", (EquivalenceJudge,), attributes)


def question_tasks(path: Path, count: int) -> Path:
    line = {"responses_create_params": {"input": "2+2?"}, "question": "2+2?"}
    rows = [orjson.dumps({**line, "expected_answer": str(4 + n)}) for n in range(count)]
    path.write_bytes(b"\n".join(rows) + b"\n")
    return path


def test_a_judge_that_is_down_refuses_the_run_before_any_rollout(tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}/v1"
    tasks = question_tasks(tmp_path / "tasks.jsonl", 4)
    output = tmp_path / "out.jsonl"
    with ScriptedModelServer(lambda params: text_response("4")) as policy:
        with pytest.raises(ServiceUnreachable) as refused:
            palaestra.collect(env=judge_at(down), model=policy.url, input=tasks, output=output)
        asked = policy.bodies("/v1/responses") + policy.bodies("/v1/chat/completions")
    message = str(refused.value)
    assert message.startswith("the judge is unreachable: ") and down in message
    assert "\n" not in message
    assert asked == []  # no rollout ran
    assert not output.exists() or rows(output) == []


def test_a_judge_that_hangs_stops_the_run_and_a_resume_finishes_it(tmp_path: Path) -> None:
    tasks = question_tasks(tmp_path / "tasks.jsonl", 12)
    output = tmp_path / "out.jsonl"
    policy = ScriptedModelServer(lambda params: text_response("4"))
    with policy, ScriptedModelServer(lambda params: NEVER) as hung:  # its /models answers
        judged = judge_at(hung.url, seconds=4.0)  # its calls fit in the verify's 4 s
        stopped = palaestra.collect(
            env=judged, model=policy.url, input=tasks, output=output, concurrency=1
        )
        judge_port = hung.port
    assert stopped.stopped_reason is not None
    assert stopped.stopped_reason.startswith("the judge: model timed out 3 times in a row")
    assert stopped.done == 0 and stopped.failures == {"verifier_error": TIMEOUTS_TO_STOP}
    failures = rows(tmp_path / "out_failures.jsonl")
    assert failures[-1]["_ng_failure_class"] == "transient"  # the one that found it hung

    with (
        ScriptedModelServer(lambda params: text_response("4"), port=policy.port) as back,
        ScriptedModelServer(lambda p: text_response("VERDICT: EQUIVALENT"), port=judge_port),
    ):
        resumed = palaestra.collect(
            env=judged, model=back.url, input=tasks, output=output, resume=True
        )
    assert resumed.stopped_reason is None and not resumed.failures
    assert sorted(row[TASK_INDEX] for row in rows(output)) == list(range(12))
