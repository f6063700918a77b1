"""Python: Debian's ``python3-*`` packages, which ship their test suites inside the package.

The machine (``dockerfile``) is Debian's package moved out of site-packages into
``/testbed/<pkg>``, a git repository whose only commit already holds the bug: ``git diff`` and
``git log`` show nothing, and the original text is nowhere in the image (the bug's patch is
applied to the staged tree, re-staged, and the staged original pruned; dpkg's checksums of the
package are removed). Every step but the last two is the same text for every task of a
repository, so an image builder reuses those layers; the per-task layer holds one blob, the
trees and the index. Git compares only mtimes and sizes (``core.checkStat minimal``): each
container mounts the files on a new device, which would otherwise make every ``git status``
re-read the whole tree.

``tests/test.sh`` (with ``tests/verify.py``, the text of ``verifier.py``) verifies in a state
the agent's extra files cannot steer: ``/testbed`` is put back to the base commit's tree (its
id is in ``tests/config.json``), FAIL_TO_PASS and PASS_TO_PASS run as an unprivileged uid, and
each one's outcome is read from pytest's JUnit report (see the README).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from palaestra.envs.swe_local.folders import APT_CLEAN, GIT_SETUP, bug_steps
from palaestra.envs.swe_local.languages import Repo, SourceMutation
from palaestra.envs.swe_local.mutations import apply, functions, mutations
from palaestra.envs.swe_local.verifier import junit_address, junit_outcomes

REPOS: dict[str, Repo] = {
    repo.name: repo
    for repo in (
        Repo("sympy", "python3-sympy", "sympy/sympy", "BSD-3-Clause", "sympy"),
        Repo("networkx", "python3-networkx", "networkx/networkx", "BSD-3-Clause", "networkx"),
        Repo("mpmath", "python3-mpmath", "mpmath/mpmath", "BSD-3-Clause", "mpmath"),
        Repo("toolz", "python3-toolz", "pytoolz/toolz", "BSD-3-Clause", "toolz"),
        Repo("bs4", "python3-bs4", "launchpad.net/beautifulsoup", "MIT", "bs4"),
        Repo("ecdsa", "python3-ecdsa", "tlsfuzzer/python-ecdsa", "MIT", "ecdsa"),
        Repo("pyflakes", "python3-pyflakes", "PyCQA/pyflakes", "MIT", "pyflakes"),
        Repo("pyfakefs", "python3-pyfakefs", "pytest-dev/pyfakefs", "Apache-2.0", "pyfakefs"),
        Repo(
            "jsonschema", "python3-jsonschema", "python-jsonschema/jsonschema", "MIT", "jsonschema"
        ),
        Repo("hyperlink", "python3-hyperlink", "python-hyper/hyperlink", "MIT", "hyperlink"),
        Repo("isodate", "python3-isodate", "gweis/isodate", "BSD-3-Clause", "isodate"),
        Repo("automat", "python3-automat", "glyph/automat", "MIT", "automat"),
        Repo("nose2", "python3-nose2", "nose-devs/nose2", "BSD-2-Clause", "nose2"),
        Repo("fixtures", "python3-fixtures", "testing-cabal/fixtures", "Apache-2.0", "fixtures"),
        Repo(
            "yaql", "python3-yaql", "openstack/yaql", "Apache-2.0", "yaql", ("python3-testtools",)
        ),
        Repo(
            "multipledispatch",
            "python3-multipledispatch",
            "mrocklin/multipledispatch",
            "BSD-3-Clause",
            "multipledispatch",
        ),
        Repo("pint", "python3-pint", "hgrecco/pint", "BSD-3-Clause", "pint"),
        Repo(
            "geographiclib",
            "python3-geographiclib",
            "geographiclib/geographiclib-python",
            "MIT",
            "geographiclib",
        ),
        Repo("iso8601", "python3-iso8601", "micktwomey/pyiso8601", "MIT", "iso8601"),
        Repo(
            "extras",
            "python3-extras",
            "testing-cabal/extras",
            "MIT",
            "extras",
            ("python3-testtools",),
        ),
    )
}
"""The repositories: ``root`` is the import package, a directory of site-packages."""
SITE = "/usr/lib/python3/dist-packages"
VERIFIER = Path(__file__).parent.parent / "verifier.py"
"""The verifier's own steps (``verifier.py``), shipped in every task as ``tests/verify.py``."""

