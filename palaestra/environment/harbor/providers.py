"""The sandbox providers by name: built-ins and the ``palaestra.sandboxes`` entry points.

The same ``Registry`` as environments, agents and model backends; nothing is imported until a
provider is asked for. ``rootfs`` (daemonless: layers as directories, an overlay per box, under
bubblewrap) is the default because it needs nothing running; ``docker`` needs a daemon.
"""

from __future__ import annotations

from palaestra._util.plugins import Registry
from palaestra.errors import ConfigError
from palaestra.sandbox.machines.provider import Provider

ENTRY_POINT_GROUP = "palaestra.sandboxes"
DEFAULT = "rootfs"
BUILTINS = {
    "rootfs": "palaestra.sandbox.machines.rootfs:RootfsProvider",
    "docker": "palaestra.sandbox.machines.docker:DockerProvider",
}


def _provider_class(value: object, where: str) -> type[Provider]:
    if isinstance(value, type) and issubclass(value, Provider):
        return value
    raise ConfigError(f"{where} is not a Provider subclass")


def providers() -> Registry[type[Provider]]:
    return Registry("sandbox", ENTRY_POINT_GROUP, BUILTINS, _provider_class)


def open_provider(name: str) -> Provider:
    """A new provider called ``name``; a one-line ``ConfigError`` naming the known ones."""
    return providers().load(name).value()
