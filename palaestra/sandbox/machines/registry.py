"""Sandbox providers by name: the built-ins and the ``palaestra.sandboxes`` entry points.

A provider plug-in is a ``Provider`` subclass, registered as::

    [project.entry-points."palaestra.sandboxes"]
    podman = "my_package.machines:PodmanProvider"

The built-ins are named by import path, so nothing is imported until asked for (``docker``
needs no Docker client to list, ``rootfs`` no bubblewrap).
"""

from __future__ import annotations

from typing import Any

from palaestra._util.plugins import Registry
from palaestra.errors import ConfigError
from palaestra.sandbox.machines.provider import Provider

SANDBOX_GROUP = "palaestra.sandboxes"
"""The entry-point group a package registers its sandbox providers under."""


def _provider_class(value: object, where: str) -> type[Provider]:
    if not (isinstance(value, type) and issubclass(value, Provider)):
        raise ConfigError(f"{where} is a {type(value).__name__}, not a sandbox Provider class")
    return value


PROVIDERS: Registry[type[Provider]] = Registry(
    "sandbox provider",
    SANDBOX_GROUP,
    {
        "rootfs": "palaestra.sandbox.machines.rootfs:RootfsProvider",
        "docker": "palaestra.sandbox.machines.docker:DockerProvider",
    },
    _provider_class,
)
"""Every sandbox provider by name (``PROVIDERS.load("rootfs").value`` is the class)."""


def make_provider(name: str, /, **options: Any) -> Provider:
    """The provider called ``name``, built with ``options``; a one-line ``ConfigError`` when
    there is none or it does not take them."""
    plugin = PROVIDERS.load(name)
    try:
        return plugin.value(**options)
    except TypeError as error:
        raise ConfigError(f"sandbox provider '{name}' ({plugin.source}): {error}") from None
