"""verifiers 0.4's NeMo Gym taskset (what prime-rl trains with) driving a served palaestra env.

The taskset seeds each task on ``/seed_session``, lists the row's tools and calls them through
its MCP toolset (``POST /<tool>`` with the session cookie), and scores with ``/verify``; the
counter environment's reward must come back as verifiers' reward, per session.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.environment.sessions import Session
from palaestra.envs.counter.environment import Counter
from palaestra.http.guard import Guard
from palaestra.http.runner import BackgroundServer
from palaestra.serve.env_app import environment_app
from palaestra.types import FailureKind, JsonDict, Verdict
from palaestra.wire.protocol import FAILURES_HEADER
from tests.interop.peer_run import run_peer

TOOLS = Counter().tools()


class GradedCounter(Counter):
    def verify(self, session: Session, response: JsonDict) -> Verdict:
        if session.task.get("ungradable"):
            return Verdict.failed(FailureKind.VERIFIER_ERROR, "cannot grade this answer")
        return super().verify(session, response)


def row(initial: int, target: int, **fields: object) -> JsonDict:
    params = {"input": [{"role": "user", "content": f"Reach {target}."}], "tools": TOOLS}
    return {
        "responses_create_params": params,
        "initial_value": initial,
        "target_value": target,
        **fields,
    }


@pytest.mark.parametrize("token", [None, "vf-secret"])
def test_the_verifiers_nemo_gym_taskset_seeds_calls_tools_and_gets_the_reward(
    tmp_path: Path, token: str | None
) -> None:
    rows = [row(1, 4), row(10, 4), row(0, 3, ungradable=True)]
    with BackgroundServer(Guard(environment_app(GradedCounter()), token=token)) as env:
        spec = {
            "workdir": str(tmp_path),
            "url": env.url,
            "token": token,
            "rows": rows,
            "calls": [["increment", {"amount": 3}], ["increment", {"amount": "x"}]],
            "answer": "Done.",
        }
        reached, missed, ungradable = run_peer(
            "verifiers", "verifiers_nemo_gym.py", spec, cwd=tmp_path
        )
    assert reached["tools"] == ["increment", "read_counter"]
    # each task's session holds its own counter: 1+3 and 10+3
    assert reached["outputs"][0] == {"text": "4", "is_error": False}
    assert missed["outputs"][0] == {"text": "13", "is_error": False}
    # a wrong call is an error answer the toolset marks as such
    assert reached["outputs"][1]["is_error"] is True
    assert "amount" in reached["outputs"][1]["text"]
    assert (reached["reward"], missed["reward"]) == (1.0, 0.0)
    # the verifier's fields (and the echoed task fields) become verifiers' metrics
    assert reached["metrics"]["final_value"] == 4.0 and reached["metrics"]["distance"] == 0.0
    assert missed["info"]["final_value"] == 13
    # A failed verdict in a session is answered as NeMo Gym's agents need it: a placeholder
    # reward of 0.0 beside palaestra's failure and NeMo Gym's failure class. verifiers 0.4's
    # taskset reads only the reward, so the failure reaches its user in trace.info only (a
    # limit of the peer, stated in the README): this pins down that it does get there.
    assert ungradable["error"] is None and ungradable["reward"] == 0.0
    assert ungradable["info"]["failure"]["kind"] == "verifier_error"
    assert ungradable["info"]["_ng_failure_class"] == "legitimate"


def test_with_the_failures_header_verifiers_records_an_unscorable_rollout_as_an_error(
    tmp_path: Path,
) -> None:
    """``x-palaestra-failures: error`` (set in the taskset's headers) turns the placeholder-reward
    answer into an error status, which verifiers records as the trace's error: no reward."""
    rows = [row(1, 4), row(0, 3, ungradable=True)]
    with BackgroundServer(environment_app(GradedCounter())) as env:
        spec = {
            "workdir": str(tmp_path),
            "url": env.url,
            "token": None,
            "headers": {FAILURES_HEADER: "error"},
            "rows": rows,
            "calls": [["increment", {"amount": 3}]],
            "answer": "Done.",
        }
        reached, ungradable = run_peer("verifiers", "verifiers_nemo_gym.py", spec, cwd=tmp_path)
    assert reached["reward"] == 1.0 and reached["error"] is None
    assert ungradable["reward"] is None
    assert ungradable["error"] and "500" in ungradable["error"]
