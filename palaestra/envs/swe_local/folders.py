"""A manifest line as a Harbor task folder, and the folders' cache.

The folder's text comes from the line and the line's language (``languages``): the machine
(``environment/Dockerfile`` and ``bug.patch``), the verifier (``tests/``), the instruction (the
line's statement, then the language's note on where the repository is and how its tests run),
and the oracle (``solution/solve.sh``: the gold patch). Nothing else: the set ships lines, and
a folder is made when a rollout needs it (``materialize``), cached under
``~/.cache/palaestra/swe_local/`` by the line's digest and the digest of the code that writes
folders (a changed verifier gives new folders; an unchanged line is never written twice).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from palaestra._util.rows_file import cache_directory, made_once
from palaestra.envs.swe_local.languages import language
from palaestra.wire.harbor import (
    AgentConfig,
    EnvironmentConfig,
    HarborTask,
    PackageInfo,
    TaskConfig,
    TaskFolder,
    VerifierConfig,
    folder_digest,
    write_task,
)

BUG_PATCH = "bug.patch"
DIGESTS = ".digests.json"
"""The file in a set's directory keeping its folders' digests (``set_digests``)."""
FIX_MARKER = "PALAESTRA_FIX"
APT_CLEAN = " && rm -rf /var/lib/apt/lists/* \\\n    /var/cache/apt/archives/*.deb /opt/palaestra\n"
"""The end of every machine's ``apt-get install`` step: apt's lists and downloads and the
offline base's local archives removed (no copy of the original release stays)."""
GIT_SETUP = (
    "    && git config --system user.name palaestra \\\n"
    "    && git config --system user.email palaestra@localhost \\\n"
    "    && git config --system gc.auto 0 \\\n"
    "    && git config --system core.checkStat minimal \\\n"
    "    && git config --system core.trustctime false \\\n"
)
"""Every machine's git: who commits, no automatic gc, checks by content."""


def bug_steps(files: list[str], also: str = "") -> str:
    """A Dockerfile's last two steps: the bug's patch applied (then ``also``, a command) and
    committed over ``/testbed``'s first state as the only commit, the original pruned."""
    return (
        f"COPY {BUG_PATCH} /tmp/{BUG_PATCH}\n"
        f"RUN patch -s -p1 < /tmp/{BUG_PATCH} && rm /tmp/{BUG_PATCH}{also} \\\n"
        f"    && git add -- {' '.join(files)} && git commit -qm base && git prune --expire=now\n"
    )


def git_blob(text: bytes) -> str:
    """Git's object id of a file with content ``text``."""
    return hashlib.sha1(b"blob %d\0" % len(text) + text).hexdigest()


def solve_script(fix_patch: str) -> str:
    """The oracle: the gold patch (the reverse of the bug's)."""
    if FIX_MARKER in fix_patch:
        raise ValueError(f"the patch contains {FIX_MARKER}: cannot write solve.sh")
    return (
        "#!/bin/bash\n"
        "# The oracle: the reverse of the bug's patch.\n"
        "set -euo pipefail\n"
        "cd /testbed\n"
        f"patch -p1 <<'{FIX_MARKER}'\n{fix_patch}{FIX_MARKER}\n"
    )


def statement(module: str, function: str, failing: list[str], messages: Mapping[str, Any]) -> str:
    """The issue, as a user would file it, from the failing tests' output: the function, the
    package's test that fails, the failing check and what happened instead. It never shows
    the change or names its kind."""
    first = failing[0]
    message = messages.get(first) or {}
    test_file, _, test_name = first.partition("::")
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
    check = str(message.get("statement", "")).strip()
    if check:
        # No language tag: a formatter would rewrite a tagged block, and this is the test's
        # own line, verbatim.
        lines += ["The check that fails:", "", "```", check, "```", ""]
    if error:
        kept = [line for line in error.splitlines() if "Use -v to get" not in line]
        shown = re.sub(r" at 0x[0-9a-f]+>", ">", "\n".join(kept[:15]))
        lines += ["What happens instead:", "", "```", shown, "```", ""]
    if len(failing) > 1:
        others = ", ".join(f"`{node.partition('::')[2]}`" for node in failing[1:6])
        more = " and more" if len(failing) > 6 else ""
        lines += [f"Other tests in that file fail too: {others}{more}.", ""]
    return "\n".join(lines)


def redact(text: str, bug: str) -> str:
    """``text`` without the lines that show the bug's own code (a traceback quoting the
    mutated line, and the ``^^^`` under it): the statement says what fails, never the
    change."""
    shown = {line[1:].strip() for line in bug.splitlines() if line.startswith("+")}
    shown = {code for code in shown if len(code) >= 12 and not code.startswith("++")}
    kept: list[str] = []
    skip_marker = False
    for line in text.splitlines(keepends=True):
        if skip_marker and set(line.strip()) <= set("^~ ") and line.strip():
            skip_marker = False
            continue
        skip_marker = line.strip() in shown
        if skip_marker:
            continue
        kept.append(line)
    return "".join(kept)


