"""A box's own disk: a file system of ``BoxSpec.storage_mb`` that holds what the box writes.

A box's upper and work directories (its overlay's writable half) live on a file system of
their own, so a box that writes past its storage gets ``ENOSPC`` from the kernel and the
host's disk gains at most that much::

    <templates>/<MB>.img   an empty ext4 file system of that size, made once per size: no
                           journal (nothing of a box outlives a crash), no reserved blocks
                           (the box gets all of its storage), inode tables never zeroed
                           (the file is sparse: it reads zeros already)
    <box>/disk.img         a copy of it (of its few written extents only: the host's disk
                           pays only for what the box writes)
    <box>/disk/            that file system, loop-mounted nosuid,nodev (nothing the box
                           plants is a setuid program or a device on the host); root only

Copying the template costs a few milliseconds where ``mkfs`` costs tens, and the loop device
is set up with the kernel's ``LOOP_CONFIGURE`` rather than by running ``mount``. The loop
device clears itself when the file system is unmounted; the box's lease names the mount,
so a box whose collector was killed is unmounted by ``reap`` like its overlay.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import struct
import subprocess
from pathlib import Path

from palaestra.errors import SandboxFailure

MKFS = (
    "mkfs.ext4",
    "-q",
    "-F",
    "-m",
    "0",
    "-O",
    "^has_journal",
    "-E",
    "lazy_itable_init=1,lazy_journal_init=1,nodiscard",
)
OPTIONS = "noinit_itable"
"""ext4's own mount options: never zero the inode tables (the file reads zeros already)."""

_LOOP_CTL_GET_FREE = 0x4C82
_LOOP_CONFIGURE = 0x4C0A
_LO_FLAGS_AUTOCLEAR = 4
_MS_NOSUID, _MS_NODEV = 2, 4
_LOOP_CONFIG = struct.Struct("=II5Q4I64s64s32s2Q8Q")
"""``struct loop_config``: fd, block size, then ``struct loop_info64`` and reserved words."""


def make_disk(image: Path, point: Path, size_mb: int, templates: Path) -> None:
    """Make the box disk ``image`` of ``size_mb`` (from the template in ``templates``) and
    mount it at ``point`` (an empty directory), reachable by root only."""
    if size_mb < 1:
        raise SandboxFailure(f"a box's storage must be at least 1 MB, not {size_mb}")
    template = _template(templates, size_mb)
    try:
        _copy_sparse(template, image)
        _mount_loop(image, point)
    except OSError as error:
        raise SandboxFailure(f"cannot make a box's disk of {size_mb} MB: {error}") from None
    os.chmod(point, 0o700)


def _template(templates: Path, size_mb: int) -> Path:
    """The empty file system of ``size_mb``, made here (atomically: an unnamed file, linked
    into place once whole) if no earlier box made it."""
    target = templates / f"{size_mb}.img"
    if target.exists():
        return target
    fd = os.open(templates, os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o600)
    try:
        os.ftruncate(fd, size_mb << 20)
        done = subprocess.run(
            [*MKFS, f"/proc/self/fd/{fd}"],
            pass_fds=(fd,),
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if done.returncode != 0:
            raise SandboxFailure(
                f"cannot make a file system of {size_mb} MB for boxes: {done.stderr.strip()[-300:]}"
            )
        descriptors = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:  # linkat(AT_SYMLINK_FOLLOW) of the unnamed file (os.link's plain link would not)
            with contextlib.suppress(FileExistsError):  # another start made it meanwhile
                os.link(str(fd), target, src_dir_fd=descriptors, follow_symlinks=True)
        finally:
            os.close(descriptors)
    except OSError as error:
        raise SandboxFailure(f"cannot make a file system of {size_mb} MB: {error}") from None
    finally:
        os.close(fd)
    return target


def _copy_sparse(source: Path, target: Path) -> None:
    """Copy ``source`` to the new file ``target``, its written extents only (holes stay)."""
    reading = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
    try:
        writing = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            size = os.fstat(reading).st_size
            os.ftruncate(writing, size)
            position = 0
            while position < size:
                try:
                    start = os.lseek(reading, position, os.SEEK_DATA)
                except OSError as error:
                    if error.errno == errno.ENXIO:  # only a hole is left
                        break
                    raise
                end = os.lseek(reading, start, os.SEEK_HOLE)
                offset = start
                while offset < end:
                    copied = os.copy_file_range(reading, writing, end - offset, offset, offset)
                    if copied == 0:
                        raise OSError(errno.EIO, f"{source} ended early")
                    offset += copied
                position = end
        finally:
            os.close(writing)
    finally:
        os.close(reading)


def _mount_loop(image: Path, point: Path) -> None:
    """Attach ``image`` to a free loop device that clears itself, and mount it at ``point``
    (``nosuid,nodev``); ``mount -o loop`` where the kernel has no ``LOOP_CONFIGURE``."""
    libc = ctypes.CDLL(None, use_errno=True)
    backing = os.open(image, os.O_RDWR | os.O_CLOEXEC)
    try:
        for _ in range(20):  # another process may take the free device first
            control = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
            try:
                number = fcntl.ioctl(control, _LOOP_CTL_GET_FREE)
            finally:
                os.close(control)
            device = f"/dev/loop{number}"
            loop = os.open(device, os.O_RDWR | os.O_CLOEXEC)
            try:
                config = _LOOP_CONFIG.pack(backing, 0, *([0] * 8), _LO_FLAGS_AUTOCLEAR,
                                           b"", b"", b"", *([0] * 10))  # fmt: skip
                try:
                    fcntl.ioctl(loop, _LOOP_CONFIGURE, config)
                except OSError as error:
                    if error.errno == errno.EBUSY:
                        continue
                    if error.errno in (errno.EINVAL, errno.ENOTTY):
                        _mount_with_tool(image, point)
                        return
                    raise
                flags = _MS_NOSUID | _MS_NODEV
                if libc.mount(device.encode(), os.fsencode(point), b"ext4", flags,
                              OPTIONS.encode()) != 0:  # fmt: skip
                    error_number = ctypes.get_errno()
                    raise OSError(error_number, f"mount {device}: {os.strerror(error_number)}")
                return
            finally:
                os.close(loop)  # the mount holds the device now; unmounted, it clears itself
        raise OSError(errno.EBUSY, "no free loop device")
    finally:
        os.close(backing)


def _mount_with_tool(image: Path, point: Path) -> None:
    done = subprocess.run(
        ["mount", "-t", "ext4", "-o", f"loop,nosuid,nodev,{OPTIONS}", str(image), str(point)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    if done.returncode != 0:
        raise OSError(errno.EIO, done.stderr.strip()[-300:])
