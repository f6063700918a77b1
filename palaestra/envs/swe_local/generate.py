"""Generate ``swe_local`` instances: SWE-smith's recipe, offline, over Debian's Python packages.

For each package (its Debian release ships its test suite inside the package), test files are
taken in a seeded order. Each file is run once on the original package with a probe that
records which of the package's functions every test calls. A function called by some passing
tests (not by most of them, and not while importing) gets a seeded mutation (``mutations.py``);
the test file is run on the mutated copy, and the mutation is kept only if some tests that
passed now fail and the rest still pass (``validate.judge``). The failure becomes the issue text,
the instance a Harbor task folder (``folders.py``).

Usage (see the README)::

    python -m palaestra.envs.swe_local.generate --rootfs ROOT --work DIR --out TASKS \\
        --quota sympy=70 --quota networkx=90 --quota mpmath=60 [--shard 0/2] [--seed 0]
    python -m palaestra.envs.swe_local.generate --index TASKS   # writes TASKS/MANIFEST.jsonl
    python -m palaestra.envs.swe_local.generate --from-records RECORDS.jsonl --out TASKS

Deterministic for a seed, except that a run near its time limit may keep a different set.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import json
import os
import random
import re
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from palaestra.envs.swe_local.folders import (
    BUG_PATCH,
    PACKAGES,
    git_blob,
    rewrite_tests,
    write_instance,
)
from palaestra.envs.swe_local.mutations import Mutation, apply, functions, mutations
from palaestra.envs.swe_local.validate import SITE, Runner, RunResult, Verdict, judge
from palaestra.envs.swe_local.verifier import object_id
from palaestra.wire.harbor import folder_digest, read_task

MANIFEST = "MANIFEST.jsonl"


def test_files(site: Path, package: str) -> list[str]:
    """The package's test files (``pkg/.../tests/test_*.py``), relative to ``site``, sorted."""
    return sorted(
        path.relative_to(site).as_posix()
        for path in (site / package).rglob("tests/test_*.py")
        if "__pycache__" not in path.parts
    )


def package_version(rootfs: Path | None, package: str) -> str:
    """The Debian version of ``package``'s deb in the machine (``dpkg``'s status file)."""
    status = (rootfs or Path("/")) / "var/lib/dpkg/status"
    deb = PACKAGES[package]["deb"]
    block = next(
        (
            b
            for b in status.read_text(encoding="utf-8").split("\n\n")
            if f"Package: {deb}\n" in b + "\n"
        ),
        "",
    )
    match = re.search(r"^Version: (.+)$", block, re.MULTILINE)
    if match is None:
        raise SystemExit(f"{status}: no installed {deb}")
    return match.group(1)


