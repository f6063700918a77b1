"""A box's network namespace, reached from the host: how a filtering proxy serves a box that
has no network.

A box here has no interface but ``lo``: no bridge, no veth, no route. A task allowed some
hosts (Harbor's ``allowlist``) is served by a proxy of the host's that *listens on the box's
own loopback*: a listening socket created while one thread of the host process has joined the
box's network namespace (``setns``) stays in that namespace, and the proxy accepts from it
in the host's event loop and connects out from the host's namespace. Nothing in the box gains
a route anywhere; what it can reach is one port of its ``127.0.0.1``, answered by the proxy.

Both need root (``CAP_SYS_ADMIN`` for ``setns`` and ``unshare``), which the rootfs provider
needs anyway and a local Docker daemon's containers are reached with (``/proc/PID/ns/net``
of the container's init). Each runs in a thread of its own, which leaves the namespace it
joined before it ends, so no other thread of the process ever changes namespace.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import struct
import threading
from collections.abc import Callable
from typing import TypeVar

from palaestra.errors import SandboxFailure

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
_IFREQ = struct.Struct("16sH22x")

T = TypeVar("T")


def new_namespace() -> int:
    """A new network namespace with ``lo`` up and nothing else: an open descriptor of it
    (the namespace lives while it is open; ``/proc/PID/fd/N`` names it to ``nsenter``)."""

    def make() -> int:
        _call("unshare", CLONE_NEWNET)
        _loopback_up()
        return os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)

    return _in_thread(make)


def listen_in(namespace: str, port: int) -> socket.socket:
    """A TCP socket listening on ``127.0.0.1:port`` in the network namespace at the path
    ``namespace`` (``/proc/PID/ns/net``, ``/proc/PID/fd/N``); ``SandboxFailure`` when it
    cannot be joined or the port is taken."""

    def make() -> socket.socket:
        target = os.open(namespace, os.O_RDONLY | os.O_CLOEXEC)
        try:
            _call("setns", target, CLONE_NEWNET)
        finally:
            os.close(target)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", port))
            listener.listen(64)
            listener.setblocking(False)
        except OSError:
            listener.close()
            raise
        return listener

    return _in_thread(make)


def _in_thread(work: Callable[[], T]) -> T:
    """``work`` in a fresh thread that joins the host's network namespace again before it
    ends; its result, or a ``SandboxFailure`` saying why not."""
    result: list[T] = []
    failure: list[BaseException] = []

    def body() -> None:
        home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        try:
            result.append(work())
        except BaseException as error:
            failure.append(error)
        finally:
            try:
                _call("setns", home, CLONE_NEWNET)
            except OSError as error:  # the thread must not outlive a foreign namespace
                failure.append(error)
                os.close(home)
                os._exit(70)
            os.close(home)

    thread = threading.Thread(target=body, name="palaestra-netns", daemon=True)
    thread.start()
    thread.join()
    if failure:
        error = failure[0]
        if isinstance(error, SandboxFailure):
            raise error
        raise SandboxFailure(f"cannot reach the box's network namespace: {error}") from None
    return result[0]


def _call(name: str, *arguments: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*arguments) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{name}: {os.strerror(number)}")


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        name = b"lo"
        try:
            flags = _IFREQ.unpack(fcntl.ioctl(probe, SIOCGIFFLAGS, _IFREQ.pack(name, 0)))[1]
            fcntl.ioctl(probe, SIOCSIFFLAGS, _IFREQ.pack(name, flags | IFF_UP))
        except OSError as error:
            raise OSError(error.errno or errno.EIO, f"cannot bring lo up: {error}") from None
