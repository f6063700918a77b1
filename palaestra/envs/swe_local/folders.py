"""A validated instance as a Harbor task folder (the files and their text).

The machine (``environment/Dockerfile``) is Debian's package moved out of site-packages into
``/testbed/<pkg>``, a git repository whose only commit already holds the bug: ``git diff`` and
``git log`` show nothing, and the original text is nowhere in the image (the bug's patch is
applied to the staged tree, re-staged, and the staged original pruned; dpkg's checksums of the
package are removed). Every step but the last two is the same text for every task of a package,
so an image builder reuses those layers; the per-task layer holds one blob, the trees and the
index. Git compares only mtimes and sizes (``core.checkStat minimal``): each container mounts the
files on a new device, which would otherwise make every ``git status`` re-read the whole tree.

``tests/test.sh`` (with ``tests/verify.py``, the text of ``verifier.py``) verifies in a state the
agent's extra files cannot steer: ``/testbed`` is put back to the base commit's tree (its id is
in ``tests/config.json``; read from git's objects as an unprivileged uid with no configuration,
every object checked against its id): untracked files removed, test files restored, the agent's
changes to tracked files kept. FAIL_TO_PASS and PASS_TO_PASS then run as that uid, and each
one's outcome is read from pytest's JUnit report: the reward is 1 when all pass, else 0, written
by root beside and then moved (a crashed check leaves no reward: an error, not a 0).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from palaestra.wire.harbor import (
    AgentConfig,
    EnvironmentConfig,
    PackageInfo,
    TaskConfig,
    TaskFolder,
    VerifierConfig,
    write_task,
)

PACKAGES: dict[str, dict[str, str]] = {
    "sympy": {"deb": "python3-sympy", "repo": "sympy/sympy", "license": "BSD-3-Clause"},
    "networkx": {"deb": "python3-networkx", "repo": "networkx/networkx", "license": "BSD-3-Clause"},
    "mpmath": {"deb": "python3-mpmath", "repo": "mpmath/mpmath", "license": "BSD-3-Clause"},
}
BUG_PATCH = "bug.patch"
FIX_MARKER = "PALAESTRA_FIX"


def dockerfile_prefix(package: str) -> str:
    """The steps shared by every task of ``package`` (identical text: cached layers)."""
    deb = PACKAGES[package]["deb"]
    return (
        "# The machine: Debian's python3 and the package's own release, moved out of\n"
        "# site-packages into /testbed (a git repository), where the agent fixes the bug.\n"
        "# No copy of the original release stays: apt's downloads and lists are removed, and\n"
        "# so is the local Debian archive an offline base image carries (/opt/palaestra).\n"
        "FROM debian:bookworm-slim\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends python3 "
        f"python3-pytest {deb} git patch && rm -rf /var/lib/apt/lists/* \\\n"
        "    /var/cache/apt/archives/*.deb /opt/palaestra\n"
        f"RUN mkdir /testbed && mv /usr/lib/python3/dist-packages/{package} /testbed/{package} \\\n"
        f"    && rm -f /var/lib/dpkg/info/{deb}.md5sums \\\n"
        "    && printf '__pycache__/\\n*.pyc\\n' > /testbed/.gitignore \\\n"
        "    && git config --system user.name palaestra \\\n"
        "    && git config --system user.email palaestra@localhost \\\n"
        "    && git config --system gc.auto 0 \\\n"
        "    && git config --system core.checkStat minimal \\\n"
        "    && git config --system core.trustctime false \\\n"
        "    && cd /testbed && git init -q && git add -A\n"
        "ENV PYTHONPATH=/testbed\n"
        "WORKDIR /testbed\n"
    )


def dockerfile(package: str, mutated_file: str) -> str:
    """The whole Dockerfile: the shared prefix, then the bug (one patch, committed as base)."""
    stem = Path(mutated_file).stem
    cached = f"{Path(mutated_file).parent}/__pycache__/{stem}.cpython-*.pyc"
    return dockerfile_prefix(package) + (
        f"COPY {BUG_PATCH} /tmp/{BUG_PATCH}\n"
        f"RUN patch -s -p1 < /tmp/{BUG_PATCH} && rm /tmp/{BUG_PATCH} && rm -f {cached} \\\n"
        f"    && git add -- {mutated_file} && git commit -qm base && git prune --expire=now\n"
    )


def git_blob(text: bytes) -> str:
    """Git's object id of a file with content ``text``."""
    return hashlib.sha1(b"blob %d\0" % len(text) + text).hexdigest()


VERIFIER = Path(__file__).with_name("verifier.py")
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


def solve_script(fix_patch: str) -> str:
    """The oracle: the reverse of the bug's patch."""
    if FIX_MARKER in fix_patch:
        raise ValueError(f"the patch contains {FIX_MARKER}: cannot write solve.sh")
    return (
        "#!/bin/bash\n"
        "# The oracle: the reverse of the bug's patch.\n"
        "set -euo pipefail\n"
        "cd /testbed\n"
        f"patch -p1 <<'{FIX_MARKER}'\n{fix_patch}{FIX_MARKER}\n"
    )


