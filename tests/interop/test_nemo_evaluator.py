"""NeMo Evaluator 0.3's own eval loop and ``gym://`` client against a palaestra env server."""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from palaestra.collection.tasks import load_dataset
from palaestra.environment.finding.registry import find_environment
from palaestra.environment.sessions import Session
from palaestra.envs.mcqa.environment import MultipleChoice
from palaestra.http.runner import BackgroundServer
from palaestra.serve.env_app import environment_app
from palaestra.types import FailureKind, JsonDict, Verdict
from tests.cli.test_run_cli import read_until
from tests.interop.peer_run import run_peer
from tests.interop.test_nemo_gym_head import peer_env
from tests.support.peers import peer_python
from tests.support.scripted_model import DEFAULT_MODEL, Script, ScriptedModelServer, text_response


def _answers(dataset: list[JsonDict], right: set[int]) -> dict[str, str]:
    """Per problem a text every grading mode reads as the right letter, or as a wrong one."""
    answers = {}
    for idx, task in enumerate(dataset):
        letter = (
            task["expected_answer"]
            if idx in right
            else "ABCD".replace(task["expected_answer"], "")[0]
        )
        answers[str(idx)] = f"\\boxed{{{letter}}}\nAnswer: {letter}\n<answer>{letter}</answer>"
    return answers


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_nemo_evaluator_scores_each_problem_against_its_own_task(tmp_path: Path, host: str) -> None:
    dataset = load_dataset(find_environment("mcqa").example_tasks)
    even = {i for i in range(len(dataset)) if i % 2 == 0}
    with BackgroundServer(environment_app(MultipleChoice(), dataset=dataset)) as server:
        # a host name: NeMo Evaluator's cookie jar keeps the session cookie, which each seed
        # overwrites, so every verify carries the cookie of the latest seed (an IP address:
        # aiohttp keeps no cookies, every verify comes without one)
        endpoint = server.url.replace("127.0.0.1", host)
        out = run_peer(
            "nemo-evaluator",
            "nemo_evaluator_eval.py",
            {"endpoint": endpoint, "answers": _answers(dataset, even), "solve_seconds": 0.5},
            cwd=tmp_path,
        )
    assert out["error"] is None
    rewards = {r["idx"]: r["reward"] for r in out["results"]}
    assert rewards == {i: (1.0 if i in even else 0.0) for i in range(len(dataset))}


class BrokenChoice(MultipleChoice):
    """Cannot grade: a failed verdict where the answer is A or C, an exception elsewhere."""

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        if session.task["expected_answer"] in "AC":
            return Verdict.failed(FailureKind.VERIFIER_ERROR, "cannot grade this answer")
        raise RuntimeError("broken verifier")


def test_nemo_evaluator_counts_a_verify_that_cannot_be_scored_as_an_error(tmp_path: Path) -> None:
    dataset = load_dataset(find_environment("mcqa").example_tasks)
    with BackgroundServer(environment_app(BrokenChoice(), dataset=dataset)) as server:
        spec = {"endpoint": server.url, "answers": _answers(dataset, set(range(len(dataset))))}
        stopped = run_peer("nemo-evaluator", "nemo_evaluator_eval.py", spec, cwd=tmp_path)
        skipped = run_peer(
            "nemo-evaluator",
            "nemo_evaluator_eval.py",
            {**spec, "skip_failed": True},
            cwd=tmp_path,
        )
    # by default NeMo Evaluator stops at an error; with --skip-failed it records each as one
    assert stopped["results"] is None and "500" in stopped["error"]
    details = [r["scoring_details"] for r in skipped["results"]]
    assert len(details) == len(dataset)
    assert all(d["method"] == "system_error" and "500" in d["error"] for d in details)


