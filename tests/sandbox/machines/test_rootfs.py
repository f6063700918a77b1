"""The rootfs provider on real layers, overlays and bubblewrap: build, boxes, teardown, reaping."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from palaestra.errors import SandboxFailure
from palaestra.sandbox.limits import Limits
from palaestra.sandbox.machines import leases
from palaestra.sandbox.machines.layers import LayerStore
from palaestra.sandbox.machines.provider import BoxSpec, Image
from palaestra.sandbox.machines.registry import PROVIDERS
from palaestra.sandbox.machines.rootfs import RootfsBox, RootfsProvider
from palaestra.sandbox.machines.transfer import copy_in, read_file
from palaestra.sandbox.process import Outcome, supervise

SPEC = BoxSpec(memory_mb=512, start_timeout=60)


async def run(box: RootfsBox, script: str, *, user: str | None = None) -> Outcome:
    process = await box.launch(["sh", "-c", script], stdin=subprocess.DEVNULL, user=user)
    try:
        return await supervise(process, Limits(wall_time=30))
    finally:
        process.close()


def mounts_under(path: Path) -> list[str]:
    points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return [point for point in points if point.startswith(str(path))]


async def test_a_dockerfile_builds_into_layers_once_and_the_image_keeps_its_settings(
    provider: RootfsProvider, context: Path
) -> None:
    first = await provider.build(context, timeout=600)
    ran = provider.steps_run
    again = await RootfsProvider(
        cache=provider.store.root, runtime=provider.runtime, base=provider.base
    ).build(context)
    assert ran >= 4  # RUN, COPY, COPY, WORKDIR, RUN (the first test of the session: all)
    assert again == first  # same ref: nothing rebuilt, the date in /built.txt is the same
    assert (first.workdir, dict(first.env), first.user) == ("/app", {"MODE": "test"}, "agent")
    assert first.digest.startswith("sha256:") and first.provider == "rootfs"
    changed = context / "notes.txt"
    changed.write_text("other notes\n")
    rebuilt = RootfsProvider(
        cache=provider.store.root, runtime=provider.runtime, base=provider.base
    )
    assert (await rebuilt.build(context)).ref != first.ref
    assert rebuilt.steps_run == 4  # the changed COPY and the three steps after it


async def test_a_box_sees_the_image_as_its_user_and_writes_only_its_own_layer(
    provider: RootfsProvider, context: Path
) -> None:
    image = await provider.build(context)
    box = await provider.start(image, SPEC)
    other = await provider.start(image, SPEC)
    try:
        assert isinstance(box, RootfsBox) and isinstance(other, RootfsBox)
        assert box.bytes_written() == 0  # a start copies no image file
        seen = await run(
            box, "pwd; id -un; echo $MODE; cat notes/notes.txt main.py /built.txt ~/who"
        )
        lines = seen.stdout.decode().splitlines()
        assert seen.status == 0, seen.stderr
        assert lines[:5] == ["/app", "agent", "test", "some notes", "print('main')"]
        built = lines[5]
        assert lines[6] == "agent"  # a RUN after USER ran as that user
        assert built.startswith("hello ")  # the ARG's default, substituted in the RUN
        wrote = await run(box, "echo new > new.txt && echo changed > main.py")
        assert wrote.status == 0, wrote.stderr
        as_root = await run(box, "echo more >> /built.txt && rm /etc/hostname", user="root")
        assert as_root.status == 0, as_root.stderr
        assert (box.root / "app/new.txt").read_text() == "new\n"
        assert 0 < box.bytes_written() < 1 << 20
        layers = [provider.store.path(name) for name in provider._chain(image)]
        in_layers = [p / "built.txt" for p in layers if (p / "built.txt").exists()]
        assert [path.read_text() for path in in_layers] == [built + "\n"]
        assert all(
            (p / "app/main.py").read_text() == "print('main')\n"
            for p in layers
            if (p / "app/main.py").exists()
        )
        theirs = await run(other, "cat main.py /built.txt; ls new.txt; ls /etc/hostname")
        assert theirs.stdout.decode().splitlines() == ["print('main')", built, "/etc/hostname"]
    finally:
        await box.close()
        await other.close()


async def test_a_box_has_no_network_but_loopback(provider: RootfsProvider, context: Path) -> None:
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    image = await provider.build(context)
    try:
        async with await provider.start(image, SPEC) as box:
            assert isinstance(box, RootfsBox)
            probe = textwrap.dedent(f"""
                import socket
                print(sorted(name for _, name in socket.if_nameindex()))
                try:
                    socket.create_connection(("127.0.0.1", {port}), timeout=3)
                    print("connected")
                except OSError as error:
                    print("refused", error.errno)
            """)
            process = await box.launch(["python3", "-c", probe], stdin=subprocess.DEVNULL)
            outcome = await supervise(process, Limits(wall_time=30))
            process.close()
    finally:
        server.close()
    assert outcome.stdout.decode().splitlines()[0] == "['lo']"
    assert outcome.stdout.decode().splitlines()[1].startswith("refused")


async def test_close_kills_every_process_unmounts_and_removes_everything(
    provider: RootfsProvider, context: Path, runtime: Path
) -> None:
    image = await provider.build(context)
    box = await provider.start(image, SPEC)
    assert isinstance(box, RootfsBox)
    process = await box.launch(["sh", "-c", "sleep 300 & sleep 300"], stdin=subprocess.DEVNULL)
    cgroups = box.lease.cgroups
    assert cgroups  # memory, pids and cpu where this machine has them
    assert sorted(mounts_under(runtime)) == [str(box.directory / "disk"), str(box.root)]
    assert sorted(p.name for p in runtime.iterdir()) == sorted([box.id, f"{box.id}.lease"])
    await box.close()
    await box.close()  # idempotent
    assert await asyncio.wait_for(process.wait(), 10) is not None
    process.close()
    assert mounts_under(runtime) == []
    assert list(runtime.iterdir()) == []
    assert not any(Path(path).exists() for path in cgroups)
    with pytest.raises(SandboxFailure, match="closed"):
        await box.launch(["true"], stdin=subprocess.DEVNULL)


_ORPHAN = """
import asyncio, json, subprocess, sys, time
from pathlib import Path
from palaestra.sandbox.machines.provider import BoxSpec, Image
from palaestra.sandbox.machines.rootfs import RootfsProvider

