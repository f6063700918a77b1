"""NeMo Evaluator 0.3's own eval loop and ``gym://`` client against a palaestra env server."""

from __future__ import annotations

from pathlib import Path

from palaestra.envs.mcqa.environment import MultipleChoice
from palaestra.registry import find_environment
from palaestra.serve.env_app import environment_app
from palaestra.serve.evaluator import load_dataset
from palaestra.serve.uvicorn_runner import BackgroundServer
from palaestra.sessions import Session
from palaestra.types import FailureKind, JsonDict, Verdict
from tests.interop.peer_run import run_peer


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


def test_nemo_evaluator_on_a_host_name_scores_each_problem_against_its_own_task(
    tmp_path: Path,
) -> None:
    dataset = load_dataset(find_environment("mcqa").example_tasks)
    even = {i for i in range(len(dataset)) if i % 2 == 0}
    with BackgroundServer(environment_app(MultipleChoice(), dataset=dataset)) as server:
        # a host name: NeMo Evaluator's cookie jar keeps the session cookie, which each seed
        # overwrites, so every verify carries the cookie of the latest seed
        endpoint = server.url.replace("127.0.0.1", "localhost")
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
