"""The docker provider against a real daemon: builds, boxes, commands, teardown, leases."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra.errors import SandboxFailure
from palaestra.sandbox.limits import Limits
from palaestra.sandbox.machines import images
from palaestra.sandbox.machines.container_procs import _container_pids, lease_alive, lease_of
from palaestra.sandbox.machines.digest import folder_digest
from palaestra.sandbox.machines.docker import DockerProvider, from_images
from palaestra.sandbox.machines.provider import BoxSpec, Image
from palaestra.sandbox.process import supervise
from tests.sandbox.machines.docker_support import container_exists, daemon_or_skip, run


@pytest.fixture(scope="module")
def base() -> Image:
    """The offline base as an image to start boxes from (imported if it is not yet)."""
    daemon_or_skip()
    images.docker_base()
    return Image(provider="docker", ref=images.TAGS[0], digest="", workdir="/", env={})


@pytest.fixture
def provider() -> DockerProvider:
    daemon_or_skip()
    return DockerProvider()


@pytest.fixture
def fresh_context(tmp_path: Path) -> Iterator[Path]:
    """A Dockerfile folder no earlier run has built (a nonce in it); its image goes after."""
    nonce = secrets.token_hex(8)
    (tmp_path / "Dockerfile").write_text(
        "FROM debian:bookworm-slim\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends jq"
        " && rm -rf /var/lib/apt/lists/*\n"
        f"RUN echo {nonce} > /nonce\n"
        "WORKDIR /srv/app\n"
        "ENV GREETING=hello\n"
        "USER nobody\n"
    )
    yield tmp_path
    tag = f"palaestra-task:{folder_digest(tmp_path).removeprefix('sha256:')[:12]}"
    subprocess.run(["docker", "rmi", "--force", tag], capture_output=True)


def test_the_problem_check_passes_on_a_daemon_without_a_bridge(provider: DockerProvider) -> None:
    assert provider.problem() is None


async def test_the_base_installs_debian_packages_with_no_network(
    provider: DockerProvider, base: Image
) -> None:
    async with await provider.start(base, BoxSpec()) as box:
        sources = (box.root / "etc/apt/sources.list").read_text().strip()
        assert sources == f"deb [trusted=yes] file:{images.ARCHIVE} ./"
        install = await run(
            box,
            [
                "sh",
                "-c",
                "apt-get update -qq && apt-get install -y -qq --no-install-recommends"
                " python3-sympy git >/dev/null && python3 -c 'import sympy; print(sympy.sqrt(8))'"
                " && git --version",
            ],
            wall_time=300,
        )
        assert install.status == 0, install.stderr.decode()[-2000:]
        assert install.stdout.decode().splitlines()[0] == "2*sqrt(2)"
        assert install.stdout.decode().splitlines()[1].startswith("git version ")


async def test_a_build_runs_offline_records_the_config_and_is_cached(
    provider: DockerProvider, fresh_context: Path
) -> None:
    image = await provider.build(fresh_context)
    assert image.digest == folder_digest(fresh_context)
    assert (image.workdir, image.user, image.env["GREETING"]) == ("/srv/app", "nobody", "hello")

    calls: list[tuple[str, ...]] = []
    real = provider._run

    async def counting(*args: str, **kwargs: object) -> tuple[int, bytes, bytes]:
        calls.append(args)
        return await real(*args, **kwargs)  # type: ignore[arg-type]

    provider._run = counting  # type: ignore[method-assign]
    assert await DockerProvider.build(provider, fresh_context) == image
    assert [call for call in calls if call[0] == "build"] == []

    async with await provider.start(image, BoxSpec()) as box:
        outcome = await run(box, ["sh", "-c", 'pwd; id -un; echo "$GREETING"; jq -n 1+1'])
    assert outcome.stdout.decode().split() == ["/srv/app", "nobody", "hello", "2"]


async def test_a_changed_folder_builds_a_new_image(
    provider: DockerProvider, fresh_context: Path
) -> None:
    first = await provider.build(fresh_context)
    (fresh_context / "extra.txt").write_text("changed\n")
    try:
        second = await provider.build(fresh_context)
        assert second.ref != first.ref and second.digest != first.digest
    finally:
        subprocess.run(["docker", "rmi", "--force", first.ref], capture_output=True)


async def test_a_new_base_image_rebuilds_the_task_image(
    provider: DockerProvider, tmp_path: Path
) -> None:
    base = f"palaestra-test-base:{secrets.token_hex(6)}"
    (tmp_path / "Dockerfile").write_text(f"FROM {base}\nRUN cat /which > /seen\n")
    first_base, second_base = tmp_path / "first", tmp_path / "second"
    for folder in (first_base, second_base):
        folder.mkdir()
        (folder / "Dockerfile").write_text(
            f"FROM debian:bookworm-slim\nRUN echo {folder.name} > /which\n"
        )
    tags = [base]
    try:
        first = await provider.build(first_base)
        second = await provider.build(second_base)
        tags += [first.ref, second.ref]
        subprocess.run(["docker", "tag", first.ref, base], check=True)
        task = await provider.build(tmp_path)
        tags.append(task.ref)
        subprocess.run(["docker", "tag", second.ref, base], check=True)  # a new base
        again = await provider.build(tmp_path)
        assert again.ref == task.ref  # the same folder, the same tag, rebuilt
        async with await provider.start(again, BoxSpec()) as box:
            assert (box.root / "seen").read_text() == "second\n"
    finally:
        subprocess.run(["docker", "rmi", "--force", *tags], capture_output=True)


async def test_an_image_that_cannot_be_had_offline_fails_with_one_line(
    provider: DockerProvider, tmp_path: Path
) -> None:
    (tmp_path / "Dockerfile").write_text("FROM registry.invalid/nothing/here:1.0\nRUN true\n")
    with pytest.raises(SandboxFailure) as failure:
        await provider.build(tmp_path)
    message = str(failure.value)
    assert "registry.invalid/nothing/here:1.0" in message and "\n" not in message
    assert failure.value.kind.value == "sandbox_error"


async def test_a_failing_step_is_named(provider: DockerProvider, tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM debian:bookworm-slim\nRUN exit 7\n")
    with pytest.raises(SandboxFailure, match=r"Step 2/\d : RUN exit 7.*non-zero code: 7"):
        await provider.build(tmp_path)


async def test_a_build_over_its_budget_fails(provider: DockerProvider, tmp_path: Path) -> None:
    nonce = secrets.token_hex(6)
    (tmp_path / "Dockerfile").write_text(f"FROM debian:bookworm-slim\nRUN sleep 30 # {nonce}\n")
    with pytest.raises(SandboxFailure, match="took over 2s"):
        await provider.build(tmp_path, timeout=2)
    for _ in range(100):  # the daemon cancels the step when its client goes
        if not _containers_running(nonce):
            break
        await asyncio.sleep(0.2)
    assert not _containers_running(nonce), "the build left its step behind"


def _containers_running(text: str) -> list[str]:
    """Containers (running or not) whose command holds ``text``."""
    listing = subprocess.run(
        ["docker", "ps", "--all", "--no-trunc", "--format", "{{.ID}} {{.Command}}"],
        capture_output=True,
        text=True,
    )
    return [line for line in listing.stdout.splitlines() if text in line]


async def test_a_box_has_no_network(provider: DockerProvider, base: Image) -> None:
    async with await provider.start(base, BoxSpec()) as box:
        outcome = await run(box, ["ls", "/sys/class/net"])
    assert outcome.stdout.decode().split() == ["lo"]


async def test_a_task_that_needs_a_network_is_refused(
    provider: DockerProvider, base: Image
) -> None:
    with pytest.raises(SandboxFailure, match="needs a network") as failure:
        await provider.start(base, BoxSpec(network=True))
    assert "\n" not in str(failure.value)


async def test_writes_are_per_box(provider: DockerProvider, base: Image) -> None:
    async with (
        await provider.start(base, BoxSpec()) as one,
        await provider.start(base, BoxSpec()) as two,
    ):
        wrote = await run(one, ["sh", "-c", "echo mine > /etc/written && rm /etc/debian_version"])
        assert wrote.status == 0
        assert (one.root / "etc/written").read_text() == "mine\n"
        assert not (two.root / "etc/written").exists()
        seen = await run(two, ["sh", "-c", "cat /etc/written; ls /etc/debian_version"])
        assert seen.stdout == b"/etc/debian_version\n"  # still there in the other box
        assert b"/etc/written: No such file" in seen.stderr
        (two.root / "from-host").write_text("in")
        assert (await run(two, ["cat", "/from-host"])).stdout == b"in"
        assert not (one.root / "from-host").exists()


async def test_a_command_gets_its_output_status_user_cwd_and_env(
    provider: DockerProvider, base: Image
) -> None:
    async with await provider.start(base, BoxSpec()) as box:
        outcome = await run(
            box,
            ["sh", "-c", 'echo out; echo err >&2; id -u; pwd; echo "$COLOUR"; exit 3'],
            user="nobody",
            cwd="/tmp",
            env={"COLOUR": "blue"},
        )
    assert outcome.status == 3
    assert outcome.stdout.decode().split() == ["out", "65534", "/tmp", "blue"]
    assert outcome.stderr == b"err\n"


async def test_a_protocol_launch_talks_over_the_exec_stdio(
    provider: DockerProvider, base: Image
) -> None:
    program = textwrap.dedent(
        """
        import os, sys
        requests, replies = (int(fd) for fd in os.environ["PALAESTRA_PROTOCOL"].split(","))
        print("to stdout is lost")
        line = os.read(requests, 100)
        os.write(replies, b"got " + line)
        """
    )
    async with await provider.start(base, BoxSpec()) as box:
        process = await box.launch(
            ["python3", "-c", program], stdin=subprocess.DEVNULL, protocol=True
        )
        try:
            assert process.stdin is not None
            process.stdin.write(b"ping\n")
            reply = await asyncio.wait_for(process.stdout.readline(), 30)
            assert reply == b"got ping\n"
            assert await asyncio.wait_for(process.wait(), 30) == 0
        finally:
            await process.stop()
            process.close()


async def test_killing_a_command_kills_what_it_started_inside(
    provider: DockerProvider, base: Image
) -> None:
    async with await provider.start(base, BoxSpec()) as box:
        before = set(_container_pids(box.pid))
        outcome = await run(box, ["sh", "-c", "sleep 1000 & sleep 1000"], wall_time=1.0)
        assert outcome.limit is not None and outcome.limit.value == "wall_time"
        for _ in range(50):
            if set(_container_pids(box.pid)) <= before:
                break
            await asyncio.sleep(0.1)
        assert set(_container_pids(box.pid)) <= before, "the sleeps outlived their kill"
        assert len(before) == 2  # the init and its sleep infinity


async def test_close_removes_the_container_and_is_idempotent(
    provider: DockerProvider, base: Image
) -> None:
    box = await provider.start(base, BoxSpec(memory_mb=256, cpus=0.5, processes=64))
    container = box.container
    limits = json.loads(
        subprocess.run(
            ["docker", "inspect", "--format", "{{json .HostConfig}}", container],
            capture_output=True,
            text=True,
        ).stdout
    )
    assert (limits["Memory"], limits["NanoCpus"], limits["PidsLimit"]) == (256 << 20, 5 * 10**8, 64)
    assert limits["NetworkMode"] == "none"
    await box.close()
    assert not container_exists(container)
    await box.close()
    with pytest.raises(SandboxFailure, match="closed"):
        await box.launch(["true"], stdin=subprocess.DEVNULL)


async def test_a_start_that_is_cancelled_leaves_no_container(
    provider: DockerProvider, base: Image
) -> None:
    await asyncio.to_thread(provider.reap)
    provider._reaped = True  # so the cancellation lands in `docker run`, not in the first reap
    cancelled = False
    for delay in (0.2, 0.1, 0.05, 0.02, 0.01):  # a quiet daemon may start a box within 0.2 s
        task = asyncio.create_task(provider.start(base, BoxSpec()))
        await asyncio.sleep(delay)
        task.cancel()
        try:
            box = await task
        except asyncio.CancelledError:
            cancelled = True
            break
        await box.close()  # started before the cancellation landed: try sooner
    assert cancelled, "every start finished before it could be cancelled"
    await asyncio.sleep(2.0)
    await asyncio.to_thread(provider.reap)  # as the provider's next start does
    mine = subprocess.run(
        ["docker", "ps", "--all", "--quiet", "--filter", f"name=palaestra-{os.getpid()}-"],
        capture_output=True,
        text=True,
    )
    assert mine.stdout.strip() == ""


async def test_a_box_the_daemon_made_after_its_start_was_abandoned_is_reaped(
    provider: DockerProvider, base: Image
) -> None:
    name = f"palaestra-{os.getpid()}-late-{secrets.token_hex(4)}"
    provider._abandon(name)  # the start gave up; the daemon had not made the box yet
    subprocess.run(
        ["docker", "run", "--detach", "--name", name, "--network", "none",
         "--label", "palaestra.box=1", "--label", f"palaestra.lease={lease_of(os.getpid())}",
         "--entrypoint", "sleep", base.ref, "infinity"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    try:
        async with await provider.start(base, BoxSpec()) as box:
            assert not container_exists(name)  # gone, though its owner (we) still runs
            assert container_exists(box.container)
    finally:
        subprocess.run(["docker", "rm", "--force", name], capture_output=True)


def test_a_lease_names_a_live_owner_until_it_is_gone() -> None:
    assert lease_alive(lease_of(os.getpid()))
    pid, started, namespace = lease_of(os.getpid()).split(":")
    assert not lease_alive(f"{pid}:{int(started) + 1}:{namespace}")  # the pid was reused
    assert lease_alive(f"{pid}:{int(started) + 1}:1")  # another pid namespace: not ours to judge
    assert not lease_alive("not a lease")


async def test_a_command_reads_a_file_given_as_its_stdin(
    provider: DockerProvider, base: Image, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.write_bytes(b"line one\n" * 10000)
    async with await provider.start(base, BoxSpec()) as box:
        with data.open("rb") as source:
            process = await box.launch(["wc", "-l"], stdin=source.fileno())
            try:
                outcome = await supervise(process, Limits(wall_time=60))
            finally:
                process.close()
    assert outcome.stdout.strip() == b"10000"


def test_the_problem_check_names_a_missing_cli_and_a_silent_daemon(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = DockerProvider(docker="no-such-docker-cli").problem()
    assert missing is not None and "no-such-docker-cli CLI is not installed" in missing
    if shutil.which("docker") is None:
        pytest.skip("no docker CLI to point at a silent daemon")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    silent = DockerProvider().problem()
    assert silent is not None and silent.startswith("no Docker daemon answers")


_OWNER = """
import asyncio, sys
from palaestra.sandbox.machines.docker import DockerProvider
from palaestra.sandbox.machines.provider import BoxSpec, Image

