"""``LocalCluster``: the Ray cluster ``--executor ray`` starts for a run without ``--ray-address``.

Its head node is a child process, Ray's own ``ray start --head --block`` with the node address
``127.0.0.1``, no dashboard, no usage reporting and no metrics collection, in a temporary
directory of its own (so it never meets, nor is found as, another cluster of the machine). On
Linux Ray replaces a loopback node address by the machine's network address (and its servers
then listen on every interface) unless told, by its documented environment variable
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, to treat the node as a local one: that variable is set
in the head's environment only, and so reaches every process of the cluster (GCS, raylet,
workers, agents) and no other.

This process then joins it as a driver (``ray.init``, in ``cluster.connected``) at
``address``. Ray, in the driver, would take ``127.0.0.1:PORT`` for "this machine" and dial the
machine's network address instead; it takes the IPv4-mapped form of the same loopback address
(``[::ffff:127.0.0.1]:PORT``) as it is, which reaches the GCS over the loopback interface. The
driver's node address then comes from the head (``127.0.0.1``), so its own servers listen on
loopback too.

The head lives no longer than the run: ``stop`` ends it (after ``ray.shutdown``), and it runs
under ``palaestra.remote.launcher``, which stops every process the head started when this
process dies, even by ``kill -9`` (its stdin, a pipe only this process holds, reads end of
file; the kernel's ``PR_SET_PDEATHSIG`` tells it too).

Ray's token authentication is what this process's environment says (``RAY_AUTH_MODE``): the
head is given the same mode, since a driver joining an address does not turn it on by itself.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from palaestra.errors import ConfigError

LOOPBACK = "127.0.0.1"
"""The one address a local cluster started for a run listens on."""

MAPPED_LOOPBACK = f"::ffff:{LOOPBACK}"
"""The same address as the driver dials it (see the module's docstring)."""

START_TIMEOUT = 120.0
"""Seconds the head node has to start (about 5 on this project's 2-core test machine)."""

STOP_GRACE = 2.0
"""Seconds the head's processes have to exit on SIGTERM before SIGKILL. The cluster is this
run's alone and the driver has left it: nothing is lost by not letting Ray drain it."""

LAUNCHER = Path(__file__).parents[1] / "remote" / "launcher.py"
ADDRESS_FILE = "ray_current_cluster"
"""Where ``ray start`` writes the GCS address, in its temporary directory, once it started."""

LOG_FILE = "head.log"
_POLL_SECONDS = 0.1


class LocalCluster:
    """A started head node: ``address`` for ``ray.init``; ``stop`` ends it."""

    def __init__(self, directory: Path, process: subprocess.Popen[bytes], port: int) -> None:
        self.directory, self.process, self.port = directory, process, port
        self.address = f"[{MAPPED_LOOPBACK}]:{port}"

    @classmethod
    def start(cls) -> LocalCluster:
        """Start the head node and wait until it runs; a ``ConfigError`` (with Ray's own last
        line) if it exits or never starts, with nothing left running."""
        directory = Path(tempfile.mkdtemp(prefix="palaestra-ray-"))  # 0700: this user's only
        try:
            with (directory / LOG_FILE).open("wb") as log:
                process = subprocess.Popen(
                    _launcher_argv(directory),
                    stdin=subprocess.PIPE,  # held by this process only: EOF when it dies
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=_head_environment(),
                    start_new_session=True,  # spared the terminal's ^C: stopped by stop()
                )
        except OSError as error:
            shutil.rmtree(directory, ignore_errors=True)
            raise ConfigError(f"cannot start a local Ray cluster: {error}") from None
        cluster = cls(directory, process, 0)
        try:
            cluster.port = cluster._wait_started()
            cluster.address = f"[{MAPPED_LOOPBACK}]:{cluster.port}"
            _check_dialable(cluster.port)
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def stop(self) -> None:
        """End every process of the head node (SIGTERM, SIGKILL after ``STOP_GRACE``) and
        remove its directory."""
        process = self.process
        try:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(STOP_GRACE + 5)
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # only if the launcher could not
            if process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(STOP_GRACE)
            shutil.rmtree(self.directory, ignore_errors=True)

    def _wait_started(self) -> int:
        """The GCS port, once ``ray start`` wrote its address (after every process started)."""
        written = self.directory / ADDRESS_FILE
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                host, _, port = written.read_text().strip().rpartition(":")
                if port.isdigit():
                    if host != LOOPBACK:
                        raise ConfigError(
                            f"the local Ray cluster started on {host}, not on {LOOPBACK} only: "
                            f"start one yourself as docs/distributed.md says and pass "
                            f"--ray-address"
                        )
                    return int(port)
            if self.process.poll() is not None:
                raise ConfigError(f"cannot start a local Ray cluster: {self._last_line()}")
            time.sleep(_POLL_SECONDS)
        raise ConfigError(
            f"the local Ray cluster did not start in {START_TIMEOUT:g}s; its log: "
            f"{self.directory / LOG_FILE} (kept until the run ends)"
        )

    def _last_line(self) -> str:
        """Ray's last word in the head's log: its error, when it failed."""
        with contextlib.suppress(OSError):
            lines = (self.directory / LOG_FILE).read_text(errors="replace").splitlines()
            said = [line.strip() for line in lines if line.strip()]
            if said:
                return said[-1][:300]
        return f"ray start exited with code {self.process.returncode}"


@contextlib.contextmanager
def local_cluster() -> Iterator[LocalCluster]:
    """A ``LocalCluster`` for the block; stopped however it ends."""
    cluster = LocalCluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def _launcher_argv(directory: Path) -> list[str]:
    head = [
        sys.executable,
        "-m",
        "ray.scripts.scripts",  # Ray's own CLI (``ray``), of this interpreter's Ray
        "start",
        "--head",
        f"--node-ip-address={LOOPBACK}",
        "--port=0",  # a free port
        "--include-dashboard=false",
        "--disable-usage-stats",
        '--system-config={"enable_metrics_collection": false}',
        f"--temp-dir={directory}",
        "--block",
    ]
    if importlib.util.find_spec("grpc") is not None:
        # With ray[client] installed the head also starts a Ray Client server, on 10001
        # unless told: a free port, so two runs never collide (it listens on LOOPBACK).
        head.append(f"--ray-client-server-port={_free_port()}")
    # The launcher stops every process under it when this process stops it or dies.
    return [sys.executable, "-I", str(LAUNCHER), str(os.getpid()), f"{STOP_GRACE:g}",
            shlex.join(head)]  # fmt: skip


def _head_environment() -> dict[str, str]:
    """This process's environment, for the head node only: treated as a local node (its
    address stays ``127.0.0.1``), its token authentication as this process's driver will
    have it, and no other cluster's address."""
    environ = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    environ.setdefault("RAY_AUTH_MODE", "disabled")
    environ["RAY_USAGE_STATS_ENABLED"] = "0"
    return environ


def _check_dialable(port: int) -> None:
    """The GCS answers at the address the driver dials (it needs IPv6 on the loopback
    interface, as Ray's own servers do here): one clear line now, not Ray's minutes of
    retries."""
    try:
        socket.create_connection((MAPPED_LOOPBACK, port), timeout=5.0).close()
    except OSError as error:
        raise ConfigError(
            f"the local Ray cluster cannot be reached at [{MAPPED_LOOPBACK}]:{port} "
            f"({error.strerror or error}): start one yourself as docs/distributed.md says "
            f"and pass --ray-address"
        ) from None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port
