"""``--executor ray``: rollouts in actors on a real local Ray cluster (two worker processes).

Ray costs about 1 GB and several seconds to start here, so one cluster serves the module and
the tests are few: the same rows as in process, a worker killed mid-run, a deadly task.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray  # the extra `ray`, installed by scripts/install.sh --dev: these tests never skip

from palaestra import collect
from palaestra.errors import ConfigError
from tests.cli.test_collect_cli import rows, weather_script
from tests.distributed.envs import numbered_tasks
from tests.distributed.test_process import ENV, collect_killing_a_worker, pairs, same_fields
from tests.support.scripted_model import ScriptedModelServer

ROOT = Path(__file__).parents[2]


def test_a_cluster_address_that_refuses_connections_is_one_clear_line_not_minutes_of_retries(
    tmp_path: Path,
) -> None:
    assert not ray.is_initialized()  # first in the module: before the cluster below starts
    numbered_tasks(tmp_path / "tasks.jsonl", 1)
    with pytest.raises(ConfigError, match=r"cannot join the Ray cluster at 127\.0\.0\.1:9: "):
        collect(
            env=ENV, model="http://127.0.0.1:9/v1", input=tmp_path / "tasks.jsonl",
            output=tmp_path / "out.jsonl", executor="ray", ray_address="127.0.0.1:9",
        )  # fmt: skip
    assert not ray.is_initialized()


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """Two CPUs, so two worker actors; the actors import the test environments by name."""
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},
        configure_logging=False,
    )
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.usefixtures("cluster")
def test_a_run_on_ray_writes_the_rows_a_run_in_process_writes(tmp_path: Path) -> None:
    tasks = numbered_tasks(tmp_path / "tasks.jsonl", 6)
    common = {"env": ENV, "input": tasks, "repeats": 2, "concurrency": 4}
    with ScriptedModelServer(weather_script()) as server:
        here = collect(**common, model=server.url, output=tmp_path / "here.jsonl")  # type: ignore[arg-type]
        there = collect(
            **common,  # type: ignore[arg-type]
            model=server.url,
            output=tmp_path / "there.jsonl",
            executor="ray",
        )
    assert (here.done, there.done, there.failed) == (12, 12, 0)
    assert same_fields(tmp_path / "there.jsonl") == same_fields(tmp_path / "here.jsonl")
    ran_in = {r["pid"] for r in rows(tmp_path / "there.jsonl")}
    assert len(ran_in) == 2 and os.getpid() not in ran_in  # two actors: the cluster's CPUs


@pytest.mark.usefixtures("cluster")
def test_a_ray_worker_killed_mid_run_leaves_exactly_one_row_per_task_and_rollout(
    tmp_path: Path,
) -> None:
    summary, _, killed = collect_killing_a_worker(
        tmp_path, 6, 0.5, repeats=2, concurrency=6, executor="ray"
    )
    assert killed
    assert killed not in {r["pid"] for r in rows(tmp_path / "out.jsonl")}
    assert pairs(tmp_path / "out.jsonl") == Counter((t, r) for t in range(6) for r in range(2))
    assert rows(tmp_path / "out_failures.jsonl") == []
    assert (summary.done, summary.stopped_reason) == (12, None)


@pytest.mark.usefixtures("cluster")
def test_a_task_that_kills_its_ray_worker_every_time_is_a_worker_crash(tmp_path: Path) -> None:
    tasks = numbered_tasks(tmp_path / "tasks.jsonl", 4, crash={1})
    with ScriptedModelServer(weather_script()) as server:
        summary = collect(
            env=ENV, env_args={"delay": 0.1}, model=server.url, input=tasks,
            output=tmp_path / "out.jsonl", concurrency=4, executor="ray",
        )  # fmt: skip
    assert sorted(pairs(tmp_path / "out.jsonl")) == [(0, 0), (2, 0), (3, 0)]
    (failure,) = rows(tmp_path / "out_failures.jsonl")
    assert (failure["_ng_task_index"], failure["failure"]["kind"]) == (1, "worker_crash")
    assert summary.stopped_reason is None
