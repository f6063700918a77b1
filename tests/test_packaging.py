"""What the built distribution carries beyond the modules: the PEP 561 ``py.typed`` marker."""

from __future__ import annotations

import tomllib
from pathlib import Path

import palaestra

ROOT = Path(__file__).resolve().parent.parent


def shipped_package_data(package: str) -> set[Path]:
    """The files ``[tool.setuptools.package-data]`` puts in the wheel for ``package``."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"].get("package-data", {}).get(package, [])
    directory = ROOT.joinpath(*package.split("."))
    return {path.relative_to(directory) for pattern in patterns for path in directory.glob(pattern)}


def test_the_package_ships_its_py_typed_marker_so_type_checkers_read_its_annotations() -> None:
    assert Path(palaestra.__file__).parent == ROOT / "palaestra"
    assert Path("py.typed") in shipped_package_data("palaestra")


def test_the_package_ships_the_catalogue_that_palaestra_envs_reads() -> None:
    assert Path("catalogue.toml") in shipped_package_data("palaestra.envs")
