"""Driving NeMo Gym 0.4.0 for the side-by-side benchmarks: install, start, collect, stop.

NeMo Gym is installed with pip into a venv of its own, made with pyenv's Python 3.12.1, in a
temporary directory (never in this repository), and driven only through its command line:
``ng_run`` starts its example_single_tool_call resources server, simple_agent and
openai_model servers (and a Ray cluster), ``ng_collect_rollouts`` collects. Each server's
"venv" is a link to that one venv, so ``+skip_venv_if_present=true`` installs nothing more.

Ray binds 127.0.0.1 only: ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` makes it use the loopback
address as the node address, and every listening socket of the stack is checked after start.
Stopping ends exactly the processes of the stack's tree, Ray's included, by pid.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from procs import all_stats, stop_processes, tree

VERSION = "0.4.0"
PYTHON_VERSION = "3.12.1"
AGENT = "example_single_tool_call_simple_agent"
CONFIGS = (
    "resources_servers/example_single_tool_call/configs/example_single_tool_call.yaml",
    "responses_api_models/openai_model/configs/openai_model.yaml",
)
SERVER_DIRS = (
    "resources_servers/example_single_tool_call",
    "responses_api_agents/simple_agent",
    "responses_api_models/openai_model",
)
READY_TEXT = "servers ready!"


class Unavailable(Exception):
    """NeMo Gym cannot run here; the message says why (the column is skipped)."""


def pyenv_python() -> Path:
    roots = [Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))]
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        found = subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=10)
        if found.returncode == 0:
            roots.insert(0, Path(found.stdout.strip()))
    for root in roots:
        python = root / "versions" / PYTHON_VERSION / "bin" / "python"
        if python.exists():
            return python
    raise Unavailable(f"pyenv has no Python {PYTHON_VERSION} (looked in {roots})")


@dataclass
class Install:
    root: Path

    @property
    def venv(self) -> Path:
        return self.root / "venv"

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def installed_version(self) -> str | None:
        python = self.bin / "python"
        if not (python.exists() and (self.bin / "ng_run").exists()):
            return None
        probe = subprocess.run(
            [str(python), "-c", "import importlib.metadata as m; print(m.version('nemo-gym'))"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        return probe.stdout.strip() if probe.returncode == 0 else None

    def ensure(self, log: list[str]) -> float:
        """Install NeMo Gym unless this directory already holds it; the seconds it took."""
        if self.installed_version() == VERSION:
            log.append(f"NeMo Gym {VERSION}: reusing {self.venv}")
            return 0.0
        python = pyenv_python()
        started = time.perf_counter()
        shutil.rmtree(self.venv, ignore_errors=True)
        self.root.mkdir(parents=True, exist_ok=True)
        made = subprocess.run(
            [str(python), "-m", "venv", str(self.venv)], capture_output=True, text=True
        )
        if made.returncode != 0:
            raise Unavailable(f"cannot make a Python {PYTHON_VERSION} venv: {made.stderr[-500:]}")
        pip = subprocess.run(
            [str(self.bin / "pip"), "install", "-q", f"nemo-gym=={VERSION}"],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if pip.returncode != 0 or self.installed_version() != VERSION:
            errors = [line for line in pip.stderr.splitlines() if "Location" not in line]
            raise Unavailable(f"pip install nemo-gym=={VERSION} failed: {errors[-5:]}")
        elapsed = time.perf_counter() - started
        log.append(f"NeMo Gym {VERSION}: installed into {self.venv} in {elapsed:.0f} s")
        return elapsed

    def site_packages(self) -> Path:
        found = sorted(self.venv.glob("lib/python3*/site-packages"))
        if not found:
            raise Unavailable(f"no site-packages in {self.venv}")
        return found[0]

    def link_server_venvs(self) -> Path:
        """One "venv" per server, each a link to the shared venv (nothing more is installed)."""
        venvs = self.root / "server-venvs"
        for server in SERVER_DIRS:
            link = venvs / server / ".venv"
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.is_symlink():
                link.symlink_to(self.venv)
        return venvs

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            PATH=f"{self.bin}:{env.get('PATH', '')}",
            VIRTUAL_ENV=str(self.venv),
            RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
            RAY_USAGE_STATS_ENABLED="0",
            RAY_TMPDIR=str(self.root / "r"),
            WANDB_MODE="disabled",
            HF_HUB_OFFLINE="1",
            PYTHONUNBUFFERED="1",
        )
        env.pop("PYTHONPATH", None)
        return env


@dataclass
class Stack:
    """A running ``ng_run``; ``ready_seconds`` from launch to its "servers ready" line."""

    install: Install
    workdir: Path
    process: subprocess.Popen[str]
    ready_seconds: float
    output: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, install: Install, workdir: Path, model_url: str, timeout: float = 240) -> Stack:
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "env.yaml").write_text(
            f"policy_base_url: {model_url}\npolicy_api_key: dummy-key\n"
            f"policy_model_name: mock-weather\n"
        )
        venvs = install.link_server_venvs()
        command = [
            str(install.bin / "ng_run"),
            f"+config_paths=[{','.join(CONFIGS)}]",
            "+skip_venv_if_present=true",
            f"+uv_venv_dir={venvs}",
        ]
        started = time.perf_counter()
        process = subprocess.Popen(
            command,
            cwd=workdir,
            env=install.environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        output: list[str] = []
        ready = threading.Event()

        def read() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                output.append(line.rstrip())
                if READY_TEXT in line:
                    ready.set()

        threading.Thread(target=read, daemon=True).start()
        deadline = time.perf_counter() + timeout
        while not ready.wait(0.05):
            if process.poll() is not None or time.perf_counter() > deadline:
                stack = cls(install, workdir, process, float("nan"), output)
                stack.stop()
                tail = "\n".join(output[-15:])
                raise Unavailable(f"ng_run did not get ready (exit {process.returncode}):\n{tail}")
        return cls(install, workdir, process, time.perf_counter() - started, output)

    def pids(self) -> list[int]:
        return [p.pid for p in tree([self.process.pid], all_stats())]

    def collect_command(self, tasks: Path, output: Path, concurrency: int) -> list[str]:
        return [
            str(self.install.bin / "ng_collect_rollouts"),
            f"+agent_name={AGENT}",
            f"+input_jsonl_fpath={tasks}",
            f"+output_jsonl_fpath={output}",
            f"+num_samples_in_parallel={concurrency}",
            "+upload_rollouts_to_wandb=false",
        ]

    def stop(self) -> list[str]:
        """Ctrl-C ``ng_run`` (it stops its servers and Ray), then end what is left of its tree.

        Only processes of this stack are signalled, by pid (its Ray cluster is part of the
        tree: ng_run starts it); ``ray stop`` is not used, as it would stop every Ray
        cluster of the machine's user.
        """
        notes: list[str] = []
        started = time.perf_counter()
        members = {p.pid: p.start for p in tree([self.process.pid], all_stats())}
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                notes.append("ng_run ignored Ctrl-C for 60 s")
        exited = time.perf_counter() - started
        left = stop_processes(members)
        self.process.wait(10)
        notes.append(
            f"ng_run stopped {exited:.1f} s after Ctrl-C"
            + (f"; {left} of its processes were still running and were ended" if left else "")
        )
        shutil.rmtree(self.install.root / "r", ignore_errors=True)
        return notes