TEST_SCRIPT = """\
#!/bin/bash
# The reward: the package's own tests. Every FAIL_TO_PASS must now pass and every PASS_TO_PASS
# still pass, each read from pytest's JUnit report, never from an exit status.
#
# This runs as root once the agent's processes are gone. Nothing the agent left runs as root:
# our own steps (/tests/verify.py) run with python3 -I -S (no site, sitecustomize, .pth, user
# site or PYTHON* variables) and read the repository's objects through git as the test uid
# with no configuration; the tests (the agent's code) run as the test uid, which cannot write
# the reward. A verifier that crashes writes no reward: an error, not a 0.
set -uo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8
VERIFY=(python3 -I -S /tests/verify.py)
TEST_UID=65534
[ "$(id -u)" = 0 ] || { echo "tests/test.sh must run as root"; exit 1; }
kill_test_uid() {  # every process of the test uid (kill -1 reaches all that uid may signal)
    setpriv --reuid=$TEST_UID --regid=$TEST_UID --clear-groups --no-new-privs \\
        bash --norc --noprofile -c 'kill -KILL -1' 2>/dev/null
}
kill_test_uid  # nothing of that uid left from before touches what it will read or write

# /logs/verifier is root's alone; the scratch directory (git's, then the tests') is inside it.
mkdir -p /logs/verifier && chown root:root /logs/verifier && chmod 755 /logs/verifier
scratch=/logs/verifier/scratch
rm -rf "$scratch" && mkdir -m 755 "$scratch" || exit 1
trap 'rm -rf "$scratch"' EXIT

# /testbed as the base commit left it, plus the agent's changes to the files it tracked:
# untracked files removed, test files put back (verify.py says how).
"${VERIFY[@]}" prepare "$scratch"
case $? in
    0) ;;
    3) exit 0 ;;  # the agent left no usable repository: reward 0 written, with the reason
    *) exit 1 ;;
esac

# The tests, as the test uid, in a clean environment; the report goes where only it writes.
# -I: no user site, PYTHON* ignored, no cwd on sys.path (pytest's pythonpath puts /testbed
# there); -c /dev/null and --confcutdir: no ini or conftest.py from outside /testbed is read.
mapfile -t ids < <("${VERIFY[@]}" ids)
out="$scratch/out"
mkdir -m 700 "$out" "$out/tmp" && chown "$TEST_UID:$TEST_UID" "$out" "$out/tmp" || exit 1
cd /testbed || exit 1
env -i PATH=/usr/bin:/bin HOME=/nonexistent LANG=C.UTF-8 TMPDIR="$out/tmp" \\
    PYTHONPATH=/testbed PYTHONDONTWRITEBYTECODE=1 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 \\
    timeout -k 5 200 \\
    setpriv --reuid=$TEST_UID --regid=$TEST_UID --clear-groups --no-new-privs \\
    python3 -I -B -m pytest -c /dev/null --rootdir=/testbed --confcutdir=/testbed \\
    -o pythonpath=/testbed -p no:cacheprovider --junitxml="$out/junit.xml" -q -rfE \\
    "${ids[@]}"
echo "pytest exit status $? (not the reward)"

kill_test_uid  # nothing of the tests outlives them

# Each test's own outcome; written beside, then moved, by root.
"${VERIFY[@]}" judge "$out/junit.xml"
"""


def package_of(repo: str) -> str:
    """The import package of ``repo`` (its directory in site-packages and in ``/testbed``):
    the repository's own name when the table does not say otherwise."""
    known = REPOS.get(repo)
    return (known.root if known is not None else "") or repo