def function_index(source: str) -> dict[int, tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Functions of ``source`` by the first line of their code object (the first decorator's)."""
    index: dict[int, tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for name, node in functions(source):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        index[first] = (name, node)
    return index


def candidates(baseline: RunResult, *, broad: float = 0.5) -> list[tuple[str, int]]:
    """Functions (file, first line) called by some passing tests, not while importing and
    not by more than ``broad`` of them, sorted."""
    passed = baseline.passed()
    counts: Counter[str] = Counter()
    for node in passed:
        counts.update(set(baseline.covered.get(node, [])))
    at_import = set(baseline.at_import)
    limit = max(2, int(broad * len(passed)))
    found = []
    for key, count in counts.items():
        if key in at_import or count > limit:
            continue
        file, _, line = key.rpartition(":")
        found.append((file, int(line)))
    return sorted(found)


def patch(relative: str, before: str, after: str) -> str:
    """A unified diff (``patch -p1`` from the repository's root) from ``before`` to ``after``."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            f"a/{relative}",
            f"b/{relative}",
        )
    )


def guarded_files(site: Path, test_file: str) -> dict[str, str]:
    """The test file and the conftest.py files above it, with their git object ids."""
    files = {test_file: git_blob((site / test_file).read_bytes())}
    parent = Path(test_file).parent
    while parent != Path("."):
        conftest = site / parent / "conftest.py"
        if conftest.is_file():
            relative = (parent / "conftest.py").as_posix()
            files[relative] = git_blob(conftest.read_bytes())
        parent = parent.parent
    return dict(sorted(files.items()))


GITIGNORE = b"__pycache__/\n*.pyc\n"
"""``/testbed/.gitignore`` as the Dockerfile writes it (``folders.dockerfile_prefix``)."""


def _tree_object(entries: list[tuple[bytes, str, str]]) -> str:
    """The id of a tree of (mode, name, id) entries, in git's order (a tree's name sorts as
    if it ended in ``/``)."""
    lines = sorted(
        (
            name.encode() + (b"/" if mode == b"40000" else b""),
            b"%s %s\0" % (mode, name.encode()),
            oid,
        )
        for mode, name, oid in entries
    )
    return object_id("tree", b"".join(line + bytes.fromhex(oid) for _, line, oid in lines))


def _tree(directory: Path, relative: str, changed: Mapping[str, bytes]) -> str | None:
    """The id of the tree ``git add -A`` makes of ``directory`` (None when it holds nothing
    git tracks): ``__pycache__`` directories and ``*.pyc`` files ignored, ``changed`` (path
    in the repository to content) in place of what is on disk."""
    entries: list[tuple[bytes, str, str]] = []
    for entry in os.scandir(directory):
        name, path = entry.name, f"{relative}{entry.name}"
        if entry.is_symlink():
            entries.append((b"120000", name, object_id("blob", os.fsencode(os.readlink(entry)))))
        elif entry.is_dir():
            sub = None if name == "__pycache__" else _tree(Path(entry.path), f"{path}/", changed)
            if sub is not None:
                entries.append((b"40000", name, sub))
        elif entry.is_file() and not name.endswith(".pyc"):
            data = changed[path] if path in changed else Path(entry.path).read_bytes()
            mode = b"100755" if entry.stat().st_mode & stat.S_IXUSR else b"100644"
            entries.append((mode, name, object_id("blob", data)))
    return _tree_object(entries) if entries else None


def base_tree(site: Path, package: str, changed: Mapping[str, bytes]) -> str:
    """The id of the base commit's tree in the task's machine: ``/testbed`` holding
    ``.gitignore`` and ``site/package``, with ``changed`` (the bug) in place."""
    inner = _tree(site / package, f"{package}/", changed)
    if inner is None:
        raise SystemExit(f"{site / package}: no files")
    top = [(b"100644", ".gitignore", object_id("blob", GITIGNORE)), (b"40000", package, inner)]
    return _tree_object(top)


def difficulty(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """A proxy for how hard the bug is to find: the length of the function it is in."""
    length = (node.end_lineno or node.lineno) - node.lineno + 1
    return "easy" if length <= 15 else "medium" if length <= 50 else "hard"


def instance_id(package: str, module: str, mutation: Mutation) -> str:
    """``<package>__<module>__<function>__<hash of the module and mutation>``."""
    digest = hashlib.sha256(f"{module}\0{mutation.key}".encode()).hexdigest()[:8]
    stem = Path(module).stem.lstrip("_") or "init"
    short = re.sub(r"[^A-Za-z0-9]", "", mutation.function.rsplit(".", 1)[-1]) or "fn"
    return f"{package}__{stem}__{short}__{digest}"


def record_for(
    package: str,
    version: str,
    seed: int,
    test_file: str,
    module: str,
    original: str,
    mutation: Mutation,
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    verdict: Verdict,
    mutated: RunResult,
    site: Path,
) -> dict[str, Any]:
    changed = apply(original, mutation)
    return {
        "instance_id": instance_id(package, module, mutation),
        "package": package,
        "version": version,
        "seed": seed,
        "module": module,
        "function": mutation.function,
        "kind": mutation.kind,
        "mutation": f"{module}:{mutation.key}",
        "difficulty": difficulty(node),
        "test_file": test_file,
        "FAIL_TO_PASS": verdict.fail_to_pass,
        "PASS_TO_PASS": verdict.pass_to_pass,
        "messages": {
            node_id: json.loads(mutated.messages[node_id])
            for node_id in verdict.fail_to_pass
            if node_id in mutated.messages
        },
        "bug_patch": patch(module, original, changed),
        "fix_patch": patch(module, changed, original),
        "test_files": guarded_files(site, test_file),
        "base_tree": base_tree(site, package, {module: changed.encode()}),
    }


def confirm(runner: Runner, module: str, verdict: Verdict, timeout: float) -> Verdict | str:
    """``verdict`` when the ids alone, run as ``tests/test.sh`` runs them, agree with it: on
    the mutated copy (written) every FAIL_TO_PASS fails, on the original every test passes.
    A test that fails only after others ran in the same process is caught here."""
    alone = runner.run(verdict.fail_to_pass, timeout=timeout)
    if alone is None or any(
        alone.outcomes.get(node) not in ("failed", "error") for node in verdict.fail_to_pass
    ):
        return "FAIL_TO_PASS does not fail when run alone"
    runner.restore(module)
    both = verdict.fail_to_pass + verdict.pass_to_pass
    fixed = runner.run(both, timeout=timeout)
    if fixed is None or any(fixed.outcomes.get(node) != "passed" for node in both):
        return "the listed tests do not all pass on the original"
    return verdict


def generate_file(
    runner: Runner,
    package: str,
    version: str,
    test_file: str,
    args: argparse.Namespace,
    out: Path,
) -> int:
    """Instances from one test file; the number kept."""
    started = time.monotonic()
    baseline = runner.run([test_file], cover=package, timeout=args.max_file_seconds)
    if baseline is None or baseline.collect_errors or len(baseline.passed()) < 3:
        print(f"skip {test_file}: no usable baseline", flush=True)
        return 0
    elapsed = time.monotonic() - started
    print(f"base {test_file}: {len(baseline.passed())} pass, {elapsed:.1f}s", flush=True)
    # The probe's run is the slower one; a mutation 4x slower than it is a hang, not a bug.
    timeout = min(args.timeout, max(15.0, 4 * elapsed))
    rng = random.Random(f"{args.seed}:{test_file}")
    pool = candidates(baseline)
    rng.shuffle(pool)
    sources: dict[str, str] = {}
    kept = 0
    for module, line in pool[: args.tries_per_file]:
        if kept >= args.per_file or time.time() > args.deadline:
            break
        if module not in sources:
            text = runner.original(module).read_text(encoding="utf-8")
            sources[module] = text
        original = sources[module]
        found = function_index(original).get(line)
        if found is None or not original.endswith("\n"):
            continue
        name, node = found
        options = mutations(original, name, node)
        if not options:
            continue
        kind = rng.choice(sorted({m.kind for m in options}))
        mutation = rng.choice([m for m in options if m.kind == kind])
        if (out / instance_id(package, module, mutation)).exists():
            continue
        runner.write(module, apply(original, mutation))
        try:
            mutated = runner.run([test_file], timeout=timeout)
            verdict = judge(baseline, mutated, max_fail=args.max_fail)
            if isinstance(verdict, Verdict):
                verdict = confirm(runner, module, verdict, timeout)
        finally:
            runner.restore(module)
        if isinstance(verdict, str):
            print(f"  reject {module}:{mutation.key} {name}: {verdict}", flush=True)
            continue
        assert mutated is not None
        record = record_for(
            package, version, args.seed, test_file, module, original, mutation, node,
            verdict, mutated, runner.site,
        )  # fmt: skip
        target = out / record["instance_id"]
        if target.exists():
            continue
        write_instance(record, target)
        if args.records is not None:
            with args.records.open("a", encoding="utf-8") as file:
                file.write(json.dumps(record) + "\n")
        kept += 1
        print(f"  KEEP {record['instance_id']} ({len(verdict.fail_to_pass)} fail)", flush=True)
    return kept


def retest(folder: Path, rootfs: Path | None) -> None:
    """Give the task folder ``folder`` the current verifier (``tests/``), the rest unchanged:
    the base tree is computed from the machine's release of the package (``rootfs``'s, else
    this host's) with the folder's bug applied; refused if that is not the task's release."""
    config = json.loads((folder / "tests" / "config.json").read_text(encoding="utf-8"))
    package = next(name for name, info in PACKAGES.items() if info["deb"] == config["package"])
    site = (rootfs / SITE.lstrip("/")) if rootfs is not None else Path(SITE)
    version = package_version(rootfs, package)
    if version != config["version"]:
        raise SystemExit(f"{folder}: made from {package} {config['version']}, here {version}")
    for path, blob in config["test_files"].items():
        if git_blob((site / path).read_bytes()) != blob:
            raise SystemExit(f"{folder}: {site / path} is not the task's test file")
    bug = folder / "environment" / BUG_PATCH
    module = bug.read_text(encoding="utf-8").splitlines()[0].removeprefix("--- a/")
    with tempfile.TemporaryDirectory(prefix="swe-retest-") as scratch:
        mutated = Path(scratch) / "mutated.py"
        with bug.open("rb") as patch_file:
            subprocess.run(
                ["patch", "-s", "-o", str(mutated), str(site / module)],
                stdin=patch_file,
                check=True,
                timeout=60,
            )
        changed = {module: mutated.read_bytes()}
    record = {**config, "package": package, "base_tree": base_tree(site, package, changed)}
    rewrite_tests(folder, record)


def write_manifest(root: Path) -> int:
    """``root/MANIFEST.jsonl``: one line per task folder (id, package, kind, digest)."""
    lines = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        task = read_task(folder)
        config = json.loads((folder / "tests" / "config.json").read_text(encoding="utf-8"))
        meta = task.config.metadata
        lines.append(
            json.dumps(
                {
                    "instance_id": folder.name,
                    "package": meta["package"],
                    "version": meta["package_version"],
                    "kind": meta["mutation_kind"],
                    "difficulty": meta["difficulty"],
                    "fail_to_pass": len(config["FAIL_TO_PASS"]),
                    "pass_to_pass": len(config["PASS_TO_PASS"]),
                    "digest": folder_digest(folder),
                }
            )
        )
    (root / MANIFEST).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return len(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m palaestra.envs.swe_local.generate")
    parser.add_argument("--out", type=Path, help="the folder of task folders to add to")
    parser.add_argument("--rootfs", type=Path, help="the machine's root filesystem (mmdebstrap)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/swe-local-work"))
    parser.add_argument("--quota", action="append", default=[], help="PKG=N instances")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shard", default="0/1", help="I/N: this run's share of test files")
    parser.add_argument("--per-file", type=int, default=3)
    parser.add_argument("--tries-per-file", type=int, default=10)
    parser.add_argument("--max-fail", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--max-file-seconds", type=float, default=40.0)
    parser.add_argument("--minutes", type=float, default=600.0, help="stop after this long")
    parser.add_argument("--records", type=Path, help="also append each record (JSON lines)")
    parser.add_argument("--from-records", type=Path, help="only write folders of these records")
    parser.add_argument("--index", type=Path, help="only write MANIFEST.jsonl of this folder")
    parser.add_argument(
        "--retest", type=Path, help="only give this folder's tasks the current tests/"
    )
    args = parser.parse_args(argv)
    if args.retest is not None:
        folders = sorted(p for p in args.retest.iterdir() if p.is_dir())
        for folder in folders:
            retest(folder, args.rootfs)
        print(f"{len(folders)} task folders given the current tests/ in {args.retest}")
        return 0
    if args.from_records is not None:
        if args.out is None:
            parser.error("--from-records needs --out")
        written = 0
        for line in args.from_records.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            target = args.out / record["instance_id"]
            if not target.exists():
                write_instance(record, target)
                written += 1
        print(f"{written} task folders written in {args.out}")
        return 0
    if args.index is not None:
        print(f"{write_manifest(args.index)} tasks in {args.index / MANIFEST}")
        return 0
    if args.out is None or not args.quota:
        parser.error("--out and at least one --quota PKG=N are needed")
    args.deadline = time.time() + 60 * args.minutes
    # SIGTERM as an exit, so the working copy gets its original file back (``finally``).
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    shard, shards = (int(part) for part in args.shard.split("/"))
    runner = Runner(args.work, args.rootfs)
    args.out.mkdir(parents=True, exist_ok=True)
    for item in args.quota:
        package, _, count = item.partition("=")
        if package not in PACKAGES:
            parser.error(f"--quota {item}: unknown package (one of {', '.join(PACKAGES)})")
        quota = -(-int(count) // shards)
        runner.prepare(package)
        version = package_version(args.rootfs, package)
        files = test_files(runner.site, package)
        random.Random(f"{args.seed}:{package}").shuffle(files)
        made = 0
        for test_file in files[shard::shards]:
            if made >= quota or time.time() > args.deadline:
                break
            made += generate_file(runner, package, version, test_file, args, args.out)
        print(f"{package}: {made} instances", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
