"""The real machines of the Harbor tests (rootfs over the offline Debian base), for the
harness agents' boxes."""

from tests.environment.kinds.harbor.conftest import (  # noqa: F401 (fixtures)
    base_tar,
    default_rootfs,
    layer_cache,
    runtime,
)