def _model_answering(dataset: list[JsonDict], right: set[int]) -> Script:
    """A scripted model that answers each problem of ``dataset`` (found by its question) with
    ``_answers``' text: right for the problems in ``right``, wrong for the others."""
    answers = _answers(dataset, right)

    def script(params: JsonDict) -> JsonDict:
        items = params["input"] if isinstance(params["input"], list) else []
        asked = str([i.get("content") for i in items if i.get("role") == "user"])
        idx = next(i for i, task in enumerate(dataset) if task["question"] in asked)
        return text_response(answers[str(idx)])

    return script


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_nel_eval_run_on_a_gym_url_scores_a_palaestra_server(tmp_path: Path, host: str) -> None:
    """The ``nel`` command itself: ``nel eval run --bench gym://HOST:PORT`` with a model."""
    dataset = load_dataset(find_environment("mcqa").example_tasks)
    even = {i for i in range(len(dataset)) if i % 2 == 0}
    with (
        BackgroundServer(environment_app(MultipleChoice(), dataset=dataset)) as server,
        ScriptedModelServer(_model_answering(dataset, even)) as model,
    ):
        port = server.url.rsplit(":", 1)[1]
        done = subprocess.run(
            [
                str(peer_python("nemo-evaluator").parent / "nel"),
                "eval",
                "run",
                "--bench",
                f"gym://{host}:{port}",
                "--model-url",
                model.url,
                "--model-id",
                DEFAULT_MODEL,
                "--output-dir",
                "out",
            ],
            cwd=tmp_path,
            env={**peer_env(), "XDG_DATA_HOME": str(tmp_path / "data")},  # NEL's run records
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    [results] = (tmp_path / "out").glob("*/results.jsonl")
    rows = [orjson.loads(line) for line in results.read_bytes().splitlines()]
    rewards = {int(r["problem_idx"]): r["reward"] for r in rows}
    assert rewards == {i: (1.0 if i in even else 0.0) for i in range(len(dataset))}


def test_nemo_evaluator_reads_a_palaestra_tasks_export_as_its_dataset(tmp_path: Path) -> None:
    """``palaestra tasks`` writes what NeMo Evaluator's ``GymDataset`` reads: seeded from the
    file, each problem verified by a server given the same file."""
    exported = tmp_path / "mcqa.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "palaestra", "tasks", "mcqa", "--output", str(exported)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    dataset = load_dataset(exported)
    odd = {i for i in range(len(dataset)) if i % 2}
    with BackgroundServer(environment_app(MultipleChoice(), dataset=dataset)) as server:
        spec = {"endpoint": server.url, "answers": _answers(dataset, odd), "data": str(exported)}
        out = run_peer("nemo-evaluator", "nemo_evaluator_eval.py", spec, cwd=tmp_path)
    assert out["error"] is None
    rewards = {r["idx"]: r["reward"] for r in out["results"]}
    assert rewards == {i: (1.0 if i in odd else 0.0) for i in range(len(dataset))}


@pytest.fixture
def mcqa_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[JsonDict]:
    """``palaestra run`` of an mcqa env server and its agent on a scripted model that answers
    the even problems right; the stack's ``stack.json`` and server listing."""
    monkeypatch.setenv("PALAESTRA_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("PALAESTRA_SERVER_TOKEN", raising=False)
    dataset = load_dataset(find_environment("mcqa").example_tasks)
    even = {i for i in range(len(dataset)) if i % 2 == 0}
    with ScriptedModelServer(_model_answering(dataset, even)) as model:
        (tmp_path / "stack.yaml").write_text(f"""
servers:
  mcqa_env: {{kind: env, env: mcqa}}
  mcqa_agent: {{kind: agent, env: mcqa_env, model: "{model.url}"}}
""")
        process = subprocess.Popen(
            [sys.executable, "-m", "palaestra", "run", "stack.yaml"],
            cwd=tmp_path,
            text=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            read_until(process, "ready in")
            stack = orjson.loads((tmp_path / ".palaestra" / "stack.json").read_bytes())
            with urllib.request.urlopen(f"{stack['head']}/servers", timeout=10) as answer:
                servers = {s["name"]: s["url"] for s in orjson.loads(answer.read())["servers"]}
            yield {"head": stack["head"], "servers": servers, "rewards": even}
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.mark.parametrize(
    ("agent", "trust_reward"),
    [("mcqa_agent", True), ("mcqa_agent", False), (None, False)],
    ids=["named-agent-its-reward", "named-agent-nel-verifies", "found-by-type-nel-verifies"],
)
def test_nemo_evaluator_gym_solver_finds_the_agent_of_a_palaestra_stack_through_its_head(
    tmp_path: Path, mcqa_stack: JsonDict, agent: str | None, trust_reward: bool
) -> None:
    servers = mcqa_stack["servers"]
    spec = {
        "head": mcqa_stack["head"],
        "env": servers["mcqa_env"].replace("127.0.0.1", "localhost"),
        "agent": agent,
        "trust_reward": trust_reward,
    }
    out = run_peer("nemo-evaluator", "nemo_evaluator_gym_solver.py", spec, cwd=tmp_path)
    assert out["error"] is None
    assert out["agent_url"] == servers["mcqa_agent"]  # found in /server_instances
    rewards = {r["idx"]: r["reward"] for r in out["results"]}
    # the agent's own verdicts (trust_reward) or NEL's verify of the agent's answers: the same
    assert rewards == {i: (1.0 if i in mcqa_stack["rewards"] else 0.0) for i in range(5)}
