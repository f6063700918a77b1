"""Finding this process's memory cgroup from ``/proc/self/cgroup`` and ``mountinfo``."""

from __future__ import annotations

from pathlib import Path

from palaestra.sandbox.cgroup import MemoryCgroups, _memory_hierarchy

V1_MOUNTS = [
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755",
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
]


def test_a_v1_memory_hierarchy_wins_over_the_unified_one() -> None:
    membership = ["4:memory:/jobs/a b", "1:cpu,cpuacct:/", "0::/"]
    mounts = [
        line.replace("/sys/fs/cgroup/memory ", "/sys/fs/cgroup/mem\\040ory ") for line in V1_MOUNTS
    ]

    found = _memory_hierarchy(membership, mounts)

    assert found == MemoryCgroups(Path("/sys/fs/cgroup/mem ory/jobs/a b"), 1)


def test_a_v2_cgroup_under_a_container_mount_root_maps_to_the_mount_point() -> None:
    membership = ["0::/system.slice/box.scope/app"]
    mounts = ["30 20 0:26 /system.slice/box.scope /sys/fs/cgroup rw - cgroup2 cgroup2 rw"]

    found = _memory_hierarchy(membership, mounts)

    assert found == MemoryCgroups(Path("/sys/fs/cgroup/app"), 2)


def test_no_usable_hierarchy_is_said_not_guessed() -> None:
    outside = _memory_hierarchy(
        ["0::/elsewhere"], ["30 20 0:26 /box /sys/fs/cgroup rw - cgroup2 cgroup2 rw"]
    )
    unmounted = _memory_hierarchy(["0::/"], V1_MOUNTS[:1])

    assert isinstance(outside, str) and "outside" in outside
    assert isinstance(unmounted, str) and "no cgroup file system" in unmounted
