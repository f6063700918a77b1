"""Parity with Harbor's own runner: the same task folders scored by Harbor and by palaestra.

For each task folder, Harbor's runner (``harbor trial start``, its local Docker environment,
its ``oracle`` and ``nop`` agents) and palaestra (the oracle and null agents of ``palaestra
test``, on the chosen provider) each run the task; the table says whether the rewards agree.
Harbor's Docker environment speaks Compose v2 and puts an egress-control sidecar beside a
``no-network`` task, which it builds from the network; here it runs offline through a small
environment plug-in (``PLUGIN``, handed to Harbor as ``-e offline_docker:...``): Debian's
``docker-compose`` (v1: no ``--wait``, no ``compose cp``) to build, start and stop the
machine, Harbor's ``exec`` and ``cp`` sent to the engine (``docker exec``, ``docker cp``), and
``network_mode: none`` on the task's container (Harbor's own no-network override) instead of
the sidecar.

Harbor runs in its own Python (``--harbor``: its ``harbor`` command; by default the peer venv
the interop tests use). The result is written as Harbor asks of adapters
(``parity_experiment.json``: one entry per agent pair, a metric per side) and as a table.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from palaestra.agents.oracle import NoModel, NullAgent, OracleAgent
from palaestra.environment.kinds.harbor import HarborEnvironment
from palaestra.environment.kinds.harbor.environment import UNVERIFIED
from palaestra.environment.kinds.harbor.tasks import task_row, unpacked
from palaestra.environment.running.client import LocalEnvironmentClient
from palaestra.types import FailureKind, JsonDict

PLUGIN = '''\
"""Harbor's Docker environment, offline: docker-compose v1, no sidecar, no network."""