class Python:
    """The Python language of the set (``languages.Language``)."""

    name = "python"

    def repos(self) -> Mapping[str, Repo]:
        return REPOS

    def dockerfile_prefix(self, repo: str) -> str:
        """The steps shared by every task of ``repo`` (identical text: cached layers)."""
        deb, package = REPOS[repo].source, package_of(repo)
        installed = " ".join((deb, *REPOS[repo].extras))
        return (
            "# The machine: Debian's python3 and the package's own release, moved out of\n"
            "# site-packages into /testbed (a git repository), where the agent fixes the bug.\n"
            "# No copy of the original release stays: apt's downloads and lists are removed, and\n"
            "# so is the local Debian archive an offline base image carries (/opt/palaestra).\n"
            "FROM debian:bookworm-slim\n"
            "RUN apt-get update && apt-get install -y --no-install-recommends python3 "
            f"python3-pytest {installed} git patch{APT_CLEAN}"
            f"RUN mkdir /testbed && mv {SITE}/{package} /testbed/{package} \\\n"
            f"    && rm -f /var/lib/dpkg/info/{deb}.md5sums \\\n"
            "    && printf '__pycache__/\\n*.pyc\\n' > /testbed/.gitignore \\\n"
            f"{GIT_SETUP}"
            "    && cd /testbed && git init -q && git add -A\n"
            "ENV PYTHONPATH=/testbed\n"
            "WORKDIR /testbed\n"
        )

    def dockerfile(self, line: Mapping[str, Any]) -> str:
        """The prefix, then the bug (one patch, committed as the base)."""
        files = [str(path) for path in line["files"]]
        cached = " ".join(
            f"{Path(path).parent}/__pycache__/{Path(path).stem}.cpython-*.pyc" for path in files
        )
        return self.dockerfile_prefix(str(line["repo"])) + bug_steps(files, f" && rm -f {cached}")

    def test_script(self, line: Mapping[str, Any]) -> str:
        return TEST_SCRIPT

    def verifier_files(self, line: Mapping[str, Any]) -> dict[str, str]:
        """``config.json`` (SWE-bench's field names and the base tree) and ``verify.py``."""
        repo = REPOS[str(line["repo"])]
        config = {
            "instance_id": line["instance_id"],
            "repo": repo.upstream,
            "package": line["source"],
            "version": line["version"],
            "FAIL_TO_PASS": line["FAIL_TO_PASS"],
            "PASS_TO_PASS": line["PASS_TO_PASS"],
            "base_tree": line["base_tree"],
        }
        return {
            "config.json": _json(config),
            "verify.py": VERIFIER.read_text(encoding="utf-8"),
        }

    def instruction_footer(self, line: Mapping[str, Any]) -> str:
        test_file = str(line["FAIL_TO_PASS"][0]).partition("::")[0]
        return (
            f"The repository is at `/testbed`: the `{package_of(str(line['repo']))}` package "
            "(python3 imports it from there). Fix the bug in the library's code so that this "
            "test passes without breaking the others. You can run the tests with "
            f"`python3 -m pytest -p no:cacheprovider {test_file}`. Do not change the tests.\n"
        )

    def test_command(self, ids: Sequence[str]) -> list[str]:
        return ["python3", "-m", "pytest", "-p", "no:cacheprovider", "--junitxml=report.xml", *ids]

    def outcomes(self, report: bytes, ids: Sequence[str]) -> dict[str, str]:
        """Each id's outcome in pytest's JUnit report (``missing`` when it is not there)."""
        cases = junit_outcomes(report)
        names = {"failure": "failed", "skipped": "skipped", "error": "error"}
        found = {}
        for node in ids:
            outcome = cases.get(junit_address(node), "missing")
            found[node] = names.get(outcome, outcome)
        return found

    def mutations(self, path: str, source: str) -> list[SourceMutation]:
        """Every mutation of every function of ``source`` (``mutations.py``)."""
        found = []
        for name, node in functions(source):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for mutation in mutations(source, name, node):
                text = apply(source, mutation)
                found.append(SourceMutation(mutation.kind, name, mutation.key, text))
        return found


def _json(value: Any) -> str:
    return json.dumps(value, indent=1) + "\n"


LANGUAGE = Python()