def instruction(record: Mapping[str, Any]) -> str:
    """The issue, as a user would file it, and where the repository is."""
    package = record["package"]
    failing = record["FAIL_TO_PASS"]
    first = failing[0]
    message = record["messages"].get(first) or {}
    test_file, _, test_name = first.partition("::")
    module = record["module"].removesuffix(".py").replace("/", ".")
    function = record["function"]
    error = str(message.get("error", "")).strip()
    first_line = error.splitlines()[0] if error else ""
    name = first_line.split(":", 1)[0] if ":" in first_line else ""
    raised = name.rsplit(".", 1)[-1] if re.fullmatch(r"[A-Za-z_][\w.]*", name) else ""
    wrong = raised in ("", "AssertionError", "Failed")  # Failed: pytest's DID NOT RAISE
    symptom = "gives a wrong result" if wrong else f"raises `{raised}`"
    lines = [
        f"# `{function.rsplit('.', 1)[-1]}` in `{module}` {symptom}",
        "",
        f"Something is wrong with `{module}.{function}`: the package's own test "
        f"`{test_name}` in `{test_file}` fails.",
        "",
    ]
    statement = str(message.get("statement", "")).strip()
    if statement:
        # No language tag: a formatter would rewrite a tagged block, and this is the test's
        # own line, verbatim.
        lines += ["The check that fails:", "", "```", statement, "```", ""]
    if error:
        kept = [line for line in error.splitlines() if "Use -v to get" not in line]
        shown = re.sub(r" at 0x[0-9a-f]+>", ">", "\n".join(kept[:15]))
        lines += ["What happens instead:", "", "```", shown, "```", ""]
    if len(failing) > 1:
        others = ", ".join(f"`{node.partition('::')[2]}`" for node in failing[1:6])
        more = " and more" if len(failing) > 6 else ""
        lines += [f"Other tests in that file fail too: {others}{more}.", ""]
    lines += [
        "---",
        "",
        f"The repository is at `/testbed`: the `{package}` package (python3 imports it from "
        "there). Fix the bug in the library's code so that this test passes without breaking "
        "the others. You can run the tests with "
        f"`python3 -m pytest -p no:cacheprovider {test_file}`. Do not change the tests.",
        "",
    ]
    return "\n".join(lines)


def task_folder(record: Mapping[str, Any]) -> TaskFolder:
    """The Harbor folder of one validated instance (``record`` as ``generate`` writes it)."""
    package = record["package"]
    info = PACKAGES[package]
    config = TaskConfig(
        task=PackageInfo(name=f"palaestra/{record['instance_id']}"),
        metadata={
            "author_name": "palaestra",
            "category": "swe_local",
            "difficulty": record["difficulty"],
            "tags": ["swe", "python", package, record["kind"]],
            "package": info["deb"],
            "package_version": record["version"],
            "license": info["license"],
            "mutation": record["mutation"],
            "mutation_kind": record["kind"],
            "seed": record["seed"],
        },
        source=f"palaestra:swe_local:{info['deb']}={record['version']}",
        verifier=VerifierConfig(timeout_sec=300.0),
        agent=AgentConfig(timeout_sec=1800.0),
        environment=EnvironmentConfig(
            build_timeout_sec=600.0,
            cpus=1,
            memory_mb=2048,
            storage_mb=4096,
            network_mode="no-network",
            workdir="/testbed",
        ),
    )
    return TaskFolder(
        config=config,
        instruction=instruction(record),
        dockerfile=dockerfile(package, record["module"]),
        test_script=TEST_SCRIPT,
        tests=verifier_files(record),
        solve_script=solve_script(record["fix_patch"]),
    )


def verifier_files(record: Mapping[str, Any]) -> dict[str, str]:
    """The files of ``tests/`` beside ``test.sh``: ``config.json`` and ``verify.py``."""
    return {
        "config.json": json.dumps(swebench_fields(record), indent=1) + "\n",
        "verify.py": VERIFIER.read_text(encoding="utf-8"),
    }


def rewrite_tests(folder: Path, record: Mapping[str, Any]) -> None:
    """Replace the ``tests/`` of the task folder ``folder`` by the current verifier's for
    ``record`` (the rest of the folder, the task itself, is left as it is)."""
    tests = folder / "tests"
    shutil.rmtree(tests)
    tests.mkdir()
    script = tests / "test.sh"
    script.write_text(TEST_SCRIPT, encoding="utf-8")
    script.chmod(0o755)
    for name, text in verifier_files(record).items():
        (tests / name).write_text(text, encoding="utf-8")


def swebench_fields(record: Mapping[str, Any]) -> dict[str, Any]:
    """``tests/config.json``: SWE-bench's field names, plus the test files' git objects and
    the id of the base commit's tree (what the verifier puts ``/testbed`` back to)."""
    info = PACKAGES[record["package"]]
    return {
        "instance_id": record["instance_id"],
        "repo": info["repo"],
        "package": info["deb"],
        "version": record["version"],
        "FAIL_TO_PASS": record["FAIL_TO_PASS"],
        "PASS_TO_PASS": record["PASS_TO_PASS"],
        "test_files": record["test_files"],
        "base_tree": record["base_tree"],
    }


def write_instance(record: Mapping[str, Any], path: Path) -> Path:
    """Write the folder of ``record`` at ``path`` (which must not exist), with its patch."""
    root = write_task(task_folder(record), path)
    (root / "environment" / BUG_PATCH).write_text(record["bug_patch"], encoding="utf-8")
    return root
