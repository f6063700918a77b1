"""A validated instance as a Harbor task folder (the files and their text).

The machine (``environment/Dockerfile``) is Debian's package moved out of site-packages into
``/testbed/<pkg>``, a git repository whose only commit already holds the bug: ``git diff`` and
``git log`` show nothing, and the original text is nowhere in the image (the bug's patch is
applied to the staged tree, re-staged, and the staged original pruned; dpkg's checksums of the
package are removed). Every step but the last two is the same text for every task of a package,
so an image builder reuses those layers; the per-task layer holds one blob, the trees and the
index. Git compares only mtimes and sizes (``core.checkStat minimal``): each container mounts the
files on a new device, which would otherwise make every ``git status`` re-read the whole tree.

``tests/test.sh`` first restores the test files (and the conftest.py files above them) from git's
objects by their hash, so an edited test cannot pass, then runs FAIL_TO_PASS and PASS_TO_PASS:
the reward is 1 when all pass, else 0, written beside and then moved (a crashed check leaves no
reward: an error, not a 0).
"""

from __future__ import annotations

import hashlib
import json
import re
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


TEST_SCRIPT = """\
#!/bin/bash
# The reward: the package's own tests. FAIL_TO_PASS must now pass and PASS_TO_PASS still pass.
# The test files are first restored from git's objects by hash (an edited test cannot pass).
# Written beside, then moved: a crashed check leaves no reward (an error, not 0).
set -uo pipefail
mkdir -p /logs/verifier
cd /testbed
reward=1
while read -r blob path; do
    if git cat-file blob "$blob" > "$path.restored" 2>/dev/null; then
        mv -f "$path.restored" "$path"
    else
        rm -f "$path.restored"
        echo "cannot restore $path from git object $blob: the repository was damaged"
        reward=0
    fi
done < <(python3 -c 'import json; [print(b, p) for p, b in \
json.load(open("/tests/config.json"))["test_files"].items()]')
if [ "$reward" = 1 ]; then
    python3 -c 'import json; c = json.load(open("/tests/config.json")); \
[print(n) for n in c["FAIL_TO_PASS"] + c["PASS_TO_PASS"]]' > /tmp/node_ids
    mapfile -t ids < /tmp/node_ids
    python3 -m pytest -p no:cacheprovider --rootdir=/testbed -q -rfE "${ids[@]}"
    status=$?
    [ "$status" = 0 ] || reward=0
fi
echo "$reward" > /logs/verifier/reward.txt.partial
mv /logs/verifier/reward.txt.partial /logs/verifier/reward.txt
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
        tests={"config.json": json.dumps(swebench_fields(record), indent=1) + "\n"},
        solve_script=solve_script(record["fix_patch"]),
    )


def swebench_fields(record: Mapping[str, Any]) -> dict[str, Any]:
    """``tests/config.json``: SWE-bench's field names, plus the test files' git objects."""
    info = PACKAGES[record["package"]]
    return {
        "instance_id": record["instance_id"],
        "repo": info["repo"],
        "package": info["deb"],
        "version": record["version"],
        "FAIL_TO_PASS": record["FAIL_TO_PASS"],
        "PASS_TO_PASS": record["PASS_TO_PASS"],
        "test_files": record["test_files"],
    }


def write_instance(record: Mapping[str, Any], path: Path) -> Path:
    """Write the folder of ``record`` at ``path`` (which must not exist), with its patch."""
    root = write_task(task_folder(record), path)
    (root / "environment" / BUG_PATCH).write_text(record["bug_patch"], encoding="utf-8")
    return root
