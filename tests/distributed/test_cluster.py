"""``--executor ray``: rollouts in actors on a real local Ray cluster (two worker processes).

Ray costs about 1 GB and several seconds to start here, so one cluster serves the module and
the tests are few: the same rows as in process, a worker killed mid-run, a deadly task. Every
cluster here is started as palaestra starts one (``start_local``): on loopback only, so no
packet leaves for the machine's own network address.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray  # the extra `ray`, installed by scripts/install.sh --dev: these tests never skip

from palaestra import collect
from palaestra.distributed.cluster import connected
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


LOCAL_CLUSTER = """
import os
import sys

import ray
from ray._private import ray_constants, services

from palaestra.distributed.cluster import connected


@ray.remote
class Pid:
    def pid(self) -> int:
        return os.getpid()


def state() -> object:
    ray_environment = {key: value for key, value in os.environ.items() if key.startswith("RAY")}
    return ray_environment, dict(vars(ray_constants)), dict(vars(services))


before = state()
with connected(None):
    during = state()
    print(ray.get(Pid.remote().pid.remote()), flush=True)
    sys.stdin.read()  # until the test has looked
print(before == during == state(), flush=True)
"""
"""A collector's process with a local cluster: it prints a worker actor's pid, waits until
its stdin closes, stops the cluster, and prints whether its Ray modules and its environment's
Ray settings were the same before, during and after."""


DASHBOARD = b"dashboard/dashboard.py"
"""In the command of Ray's dashboard (its web UI and API server)."""


def descendants(pid: int) -> set[int]:
    """``pid`` and every process under it."""
    children: dict[int, set[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # gone meanwhile
            continue
        children.setdefault(int(fields[1]), set()).add(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        found.add(current := todo.pop())
        todo.extend(children.get(current, ()))
    return found


def _address(hex_address: str) -> str:
    """An address of /proc/net/tcp* (its 32-bit words in host order) as text."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, words)


def listening(pids: set[int]) -> dict[tuple[str, int], int]:
    """The TCP sockets listening and the UDP sockets bound that ``pids`` hold: (address,
    port) to the process holding it."""
    owner: dict[str, int] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        owner[target[8:-1]] = pid
    found: dict[tuple[str, int], int] = {}
    for table in ("tcp", "tcp6", "udp", "udp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if inode in owner and (state == "0A" or table.startswith("udp")):
                address, _, port = local.partition(":")
                found[_address(address), int(port, 16)] = owner[inode]
    return found


def loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def test_a_local_cluster_is_on_loopback_only_with_no_dashboard_and_leaves_ray_as_it_was() -> None:
    """Also: nothing of Ray's is changed in the collector's process, not its modules, not its
    environment's Ray settings (Ray's own ray.init of a new cluster sets RAY_AUTH_MODE there;
    any ray.init sets PYTHONBREAKPOINT, which is Ray's to do)."""
    driver = subprocess.Popen(
        [sys.executable, "-c", LOCAL_CLUSTER], cwd=ROOT, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"},
    )  # fmt: skip
    assert driver.stdin is not None and driver.stdout is not None
    try:
        actor = int(driver.stdout.readline())
        pids = descendants(driver.pid)
        sockets = listening(pids)
        names = {pid: Path(f"/proc/{pid}/cmdline").read_bytes() for pid in pids}
    finally:
        driver.stdin.close()
        left_as_it_was = driver.stdout.read().strip()
        driver.wait(120)
    assert actor in pids  # the workers are among the processes looked at
    assert any(b"gcs_server" in names[pid] for pid in sockets.values())
    assert any(b"raylet" in names[pid] for pid in sockets.values())
    exposed = [f"{a}:{p} {names[pid][:60]!r}" for (a, p), pid in sockets.items() if not loopback(a)]
    assert exposed == []
    dashboards = [n for n in names.values() if n.startswith(b"ray::Dashboard") or DASHBOARD in n]
    assert not any(names[pid] in dashboards for pid in sockets.values())  # none listens
    assert all(port != 8265 for _, port in sockets)  # (the dashboard's port)
    assert (driver.returncode, left_as_it_was) == (0, "True")


def test_a_killed_collector_leaves_no_process_of_its_local_cluster_running() -> None:
    driver = subprocess.Popen(
        [sys.executable, "-c", LOCAL_CLUSTER], cwd=ROOT, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert driver.stdin is not None and driver.stdout is not None
    try:
        actor = int(driver.stdout.readline())
        cluster = descendants(driver.pid) - {driver.pid}
        assert actor in cluster
        driver.kill()
        driver.wait()
        deadline = time.monotonic() + 60  # the launcher's grace, then SIGKILL: seconds
        while (left := {pid for pid in cluster if alive(pid)}) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        driver.kill()
        driver.wait()
    assert left == set()


def alive(pid: int) -> bool:
    """A process ``pid`` that has not exited (a zombie has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A cluster started as palaestra starts one, used by each run (as a Ray the caller
    started); this machine's two CPUs, so two worker actors; the actors import the test
    environments by name (the driver's directory is on their path)."""
    with connected(None):
        yield


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
