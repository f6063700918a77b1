"""Parity with Harbor's own runner: the same task folders scored by Harbor and by palaestra.

For each task folder, Harbor's runner (``harbor trial start``, its local Docker environment,
its ``oracle`` and ``nop`` agents) and palaestra (the oracle and null agents of ``palaestra
test``, on the chosen provider) each run the task; the table says whether the rewards agree.
Harbor's Docker environment speaks Compose v2 and puts an egress-control sidecar beside a
``no-network`` task, which it builds from the network; here it runs offline through a small
environment plug-in (``PLUGIN``, handed to Harbor as ``-e offline_docker:...``): Debian's
``docker-compose`` (v1, so ``exec -T`` and no ``--wait``), and ``network_mode: none`` on the
task's container (Harbor's own no-network override) instead of the sidecar.

Harbor runs in its own Python (``--harbor``: its ``harbor`` command; by default the peer venv
the interop tests use). The result is written as Harbor asks of adapters
(``parity_experiment.json``: one entry per agent pair, a metric per side) and as a table.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from palaestra.agents.oracle import NoModel, NullAgent, OracleAgent
from palaestra.environment.client import LocalEnvironmentClient
from palaestra.environment.harbor import HarborEnvironment
from palaestra.environment.harbor.tasks import task_row
from palaestra.types import JsonDict

PLUGIN = '''\
"""Harbor's Docker environment, offline: docker-compose v1, no sidecar, no network."""

from harbor.environments.docker import COMPOSE_NO_NETWORK_PATH
from harbor.environments.docker.docker import DockerEnvironment
from harbor.environments.docker.runtime import ContainerRuntime


class OfflineDockerEnvironment(DockerEnvironment):
    @classmethod
    def runtime(cls):
        return ContainerRuntime(
            engine=("docker",),
            compose=("docker-compose",),
            supports_compose_wait=False,
            supports_compose_cp=False,
            supports_compose_project_directory=True,
        )

    @staticmethod
    def _requires_egress_control(**_):
        return False

    @property
    def capabilities(self):
        return super().capabilities.model_copy(update={"disable_internet": True})

    @property
    def _docker_compose_paths(self):
        return [*super()._docker_compose_paths, COMPOSE_NO_NETWORK_PATH]

    async def _run_docker_compose_command(self, command, *args, **kwargs):
        if command and command[0] == "exec" and not {"-T", "--no-TTY"} & set(command):
            command = ["exec", "-T", *command[1:]]
        return await super()._run_docker_compose_command(command, *args, **kwargs)
