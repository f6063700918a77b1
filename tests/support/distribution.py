"""A real installed distribution, written into a directory on ``sys.path`` by a test.

``importlib.metadata`` finds it exactly as it finds a pip-installed package: a
``<name>-<version>.dist-info`` with ``METADATA`` and ``entry_points.txt`` beside the modules.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


def write_distribution(
    root: Path,
    name: str,
    *,
    modules: Mapping[str, str],
    entry_points: Mapping[str, Mapping[str, str]],
    version: str = "0.1",
) -> None:
    """Write ``modules`` (relative path -> source) and a dist-info declaring ``entry_points``
    (group -> {name: "module:attr"}) into ``root``."""
    for relative, source in modules.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )
    sections = [
        f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in points.items())
        for group, points in entry_points.items()
    ]
    (info / "entry_points.txt").write_text("\n".join(sections), encoding="utf-8")
    importlib.invalidate_caches()


@contextmanager
def on_sys_path(root: Path) -> Iterator[Path]:
    """``root`` first on ``sys.path``; afterwards gone again, with the modules imported from it."""
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    try:
        yield root
    finally:
        sys.path.remove(str(root))
        for name, module in list(sys.modules.items()):
            where = getattr(module, "__file__", None) or ""
            if where.startswith(str(root)):
                del sys.modules[name]
        importlib.invalidate_caches()
