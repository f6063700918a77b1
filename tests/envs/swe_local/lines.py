"""A small, valid manifest line for the tests (``line(**changes)``, sealed)."""

from __future__ import annotations

from typing import Any

from palaestra.envs.swe_local.flags import difficulty
from palaestra.envs.swe_local.manifest import sealed
from palaestra.envs.swe_local.worker import patch

BEFORE = "def half(n):\n    return n // 2\n"
AFTER = "def half(n):\n    return n % 2\n"


def line(**changes: Any) -> dict[str, Any]:
    gold = patch("mpmath/demo.py", AFTER, BEFORE)
    base: dict[str, Any] = {
        "instance_id": "mpmath__demo__half__0123abcd",
        "repo": "mpmath",
        "language": "python",
        "source": "python3-mpmath",
        "version": "1.2.1-2",
        "kind": "arith",
        "kinds": ["arith"],
        "files": ["mpmath/demo.py"],
        "functions": ["half"],
        "bug": patch("mpmath/demo.py", BEFORE, AFTER),
        "patch": gold,
        "FAIL_TO_PASS": ["mpmath/tests/test_demo.py::test_half"],
        "PASS_TO_PASS": ["mpmath/tests/test_demo.py::test_other"],
        "statement": (
            "# `half` in `mpmath.demo` gives a wrong result\n\nSomething is wrong with "
            "`mpmath.demo.half`: the package's own test `test_half` in "
            "`mpmath/tests/test_demo.py` fails.\n\n```\nassert half(4) == 2\n```\n"
        ),
        "difficulty": difficulty(gold),
        "flags": {
            "flaky": False,
            "slow": False,
            "duplicate_of": None,
            "leaks_fix": False,
            "off_target": False,
        },
        "test_seconds": 0.5,
        "seed": 0,
        "base_tree": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
        "mutation": "mpmath/demo.py:arith@2:12",
    }
    return sealed(base | changes)
