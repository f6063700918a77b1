"""palaestra._util.moved: old import paths of moved modules keep working, with a warning."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import palaestra
from palaestra._util.moved import MOVED, new_name

PACKAGE = Path(palaestra.__file__).parent


@pytest.mark.parametrize("old", sorted(MOVED))
def test_every_moved_module_is_found_at_its_new_path_and_not_at_its_old(old: str) -> None:
    importlib.import_module(MOVED[old])
    relative = old.removeprefix("palaestra.").replace(".", "/")
    assert not (PACKAGE / f"{relative}.py").exists(), f"{old} exists again: drop its alias"
    assert not (PACKAGE / relative / "__init__.py").exists(), f"{old} exists again"


def test_an_old_path_gives_the_same_module_and_says_where_it_went() -> None:
    code = (
        "import warnings\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    from palaestra.env_client import LocalEnvironmentClient\n"
        "import palaestra.environment.running.client as new\n"
        "assert LocalEnvironmentClient is new.LocalEnvironmentClient\n"
        "print(seen[0].category.__name__, seen[0].message)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "DeprecationWarning palaestra.env_client moved to palaestra.environment.running.client; "
        "the old path goes in the next release"
    )


def test_a_module_inside_a_moved_package_is_the_module_at_its_new_path() -> None:
    assert new_name("palaestra.observe.viewer.app") == "palaestra.viewer.app"
    assert new_name("palaestra.observe.metrics") is None  # not moved
    assert new_name("json") is None
    with pytest.warns(DeprecationWarning, match="palaestra.observe.viewer moved"):
        old = importlib.import_module("palaestra.observe.viewer.app")
    assert old is importlib.import_module("palaestra.viewer.app")


def test_a_module_of_the_kit_moved_into_a_room_is_found_by_its_old_path() -> None:
    assert new_name("palaestra.environment.harbor.tasks") == (
        "palaestra.environment.kinds.harbor.tasks"
    )
    assert new_name("palaestra.environment.base") is None  # the kit's own pieces stay
    with pytest.warns(DeprecationWarning, match="palaestra.environment.registry moved"):
        old = importlib.import_module("palaestra.environment.registry")
    assert old is importlib.import_module("palaestra.environment.finding.registry")