import asyncio

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

    async def _run_docker_compose_command(
        self, command, check=True, timeout_sec=None, stdin_data=None, on_output=None
    ):
        # exec and cp go to the engine's own commands (what Compose v2 runs underneath):
        # docker-compose v1 is a Python program that takes seconds to start on each call.
        if command and command[0] in ("exec", "cp"):
            engine = await self._engine_command(command)
            stdin = asyncio.subprocess.DEVNULL if stdin_data is None else asyncio.subprocess.PIPE
            process = await asyncio.create_subprocess_exec(
                *engine,
                stdin=stdin,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            collect = self._collect_streamed_output if on_output else self._collect_buffered_output
            extra = {"on_output": on_output} if on_output else {}
            result = await collect(process, timeout_sec=timeout_sec, stdin_data=stdin_data, **extra)
            if check and result.return_code != 0:
                raise RuntimeError(f"{' '.join(engine)} failed: {result.stdout}")
            return result
        return await super()._run_docker_compose_command(
            command, check=check, timeout_sec=timeout_sec, stdin_data=stdin_data,
            on_output=on_output,
        )

    async def _engine_command(self, command):
        if command[0] == "cp":
            ends = []
            for end in command[1:]:
                service, colon, path = end.partition(":")
                if colon and "/" not in service:
                    end = f"{await self._platform._resolve_service_container(service)}:{path}"
                ends.append(end)
            return ["docker", "cp", *ends]
        engine, rest = ["docker", "exec", "-i"], list(command[1:])
        while rest[0].startswith("-"):
            option = rest.pop(0)
            if option in ("-T", "--no-TTY"):
                continue
            engine += [option, rest.pop(0)]
        service = rest.pop(0)
        return [*engine, await self._platform._resolve_service_container(service), *rest]
'''
PLUGIN_CLASS = "offline_docker:OfflineDockerEnvironment"
PAIRS = (("oracle", "oracle"), ("nop", "null"))
"""Harbor's agent and palaestra's that should score the same: the solution, and nothing."""


def default_harbor() -> Path:
    """The ``harbor`` command of the peer venv (``python -m tests.support.peers`` builds it)."""
    root = os.environ.get("PALAESTRA_PEERS_DIR")
    peers = Path(root) if root else Path.home() / ".cache" / "palaestra" / "peers"
    return peers / "harbor" / "bin" / "harbor"


HARBOR_REFUSALS = frozenset({"VerifierOutputParseError"})
"""Harbor's verifier exception for a reward file it cannot read as numbers: palaestra refuses
the same files (a ``reward.json`` value that is not a number) with a ``verifier_error``."""
HARBOR_NO_REWARD = frozenset(
    {"RewardFileNotFoundError", "RewardFileEmptyError", "VerifierTimeoutError", *HARBOR_REFUSALS}
)
"""Harbor's verifier exceptions when the tests left no reward it can read (none written, empty,
unparseable, not finite, or the tests ran past their time): the trial has no reward, which
Harbor's ``mean`` metric counts as 0, and palaestra's verdict is that 0 with the reason
(``unverified``)."""


@dataclass
class Score:
    """One side's reward on one task and agent, or why there is none (``kind``: Harbor's
    exception type or palaestra's failure kind). ``unverified``: palaestra's 0 because the
    tests gave no reward (the row's reason)."""

    reward: float | None
    error: str | None = None
    kind: str | None = None
    unverified: str | None = None

    def text(self) -> str:
        if self.reward is None:
            return f"error ({self.error})"
        return f"{self.reward:g}" + (f" (unverified: {self.unverified})" if self.unverified else "")


@dataclass
class TaskParity:
    name: str
    harbor: dict[str, Score]
    """Harbor's agent name -> its score."""
    palaestra: dict[str, Score]
    """palaestra's agent name -> its score."""

    def same(self, harbor_agent: str, palaestra_agent: str) -> bool:
        """The same reward on both sides; both refusing the reward file the tests wrote
        (neither scores it); or the tests leaving no reward, a trial without one in Harbor
        (its metric's 0) and palaestra's 0 that says why. Any other failure is never the
        same."""
        ours, theirs = self.palaestra[palaestra_agent], self.harbor[harbor_agent]
        if ours.unverified is not None and theirs.reward is None:
            return theirs.kind in HARBOR_NO_REWARD
        if ours.reward is not None:
            return ours.reward == theirs.reward
        return (
            theirs.reward is None
            and ours.kind == FailureKind.VERIFIER_ERROR
            and theirs.kind in HARBOR_REFUSALS
        )


def task_folders(path: Path, sample: int | None, seed: int) -> list[Path]:
    """``path`` itself when it is a task, else its task subfolders (a seeded sample of
    ``sample`` of them, in name order); an archive of them is read where it unpacks to."""
    path = unpacked(path)
    if (path / "task.toml").is_file():
        return [path]
    folders = sorted(p for p in path.iterdir() if (p / "task.toml").is_file())
    if sample is not None and sample < len(folders):
        folders = sorted(random.Random(seed).sample(folders, sample))
    return folders


def docker_images() -> set[str]:
    """The ``repository:tag`` names of the Docker daemon's images."""
    done = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return set(done.stdout.split()) if done.returncode == 0 else set()


def image_prefix(folder: Path) -> str:
    """How the names of the images Harbor's trials of ``folder`` build begin: a trial is
    named after the task's first 32 characters (``_`` and ``-`` at their end dropped), its
    Compose project after the trial, lowercase, a leading ``0`` when it starts with neither a
    letter nor a digit, every other character but ``_`` and ``-`` made ``-``; docker-compose
    names the image after the project."""
    name = f"{folder.name[:32].rstrip('_-')}__".lower()
    if not re.match(r"[a-z0-9]", name):
        name = "0" + name
    return re.sub(r"[^a-z0-9_-]", "-", name)


@contextmanager
def built_images_kept(folders: list[Path]) -> Iterator[None]:
    """Harbor's trials inside keep the images they build (docker-compose names each
    ``TRIAL__env_main``), so the second trial of a folder, and every folder whose
    Dockerfile shares steps with one built before, reuses the layers; at the end the new
    images named after these folders' trials are removed."""
    before = docker_images()
    prefixes = tuple(image_prefix(folder) for folder in folders)
    try:
        yield
    finally:
        made = sorted(name for name in docker_images() - before if name.startswith(prefixes))
        if made:
            subprocess.run(["docker", "rmi", *made], capture_output=True, timeout=600)


def harbor_score(harbor: Path, task: Path, agent: str, work: Path, timeout: float) -> Score:
    """Run ``harbor trial start`` on ``task`` with ``agent`` offline; its reward."""
    plugin = work / "plugin"
    plugin.mkdir(parents=True, exist_ok=True)
    (plugin / "offline_docker.py").write_text(PLUGIN)
    trials = Path(tempfile.mkdtemp(prefix=f"{task.name}-{agent}-", dir=work))
    env = {**os.environ, "PYTHONPATH": str(plugin)}
    command = [str(harbor), "trial", "start", "-p", str(task), "-a", agent]
    # --no-delete keeps the built image (the container still goes): the next trial of this
    # folder, and of any folder whose Dockerfile shares its steps, reuses its layers.
    command += ["-e", PLUGIN_CLASS, "--trials-dir", str(trials), "--no-delete"]
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
    if not rewards:
        exception = result.get("exception_info") or {}
        message = str(exception.get("exception_message") or "no reward")
        # Paths in the trial's folder, which is gone when the command ends, said from it.
        error = message.replace(f"{results[0].parent}/", "").splitlines() or [""]
        return Score(None, error[0] or "no reward", exception.get("exception_type"))
    # Harbor's scalar, as its mean metric takes it: ``reward``, else the only component.
    if "reward" in rewards or len(rewards) == 1:
        return Score(float(rewards.get("reward", next(iter(rewards.values())))))
    return Score(None, f"components {', '.join(sorted(rewards))}, none named reward")


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
                    scores[name][label] = Score(None, failure, result.failure.kind)
                else:
                    verdict = result.verdict
                    reward = verdict.reward if verdict is not None else None
                    reason = verdict.metrics.get(UNVERIFIED) if verdict is not None else None
                    scores[name][label] = Score(
                        None if reward is None else float(reward),
                        unverified=str(reason) if reason else None,
                    )
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
        cells = [cell.replace("|", "\\|") for cell in cells]
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
