"""Held-out variants of a task: another mutation of the same function, or the same kind of bug
in another function the same test file exercises.

A variant is validated exactly as a generated task is (``worker``), in the same repository
release and test file, and its line names the task it varies (``variant_of``). A model's drop
from the tasks to their variants measures how much of its score is memory of the tasks
rather than skill (Terminal-Bench's held-out variants do the same for its tasks).

    python -m palaestra.envs.swe_local.generate --variant-of ID [--count 2] --rootfs ROOT \\
        --manifest VARIANTS_DIR
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from palaestra.envs.swe_local.languages.python import package_of
from palaestra.envs.swe_local.manifest import sealed
from palaestra.envs.swe_local.mutations import Mutation, mutations
from palaestra.envs.swe_local.validate import Runner
from palaestra.envs.swe_local.worker import (
    Bug,
    Options,
    Outcome,
    Unit,
    _try,
    candidates,
    function_index,
    gold_state,
)


def variant_bugs(
    line: Mapping[str, Any], original: str, pool: list[tuple[str, int]], seed: int
) -> list[Bug]:
    """The candidate variants of ``line`` in its module, in a seeded order: first the other
    mutations of its function, then its kind in the other functions the tests call."""
    module = str(line["files"][0])
    index = function_index(original)
    by_name = {name: (first, node) for first, (name, node) in index.items()}
    taken = {str(line.get("mutation", ""))}
    rng = random.Random(f"{seed}:{line['instance_id']}")
    same: list[Bug] = []
    function = str(line["functions"][0])
    if function in by_name:
        first, node = by_name[function]
        for mutation in mutations(original, function, node):
            same.append(Bug(module, ((mutation, first),)))
    rng.shuffle(same)
    elsewhere: list[Bug] = []
    kinds = set(map(str, line["kinds"]))
    for path, first in pool:
        found = index.get(first) if path == module else None
        if found is None or found[0] == function:
            continue
        name, node = found
        chosen: list[Mutation] = [m for m in mutations(original, name, node) if m.kind in kinds]
        if chosen:
            elsewhere.append(Bug(module, ((rng.choice(chosen), first),)))
    rng.shuffle(elsewhere)
    return [bug for bug in same + elsewhere if bug.key not in taken]


def make_variants(
    runner: Runner, line: Mapping[str, Any], count: int, seed: int, options: Options
) -> Outcome:
    """Up to ``count`` validated variants of ``line`` (their lines name it in ``variant_of``)."""
    repo = str(line["repo"])
    package = package_of(repo)
    test_file = str(line["FAIL_TO_PASS"][0]).partition("::")[0]
    unit = Unit(repo, package, str(line["source"]), str(line["version"]), test_file, seed)
    outcome = Outcome(unit)
    runner.prepare(package)
    gold = gold_state(runner, unit, runner.work.parent, options.max_file_seconds)
    if gold is None:
        outcome.skipped = f"{test_file}: no usable gold run"
        return outcome
    module = str(line["files"][0])
    original = runner.original(module).read_text(encoding="utf-8")
    timeout = min(options.timeout, max(15.0, 4 * gold.seconds))
    for bug in variant_bugs(line, original, candidates(gold.baseline), seed):
        if len(outcome.lines) >= count or outcome.tried >= options.tries_per_file:
            break
        made = _try(runner, unit, bug, original, gold, options, timeout, outcome)
        if made is not None:
            outcome.lines.append(sealed({**made, "variant_of": line["instance_id"]}))
    return outcome


def work_directory(base: Path) -> Path:
    """The variants' own working copy under the generator's work directory."""
    return base / "variants"