async def main():
    box = await DockerProvider().start(Image("docker", sys.argv[1], ""), BoxSpec())
    print(box.container, flush=True)
    await asyncio.sleep(1000)

asyncio.run(main())
"""


async def _orphan(image: Image) -> str:
    """A box whose owner was killed with SIGKILL (it had no chance to close it)."""
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, image.ref],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert owner.stdout is not None
        orphan = (await asyncio.to_thread(owner.stdout.readline)).decode().strip()
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        if owner.stdout is not None:
            owner.stdout.close()
    assert orphan and container_exists(orphan)
    return orphan


async def test_the_boxes_of_a_killed_owner_are_reaped(
    provider: DockerProvider, base: Image
) -> None:
    orphan = await _orphan(base)
    assert await asyncio.to_thread(provider.reap) >= 1
    assert not container_exists(orphan)
    async with await provider.start(base, BoxSpec()) as live:  # a live owner's box stays
        await asyncio.to_thread(provider.reap)
        assert container_exists(live.container)


async def test_a_provider_reaps_before_its_first_start(base: Image) -> None:
    daemon_or_skip()
    orphan = await _orphan(base)
    async with await DockerProvider().start(base, BoxSpec()):
        assert not container_exists(orphan)


def test_from_lines_are_read_as_the_builder_reads_them() -> None:
    dockerfile = (
        "ARG BASE=debian:bookworm-slim\n"
        "FROM --platform=linux/amd64 ${BASE} AS build\n"
        "RUN make\n"
        "FROM build\n"
        "FROM scratch\n"
        "from python:3.12 as other\n"
    )
    assert from_images(dockerfile) == ["debian:bookworm-slim", "python:3.12"]


_FAKE_CLI = """#!/bin/sh
# A docker CLI that lists one box (of a live owner) and fails its first removal.
case "$1" in
ps) echo "c0ffee palaestra-watched {lease}" ;;
rm) if [ -e {marker} ]; then echo rm >> {log}; exit 0; fi; touch {marker}; exit 1 ;;
esac
"""


def test_a_watched_start_stays_watched_until_its_removal_succeeds(tmp_path: Path) -> None:

    cli = tmp_path / "docker"
    log = tmp_path / "removed"
    marker = tmp_path / "failed-once"
    cli.write_text(_FAKE_CLI.format(lease=lease_of(os.getpid()), marker=marker, log=log))
    cli.chmod(0o755)
    provider = DockerProvider(docker=str(cli))
    provider._abandoned["palaestra-watched"] = time.monotonic() + 60  # a cancelled start
    assert provider.reap() == 1  # listed and removed, but the daemon refused
    assert "palaestra-watched" in provider._abandoned
    assert provider.reap() == 1
    assert log.read_text() == "rm\n"
    assert "palaestra-watched" not in provider._abandoned
    assert provider.reap() == 0  # a live owner's box that is not watched stays