def instruction(line: Mapping[str, Any]) -> str:
    """What the agent is told: the statement, then where the repository is (the language's)."""
    footer = language(str(line["language"])).instruction_footer(line)
    return f"{str(line['statement']).rstrip()}\n\n---\n\n{footer}"


def task_config(line: Mapping[str, Any]) -> TaskConfig:
    """The ``task.toml`` of one manifest line."""
    repo = language(str(line["language"])).repos()[str(line["repo"])]
    metadata: dict[str, Any] = {
        "author_name": "palaestra",
        "category": "swe_local",
        "difficulty": line["difficulty"]["level"],
        "tags": ["swe", str(line["language"]), str(line["repo"]), str(line["kind"])],
        "package": line["source"],
        "package_version": line["version"],
        "license": repo.license,
        "mutation_kind": line["kind"],
        "seed": line["seed"],
    }
    if "mutation" in line:
        metadata["mutation"] = line["mutation"]
    return TaskConfig(
        task=PackageInfo(name=f"palaestra/{line['instance_id']}"),
        metadata=metadata,
        source=f"palaestra:swe_local:{line['source']}={line['version']}",
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


def task_folder(line: Mapping[str, Any]) -> TaskFolder:
    """The Harbor folder of one manifest line."""
    speaker = language(str(line["language"]))
    return TaskFolder(
        config=task_config(line),
        instruction=instruction(line),
        dockerfile=speaker.dockerfile(line),
        test_script=speaker.test_script(line),
        tests=speaker.verifier_files(line),
        solve_script=solve_script(str(line["patch"])),
    )


def task(line: Mapping[str, Any], folder: Path) -> HarborTask:
    """The task of ``line`` whose folder is (or will be) at ``folder``, as ``read_task`` reads
    that folder but made from the line, without reading it: its digest is made from the
    folder when first asked for."""
    return HarborTask(
        path=folder, config=task_config(line), instruction=instruction(line), has_solution=True
    )


def write_instance(line: Mapping[str, Any], path: Path) -> Path:
    """Write the folder of ``line`` at ``path`` (which must not exist), with its bug's patch."""
    root = write_task(task_folder(line), path)
    (root / "environment" / BUG_PATCH).write_text(str(line["bug"]), encoding="utf-8")
    return root


# --- the cache ------------------------------------------------------------------------------


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/palaestra/swe_local`` (``~/.cache`` without it)."""
    return cache_directory("swe_local")


def writer_digest() -> str:
    """A digest of the code that turns lines into folders (this module, the languages and the
    verifier): part of every cached folder's key, so a changed verifier reaches every task."""
    here = Path(__file__).parent
    parts = [here / "folders.py", here / "verifier.py", *sorted((here / "languages").glob("*.py"))]
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(part.name.encode() + b"\0" + part.read_bytes() + b"\0")
    return hasher.hexdigest()[:12]


def materialize(line: Mapping[str, Any], root: Path | None = None) -> Path:
    """The task folder of ``line``, written once under ``root`` (the cache) at
    ``<digest>-<writer>/<instance_id>``: written beside, then moved, so a reader never sees
    half a folder."""
    base = root if root is not None else cache_root()
    key = f"{str(line['digest']).removeprefix('sha256:')[:32]}-{writer_digest()}"
    folder = base / key / str(line["instance_id"])
    return made_once(folder, lambda partial: write_instance(line, partial))


def materialize_set(lines: Iterable[Mapping[str, Any]], root: Path | None = None) -> Path:
    """A directory of the folders of ``lines`` (links named by instance id into the cache),
    named by the lines' digests: the same lines give the same directory."""
    base = root if root is not None else cache_root()
    chosen = sorted(lines, key=lambda line: str(line["instance_id"]))
    hasher = hashlib.sha256(writer_digest().encode())
    for line in chosen:
        hasher.update(str(line["digest"]).encode())
    view = base / "sets" / hasher.hexdigest()[:20]

    def link(partial: Path) -> None:
        partial.mkdir()
        for line in chosen:
            folder = materialize(line, base)
            # Relative to the set's final place (the partial copy is one level deeper).
            os.symlink(os.path.relpath(folder, view), partial / str(line["instance_id"]))

    return made_once(view, link)


def set_digests(view: Path) -> dict[str, str]:
    """The ``folder_digest`` of each folder of the set at ``view``, by instance id: made the
    first time they are asked for and kept in the set's directory (``DIGESTS``). The set's
    name holds its lines' digests and the writer's, which fix every byte of its folders, so
    the rows of a set are stamped without hashing thousands of folders each time; a rollout
    still hashes its own task's folder and checks it against its row."""
    index = view / DIGESTS
    names = sorted(child.name for child in view.iterdir() if not child.name.startswith("."))
    with contextlib.suppress(OSError, orjson.JSONDecodeError):
        kept = orjson.loads(index.read_bytes())
        if isinstance(kept, dict) and sorted(kept) == names:
            return {str(name): str(digest) for name, digest in kept.items()}
    digests = {name: folder_digest(view / name) for name in names}
    partial = view / f"{DIGESTS}.{os.getpid()}.partial"
    partial.write_bytes(orjson.dumps(digests))
    os.replace(partial, index)
    return digests