async def main():
    cache, runtime, tar, image = sys.argv[1:5]
    provider = RootfsProvider(cache=Path(cache), runtime=Path(runtime), base=lambda: Path(tar))
    image = Image(**json.loads(image))
    box = await provider.start(image, BoxSpec(memory_mb=256))
    await box.launch(["sleep", "300"], stdin=subprocess.DEVNULL)
    print(json.dumps({"mounts": box.lease.mounts, "cgroups": box.lease.cgroups}), flush=True)
    await asyncio.sleep(300)

asyncio.run(main())
"""


async def test_the_box_of_a_killed_collector_is_reaped_by_the_next_provider(
    provider: RootfsProvider, context: Path, runtime: Path, base_tar: Path
) -> None:
    image = await provider.build(context)
    record = json.dumps(
        {
            "provider": image.provider,
            "ref": image.ref,
            "digest": image.digest,
            "workdir": image.workdir,
            "env": dict(image.env),
            "user": image.user,
        }
    )
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _ORPHAN,
            str(provider.store.root),
            str(runtime),
            str(base_tar),
            record,
        ],
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None
    left = json.loads(child.stdout.readline())
    os.kill(child.pid, signal.SIGKILL)  # kill -9 of the collector: no clean-up of its own
    child.wait()
    assert sorted(mounts_under(runtime)) == sorted(left["mounts"])  # the overlay, the disk
    assert len(list(runtime.glob("*.lease"))) == 1
    successor = RootfsProvider(cache=provider.store.root, runtime=runtime, base=provider.base)
    successor.prepare()
    assert successor.reaped == 1
    assert mounts_under(runtime) == []
    assert list(runtime.iterdir()) == []
    assert not any(Path(path).exists() for path in left["cgroups"])
    assert successor.reap() == 0


async def test_a_live_owners_box_is_not_reaped(provider: RootfsProvider, context: Path) -> None:
    image = await provider.build(context)
    async with await provider.start(image, SPEC):
        assert RootfsProvider(cache=provider.store.root, runtime=provider.runtime).reap() == 0


async def test_an_image_that_cannot_be_had_here_is_one_line_naming_it(
    provider: RootfsProvider, tmp_path: Path
) -> None:
    (tmp_path / "Dockerfile").write_text("FROM ubuntu:22.04\nRUN true\n")
    with pytest.raises(SandboxFailure) as caught:
        await provider.build(tmp_path)
    message = str(caught.value)
    assert "\n" not in message
    assert "ubuntu:22.04 cannot be had on this machine" in message
    assert "Dockerfile:1" in message


async def test_a_failing_step_is_a_sandbox_failure_with_its_output_and_leaves_nothing(
    provider: RootfsProvider, tmp_path: Path
) -> None:
    (tmp_path / "Dockerfile").write_text(
        "FROM debian:bookworm-slim\nRUN echo marker-of-the-step && ls /nowhere && true\n"
    )
    with pytest.raises(SandboxFailure) as caught:
        await provider.build(tmp_path)
    message = str(caught.value)
    assert "step 2/2" in message and "RUN echo marker-of-the-step" in message
    assert "exit status 2" in message
    assert "marker-of-the-step\n" in message and "/nowhere" in message
    assert list(provider.build_dir.iterdir()) == []
    assert not any(p.name.startswith(".") for p in provider.store.layers.iterdir())


async def test_a_build_over_its_time_budget_fails_and_leaves_nothing(
    provider: RootfsProvider, tmp_path: Path
) -> None:
    (tmp_path / "Dockerfile").write_text("FROM debian:bookworm-slim\nRUN sleep 60\n")
    with pytest.raises(SandboxFailure, match="time budget"):
        await provider.build(tmp_path, timeout=3)
    assert list(provider.build_dir.iterdir()) == []


async def test_a_box_that_does_not_start_in_time_fails_and_is_torn_down(
    provider: RootfsProvider, context: Path, runtime: Path
) -> None:
    image = await provider.build(context)
    with pytest.raises(SandboxFailure, match="did not start within"):
        await provider.start(image, BoxSpec(start_timeout=1e-6))
    assert len(provider.late) == 1  # the start goes on in its thread: its box is closed
    await asyncio.gather(*provider.late)
    assert not provider.late and list(runtime.iterdir()) == []
    assert mounts_under(runtime) == []


async def test_an_image_of_another_provider_or_a_network_is_refused(
    provider: RootfsProvider,
) -> None:
    with pytest.raises(SandboxFailure, match="needs a network"):
        await provider.start(Image("rootfs", "x", "d"), BoxSpec(network=True))
    with pytest.raises(SandboxFailure, match="built by docker"):
        await provider.start(Image("docker", "x", "d"), SPEC)
    with pytest.raises(SandboxFailure, match="not built here"):
        await provider.start(Image("rootfs", "0" * 64, "d"), SPEC)


def test_leases_of_live_and_unreadable_owners_are_left_alone(tmp_path: Path) -> None:
    alive = leases.Lease(box="mine", directory=str(tmp_path / "mine"))
    alive.write(tmp_path)
    (tmp_path / "broken.lease").write_text("{")
    assert leases.reap(tmp_path) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.lease", "mine.lease"]


def test_the_providers_are_registered_by_name() -> None:
    assert PROVIDERS.names()[:2] == ["rootfs", "docker"]
    assert PROVIDERS.load("rootfs").value is RootfsProvider


async def test_two_builds_of_one_new_step_at_once_run_it_once(
    provider: RootfsProvider, tmp_path: Path
) -> None:
    marker = os.urandom(8).hex()
    (tmp_path / "Dockerfile").write_text(
        f"FROM debian:bookworm-slim\nRUN echo {marker} > /m && sleep 1\n"
    )
    twins = [
        RootfsProvider(cache=provider.store.root, runtime=provider.runtime, base=provider.base)
        for _ in range(2)
    ]
    first, second = await asyncio.gather(*(twin.build(tmp_path) for twin in twins))
    assert first == second
    assert sorted(twin.steps_run for twin in twins) == [0, 1]


async def test_the_base_images_local_archive_installs_packages_with_no_network(
    provider: RootfsProvider, tmp_path: Path
) -> None:
    (tmp_path / "Dockerfile").write_text(
        "FROM debian:bookworm-slim\nRUN apt-get update && apt-get install -y "
        "--no-install-recommends jq && rm -rf /var/lib/apt/lists/*\n"
    )
    image = await provider.build(tmp_path, timeout=900)
    async with await provider.start(image, SPEC) as box:
        assert isinstance(box, RootfsBox)
        outcome = await run(box, "echo '{\"a\": 42}' | jq .a")
    assert (outcome.status, outcome.stdout) == (0, b"42\n"), outcome.stderr


def test_half_built_layers_of_dead_makers_are_swept(tmp_path: Path) -> None:
    store = LayerStore(tmp_path)
    store.prepare()
    mine = store.scratch("abc")
    namespace = os.stat("/proc/self/ns/pid").st_ino
    dead = store.layers / f".abc.{2**22 + 7}-1-{namespace}-0badf00d"
    (dead / "usr").mkdir(parents=True)
    assert store.sweep() == 1
    assert [p.name for p in store.layers.iterdir()] == [mine.name]


async def test_files_go_in_and_out_through_the_box_so_planted_links_stay_inside(
    provider: RootfsProvider, context: Path, tmp_path: Path
) -> None:
    tests = tmp_path / "tests"
    (tests / "sub").mkdir(parents=True)
    (tests / "test.sh").write_text("echo 1 > /logs/reward.txt\n")
    (tests / "sub" / "data.txt").write_text("data\n")
    marker = f"palaestra-planted-{os.urandom(4).hex()}"
    image = await provider.build(context)
    async with await provider.start(image, SPEC) as box:
        assert isinstance(box, RootfsBox)
        planted = await run(
            box,
            f"mkdir -p /tmp/{marker} && ln -s /tmp/{marker} /tests && "
            "ln -s /etc/hostname /app/reward.txt",
            user="root",
        )
        assert planted.status == 0, planted.stderr
        await copy_in(box, tests, "/tests")
        assert (box.root / "tmp" / marker / "sub" / "data.txt").read_text() == "data\n"
        assert not Path("/tmp", marker).exists()  # the host's /tmp was never touched
        assert await read_file(box, "/tests/sub/data.txt") == b"data\n"
        assert await read_file(box, "/app/reward.txt") == (box.root / "etc/hostname").read_bytes()
        assert await read_file(box, "/nowhere") is None
        assert await read_file(box, "/tests/test.sh", max_bytes=4) == b"echo"


async def test_a_box_as_root_is_bounded_in_processes(
    provider: RootfsProvider, context: Path
) -> None:
    provider.prepare()
    if provider._cgroups is None or provider._cgroups.pids is None:
        pytest.skip("no pids cgroup controller here")
    image = await provider.build(context)
    async with await provider.start(image, BoxSpec(processes=16, start_timeout=60)) as box:
        assert isinstance(box, RootfsBox)
        bomb = await run(box, "for i in $(seq 40); do sleep 30 & done; wait", user="root")
    assert b"fork" in bomb.stderr.lower() or b"resource temporarily" in bomb.stderr.lower()


def test_cgroups_of_a_dead_owner_without_a_lease_are_swept(provider: RootfsProvider) -> None:
    provider.prepare()
    assert provider._cgroups is not None
    bases = [found[0] for found in (provider._cgroups.pids, provider._cgroups.cpu) if found]
    if not bases:
        pytest.skip("no pids or cpu cgroup controller here")
    namespace = os.stat("/proc/self/ns/pid").st_ino
    orphan = bases[0] / f"palaestra-sandbox-{2**22 + 7}-1-{namespace}-0badf00d0bad"
    orphan.mkdir()
    try:
        provider.reap()
        assert not orphan.exists()
    finally:
        if orphan.exists():
            orphan.rmdir()


def test_a_lease_with_fields_this_version_does_not_know_is_still_reaped(tmp_path: Path) -> None:
    directory = tmp_path / "box"
    directory.mkdir()
    record = {
        "box": "box",
        "directory": str(directory),
        "pid": 2**22 + 7,
        "start": 1,
        "namespace": os.stat("/proc/self/ns/pid").st_ino,
        "from_the_future": [1],
    }
    (tmp_path / "box.lease").write_text(json.dumps(record))
    assert leases.reap(tmp_path) == 1
    assert list(tmp_path.iterdir()) == []
