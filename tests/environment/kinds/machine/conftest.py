"""Machines over boxes: the rootfs provider's fixtures, and no process left behind."""

from tests.sandbox.conftest import _no_leaks  # noqa: F401 (autouse: no process left behind)
from tests.sandbox.machines.conftest import (  # noqa: F401 (fixtures)
    base_tar,
    context,
    layer_cache,
    provider,
    runtime,
)
