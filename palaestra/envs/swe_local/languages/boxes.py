"""Go and Rust as languages of the set (``languages.Language``): the machine, the verifier,
the instruction's footer, the test command and its outcomes, the mutations.

The machine (``environment/Dockerfile``) installs Debian's toolchain and the repository's
package, copies the source to ``/testbed`` and removes Debian's copy (the original text is
nowhere in the image), then makes ``/testbed`` a git repository whose only commit holds the
bug, as the Python tasks' machine does (``folders.py``). Every step but the last two is the
same text for every task of a repository (shared layers).

``tests/test.sh`` runs ``tests/verify_native.py`` (with ``tests/verify.py``, the text of
``verifier.py``, whose steps it uses): ``/testbed`` put back to the base commit's tree with the
agent's changes to tracked non-test files, the tests run as an unprivileged uid with their
output read by root from a pipe, and each listed test's own outcome the reward.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from palaestra.envs.swe_local.folders import APT_CLEAN, GIT_SETUP, bug_steps
from palaestra.envs.swe_local.languages import Repo as SeamRepo
from palaestra.envs.swe_local.languages import SourceMutation
from palaestra.envs.swe_local.languages.common import Repo
from palaestra.envs.swe_local.languages.verify_native import (
    CARGO_CONFIG,
    GO_ENV,
    parse_go,
    parse_libtest,
)

NATIVE = Path(__file__).with_name("verify_native.py")
VERIFIER = Path(__file__).resolve().parent.parent / "verifier.py"
GITIGNORE = "/target/\n"
"""A Rust ``/testbed/.gitignore`` (the crate's own is replaced: it ignores ``Cargo.lock``)."""


def repos(language: str) -> dict[str, Repo]:
    """The repositories of ``language`` (``go`` or ``rust``)."""
    from palaestra.envs.swe_local.languages import go, rust  # they import this module

    return go.REPOS if language == "go" else rust.REPOS


def repo_of(line: Mapping[str, Any]) -> Repo:
    """The repository a line is of; ``KeyError`` for one this module does not know."""
    return repos(str(line["language"]))[str(line["repo"])]


def dockerfile_prefix(language: str, repo: Repo) -> str:
    """The steps shared by every task of ``repo`` (identical text: cached layers)."""
    if language == "go":
        toolchain = "golang-go"
        setup = (
            f"RUN cp -rL {repo.source} /testbed && rm -rf {repo.source} \\\n"
            f"    && rm -f /var/lib/dpkg/info/{repo.deb}.md5sums \\\n"
            "    && (test -e /testbed/go.mod || printf 'module %s\\n\\ngo 1.19\\n' "
            f"{repo.module} > /testbed/go.mod) \\\n"
        )
        env = " ".join(f"{key}={value}" for key, value in GO_ENV.items())
    else:
        toolchain = "cargo rustc"
        config = CARGO_CONFIG.replace("\n", "\\n")
        setup = (
            f"RUN mkdir -p /root/.cargo && printf '{config}' > /root/.cargo/config.toml \\\n"
            f"    && cp -rL {repo.source} /testbed && rm -rf {repo.source} \\\n"
            f"    && rm -f /var/lib/dpkg/info/{repo.deb}.md5sums \\\n"
            f"    && printf '{GITIGNORE.strip()}\\n' > /testbed/.gitignore \\\n"
            "    && cd /testbed && cargo generate-lockfile --offline \\\n"
        )
        env = "CARGO_HOME=/root/.cargo CARGO_TERM_COLOR=never"
    return (
        "# The machine: Debian's toolchain and the repository's own release, copied to\n"
        "# /testbed (a git repository), where the agent fixes the bug. No copy of the\n"
        "# original release stays: Debian's copy, apt's downloads and lists are removed,\n"
        "# and so is the local Debian archive an offline base image carries (/opt/palaestra).\n"
        "FROM debian:bookworm-slim\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends "
        f"{' '.join([toolchain, repo.deb, *repo.extras])} git patch{APT_CLEAN}"
        f"{setup}{GIT_SETUP}"
        "    && cd /testbed && git init -q && git add -A\n"
        f"ENV {env}\n"
        "WORKDIR /testbed\n"
    )


def dockerfile(line: Mapping[str, Any]) -> str:
    """The whole Dockerfile: the shared prefix, then the bug (one patch, committed as base)."""
    files = [str(path) for path in line["files"]]
    return dockerfile_prefix(str(line["language"]), repo_of(line)) + bug_steps(files)


TEST_SCRIPT = """\
#!/bin/bash
# The reward: the repository's own tests. Every FAIL_TO_PASS must now pass and every
# PASS_TO_PASS still pass, each read from the test runner's own report of it, never from an
# exit status.
#
# This runs as root once the agent's processes are gone. Our own steps
# (/tests/verify_native.py) run with python3 -I -S and read the repository's objects through
# git as the test uid with no configuration; the tests (the agent's code) run as the test uid,
# whose output root reads from a pipe: it cannot write the report or the reward. A verifier
# that crashes writes no reward: an error, not a 0.
set -uo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8
VERIFY=(python3 -I -S /tests/verify_native.py)
TEST_UID=65534
[ "$(id -u)" = 0 ] || { echo "tests/test.sh must run as root"; exit 1; }
kill_test_uid() {  # every process of the test uid (kill -1 reaches all that uid may signal)
    setpriv --reuid=$TEST_UID --regid=$TEST_UID --clear-groups --no-new-privs \\
        bash --norc --noprofile -c 'kill -KILL -1' 2>/dev/null
}
kill_test_uid

mkdir -p /logs/verifier && chown root:root /logs/verifier && chmod 755 /logs/verifier
scratch=/logs/verifier/scratch
rm -rf "$scratch" && mkdir -m 755 "$scratch" || exit 1
trap 'rm -rf "$scratch"' EXIT

# /testbed as the base commit left it, plus the agent's changes to its tracked non-test files.
"${VERIFY[@]}" prepare "$scratch"
case $? in
    0) ;;
    3) exit 0 ;;  # the agent left no usable repository: reward 0 written, with the reason
    *) exit 1 ;;
esac

# The tests, as the test uid, in a clean environment (caches in its own directory); root
# keeps their output, read from a pipe.
out="$scratch/out"
mkdir -m 700 "$out" "$out/tmp" "$out/home" && chown -R "$TEST_UID:$TEST_UID" "$out" || exit 1
mapfile -t command < <("${VERIFY[@]}" command "$out") && chown -R "$TEST_UID:$TEST_UID" "$out"
cd /testbed || exit 1
timeout -k 5 200 setpriv --reuid=$TEST_UID --regid=$TEST_UID --clear-groups --no-new-privs \\
    "${command[@]}" 2>&1 | head -c 67108864 > "$scratch/report"
echo "test run exit status ${PIPESTATUS[0]} (not the reward)"

kill_test_uid  # nothing of the tests outlives them

# Each test's own outcome; written beside, then moved, by root.
"${VERIFY[@]}" judge "$scratch/report"
"""


def config_json(line: Mapping[str, Any]) -> dict[str, Any]:
    """``tests/config.json``: SWE-bench's names plus what the verifier needs."""
    return {
        "instance_id": line["instance_id"],
        "repo": repo_of(line).upstream,
        "package": line["source"],
        "version": line["version"],
        "language": line["language"],
        "FAIL_TO_PASS": line["FAIL_TO_PASS"],
        "PASS_TO_PASS": line["PASS_TO_PASS"],
        "files": line["files"],
        "base_tree": line["base_tree"],
    }


def instruction_footer(line: Mapping[str, Any]) -> str:
    """Where the repository is and how its tests run (after the statement)."""
    repo = repo_of(line)
    if line["language"] == "go":
        packages = sorted({str(test).rpartition("/")[0] for test in line["FAIL_TO_PASS"]})
        local = [
            "./" + package.removeprefix(repo.module).strip("/") if package != repo.module else "."
            for package in packages
        ]
        what = f"the Go module `{repo.module}`"
        how = f"`go test {' '.join(local)}`"
    else:
        what, how = f"the Rust crate `{repo.module}`", "`cargo test --offline`"
    return (
        f"The repository is at `/testbed` ({what}). Fix the bug in the library's code so that "
        f"these tests pass without breaking the others. You can run them with {how}. Do not "
        "change the tests.\n"
    )


class NativeLanguage:
    """Go or Rust as ``languages.Language`` (the set's seam), over this package's parts."""

    def __init__(self, name: str) -> None:
        self.name = name

    def repos(self) -> Mapping[str, SeamRepo]:
        return {
            name: SeamRepo(
                name, repo.deb, repo.upstream, repo.license, repo.source, extras=repo.extras
            )
            for name, repo in repos(self.name).items()
        }

    def dockerfile_prefix(self, repo: str) -> str:
        return dockerfile_prefix(self.name, repos(self.name)[repo])

    def dockerfile(self, line: Mapping[str, Any]) -> str:
        return dockerfile(line)

    def test_script(self, line: Mapping[str, Any]) -> str:
        return TEST_SCRIPT

    def verifier_files(self, line: Mapping[str, Any]) -> dict[str, str]:
        """``tests/`` beside ``test.sh``: the task's settings, ``verify.py`` (the text of
        ``verifier.py``, whose steps the other uses) and ``verify_native.py``."""
        return {
            "config.json": json.dumps(config_json(line), indent=1) + "\n",
            "verify.py": VERIFIER.read_text(encoding="utf-8"),
            "verify_native.py": NATIVE.read_text(encoding="utf-8"),
        }

    def instruction_footer(self, line: Mapping[str, Any]) -> str:
        return instruction_footer(line)

    def test_command(self, ids: Sequence[str]) -> list[str]:
        """The machine's run of ``ids`` (Go: their packages and names; Rust: the crate)."""
        if self.name == "go":
            packages = sorted({test.rpartition("/")[0] for test in ids})
            names = sorted({re.escape(test.rpartition("/")[2]) for test in ids})
            return ["go", "test", "-json", "-count=1", "-run", f"^({'|'.join(names)})$", *packages]
        return ["cargo", "test", "--offline", "--frozen", "--no-fail-fast", "--tests"]

    def outcomes(self, report: bytes, ids: Sequence[str]) -> dict[str, str]:
        """Each of ``ids`` found in the runner's output: ``passed``, ``failed``, ``skipped``."""
        text = report.decode("utf-8", "replace")
        if self.name == "go":
            found = parse_go(text).outcomes
        else:
            found = parse_libtest(text, ids[0].split("::", 1)[0] if ids else "").outcomes
        return {test: found[test] for test in ids if test in found}

    def mutations(self, path: str, source: str) -> list[SourceMutation]:
        """Every mutation of every function of the file (``treesitter.py``)."""
        from palaestra.envs.swe_local.languages import treesitter

        grammar = treesitter.GO if self.name == "go" else treesitter.RUST
        data = source.encode()
        return [
            SourceMutation(
                kind=mutation.kind,
                function=function.name,
                key=mutation.key,
                text=treesitter.apply(data, mutation).decode(),
            )
            for function in treesitter.functions(grammar, data)
            for mutation in treesitter.mutations(grammar, data, function)
        ]