'''
PLUGIN_CLASS = "offline_docker:OfflineDockerEnvironment"
PAIRS = (("oracle", "oracle"), ("nop", "null"))
"""Harbor's agent and palaestra's that should score the same: the solution, and nothing."""


def default_harbor() -> Path:
    """The ``harbor`` command of the peer venv (``python -m tests.support.peers`` builds it)."""
    root = os.environ.get("PALAESTRA_PEERS_DIR")
    peers = Path(root) if root else Path.home() / ".cache" / "palaestra" / "peers"
    return peers / "harbor" / "bin" / "harbor"


@dataclass
class Score:
    """One side's reward on one task and agent, or why there is none."""

    reward: float | None
    error: str | None = None

    def text(self) -> str:
        return f"{self.reward:g}" if self.reward is not None else f"error ({self.error})"


@dataclass
class TaskParity:
    name: str
    harbor: dict[str, Score]
    """Harbor's agent name -> its score."""
    palaestra: dict[str, Score]
    """palaestra's agent name -> its score."""

    def same(self, harbor_agent: str, palaestra_agent: str) -> bool:
        ours, theirs = self.palaestra[palaestra_agent], self.harbor[harbor_agent]
        return ours.reward is not None and ours.reward == theirs.reward


def task_folders(path: Path, sample: int | None, seed: int) -> list[Path]:
    """``path`` itself when it is a task, else its task subfolders (a seeded sample of
    ``sample`` of them, in name order)."""
    if (path / "task.toml").is_file():
        return [path]
    folders = sorted(p for p in path.iterdir() if (p / "task.toml").is_file())
    if sample is not None and sample < len(folders):
        folders = sorted(random.Random(seed).sample(folders, sample))
    return folders


def harbor_score(harbor: Path, task: Path, agent: str, work: Path, timeout: float) -> Score:
    """Run ``harbor trial start`` on ``task`` with ``agent`` offline; its reward."""
    plugin = work / "plugin"
    plugin.mkdir(parents=True, exist_ok=True)
    (plugin / "offline_docker.py").write_text(PLUGIN)
    trials = Path(tempfile.mkdtemp(prefix=f"{task.name}-{agent}-", dir=work))
    env = {**os.environ, "PYTHONPATH": str(plugin)}
    command = [str(harbor), "trial", "start", "-p", str(task), "-a", agent]
    command += ["-e", PLUGIN_CLASS, "--trials-dir", str(trials)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Score(None, f"harbor ran past {timeout:.0f}s")
    results = sorted(trials.glob("*/result.json"))
    if not results:
        last = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or [""])[-1]
        return Score(None, f"harbor wrote no result (exit {done.returncode}): {last}")
    result = json.loads(results[0].read_text())
    rewards = (result.get("verifier_result") or {}).get("rewards") or {}
    if "reward" not in rewards:
        error = (result.get("exception_info") or {}).get("exception_message", "no reward")
        return Score(None, str(error).splitlines()[0] if error else "no reward")
    return Score(float(rewards["reward"]))


async def palaestra_scores(folder: Path, sandbox: str) -> dict[str, dict[str, Score]]:
    """Each task of ``folder`` run by palaestra's oracle and null agents: name -> agent ->
    score."""
    environment = HarborEnvironment(str(folder), sandbox=sandbox)
    client = LocalEnvironmentClient(environment)
    scores: dict[str, dict[str, Score]] = {}
    try:
        for name, task in environment.tasks.items():
            row = task_row(name, task)
            scores[name] = {}
            for label, agent in (("oracle", OracleAgent()), ("null", NullAgent())):
                result = await agent.run(row, client, NoModel())
                if result.failure is not None:
                    failure = f"{result.failure.kind}: {result.failure.reason}"
                    scores[name][label] = Score(None, failure)
                else:
                    reward = result.verdict.reward if result.verdict is not None else None
                    scores[name][label] = Score(None if reward is None else float(reward))
    finally:
        await client.aclose()
    return scores


def _mean_sem(values: list[float]) -> str:
    """``mean +/- sample SEM`` as Harbor's parity file asks (SEM undefined under 2 runs)."""
    if not values:
        return "n/a"
    mean = sum(values) / len(values)
    if len(values) < 2:
        return f"{mean:.3f}"
    variance = sum((value - mean) ** 2 for value in values) / (len(values) * (len(values) - 1))
    return f"{mean:.3f} +/- {math.sqrt(variance):.3f}"


def experiment(name: str, results: list[TaskParity], size: int, notes: str) -> list[JsonDict]:
    """``parity_experiment.json``: one entry per agent pair; ``original`` is Harbor's runner,
    ``harbor`` palaestra's (the adapter), each run once per task (the runs are the tasks'
    rewards)."""
    entries: list[JsonDict] = []
    for harbor_agent, palaestra_agent in PAIRS:
        theirs = [r.harbor[harbor_agent].reward for r in results]
        ours = [r.palaestra[palaestra_agent].reward for r in results]
        entries.append(
            {
                "adapter_name": name,
                "agent": f"{harbor_agent} (harbor) / {palaestra_agent} (palaestra)",
                "model": None,
                "date": datetime.now(UTC).date().isoformat(),
                "adapted_benchmark_size": size,
                "parity_benchmark_size": len(results),
                "number_of_runs": 1,
                "notes": notes,
                "original_parity_repo": None,
                "adapter_pr": [],
                "dataset_pr": [],
                "parity_pr": [],
                "metrics": [
                    {
                        "benchmark_name": name,
                        "metric": "reward",
                        "original": _mean_sem([v for v in theirs if v is not None]),
                        "harbor": _mean_sem([v for v in ours if v is not None]),
                        "original_runs": theirs,
                        "harbor_runs": ours,
                        "tasks": [r.name for r in results],
                        "same": sum(r.same(harbor_agent, palaestra_agent) for r in results),
                    }
                ],
            }
        )
    return entries


def table(results: list[TaskParity]) -> str:
    """A markdown table: one row per task, each side's reward per agent, and whether they
    agree."""
    lines = [
        "| task | harbor oracle | palaestra oracle | harbor nop | palaestra null | same |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        same = all(r.same(h, p) for h, p in PAIRS)
        cells = [r.name]
        for harbor_agent, palaestra_agent in PAIRS:
            cells += [r.harbor[harbor_agent].text(), r.palaestra[palaestra_agent].text()]
        lines.append("| " + " | ".join([*cells, "yes" if same else "**no**"]) + " |")
    return "\n".join(lines)


def harbor_version(harbor: Path) -> str:
    """``harbor --version``'s answer (``harbor 0.26.0``), or the command's name."""
    try:
        done = subprocess.run(
            [str(harbor), "--version"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return harbor.name
    version = done.stdout.strip().splitlines()
    return f"harbor {version[-1]}" if done.returncode == 0 and version else harbor.name


def harbor_missing(harbor: Path) -> str | None:
    """Why Harbor's runner cannot run here (one line), or None."""
    if not harbor.exists():
        return (
            f"Harbor's command {harbor} does not exist: build its venv with "
            "`python -m tests.support.peers`, or pass --harbor"
        )
    if shutil.which("docker-compose") is None:
        return "docker-compose is not installed (apt-get install docker-compose)"
    return None
