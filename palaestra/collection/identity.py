"""The run's identity, saved beside its output, so ``--resume`` continues only the same run.

Pairs are matched by (task index, rollout index) alone, so resuming with another input,
environment, repeat count, agent or model would report everything "already done" and mix two
runs in one file. ``<output>_run.json`` records what the rows depend on; a resume whose
identity differs is refused, naming each difference. The file is a plain JSON object that
later versions may grow: a field only one side has is not compared (a run recorded before it
existed still resumes), and ``palaestra_version`` is recorded but not compared (upgrading
palaestra mid-run is allowed). To continue deliberately with a changed setting, delete the
file: the next resume adopts the current identity.

The file also holds the whole run specification under ``spec`` (``RunSpec.to_json``: no
secrets), for the record; it is not compared as a whole, because most of it (concurrency,
retries, timeouts, where the output goes) does not change the rows. What does is compared
through the fields above it: the environment, its version (``Environment.version``: a resume
after a change that scores answers differently is refused) and its arguments, the agent and
its options, the model (backend, url, model, backend options), the input's content, repeats
and sampling.

The input is identified by its content (SHA-256), not its path, so a moved or copied input
still resumes; see ``tasks.scan_input`` for what hashing costs and when it is skipped. Rows
that bind each task to its folder's content (``task_digest``: Harbor task folders) are
compared without the folders' paths (``input.tasks_sha256``, ``digests.tasks_digest``), and
then so are the environment's arguments that only say where those folders are (its class's
``location_args``, recorded as ``env.located``): a project moved elsewhere resumes, while a
changed folder is still refused (``digests.check_task_digests``). A run recorded before these
fields compares as it did.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson

from palaestra.collection.files import writing
from palaestra.collection.tasks import InputScan
from palaestra.errors import ConfigError
from palaestra.types import JsonDict

_ABSENT = object()
NOT_COMPARED = frozenset(
    {
        "palaestra_version",
        "spec",
        "input.path",
        "input.size",
        "input.mtime_ns",
        "input.tasks",
        "model.urls",
        "input.tasks_sha256",
        "env.located",
    }
)
"""Recorded, never compared: a top-level field (all of it) or one dotted key. A model pool's
``urls`` are replicas of one model: a resume with more or fewer of them is the same run (its
``url`` is null; a resume on a single URL instead of a pool is refused, naming ``model.url``)."""
GROWN = frozenset({"env.version"})
"""Keys recorded since a later palaestra: compared only when the recorded run has them too (a
run recorded before environments had versions resumes; one of another version is refused)."""


def run_identity(
    scan: InputScan,
    *,
    repeats: int,
    sampling: JsonDict,
    facts: JsonDict,
    tasks_sha256: str | None = None,
) -> JsonDict:
    """The identity of a run: ``facts`` (env, agent, model, from the caller) + input + repeats;
    ``tasks_sha256``: the input's digest without its task folders' paths, when it has them."""
    given: JsonDict = {
        "path": str(scan.path.resolve()),
        "sha256": scan.sha256,
        "size": scan.size,
        "mtime_ns": scan.mtime_ns,
    }
    if tasks_sha256 is not None:
        given["tasks_sha256"] = tasks_sha256
    return {
        "palaestra_version": _version(),
        **facts,
        "input": given,
        "repeats": repeats,
        "sampling": dict(sampling),
    }


def read_identity(path: Path) -> JsonDict | None:
    """The identity an earlier run recorded at ``path``; None when there is none."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        recorded = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        raise ConfigError(
            f"{path} is not valid JSON ({error}): fix it, or delete it to resume anyway"
        ) from None
    if not isinstance(recorded, dict):
        raise ConfigError(f"{path} must hold a JSON object: fix it, or delete it")
    return recorded


def differences(recorded: JsonDict, current: JsonDict) -> list[str]:
    """One ``field: the run has ..., this command has ...`` line per field that differs.

    Top-level fields only one side has are skipped (the file grows across versions); inside a
    field both have, a key only one side has is a difference (``sampling.temperature`` set
    now, not before).
    """
    found = []
    skipped = set(NOT_COMPARED)
    tasks = [_inner(identity, "input", "tasks_sha256") for identity in (recorded, current)]
    if None not in tasks:  # both bind their tasks to folder contents: where they are is moot
        skipped.add("input.sha256")
        located = _inner(current, "env", "located")
        skipped.update(f"env.args.{name}" for name in located or () if isinstance(name, str))
        if tasks[0] != tasks[1]:
            found.append(
                f"input.tasks_sha256: the run has {_show(tasks[0])}, this command has "
                f"{_show(tasks[1])}"
            )
    for top in recorded.keys() & (current.keys() - NOT_COMPARED):
        before, now = dict(_flat(recorded[top], top)), dict(_flat(current[top], top))
        for key in sorted(before.keys() | now.keys()):
            if key in skipped:
                continue
            old, new = before.get(key, _ABSENT), now.get(key, _ABSENT)
            if key in GROWN and old is _ABSENT:
                continue
            if old != new:
                found.append(f"{key}: the run has {_show(old)}, this command has {_show(new)}")
    return sorted(found)


def check_same_run(path: Path, recorded: JsonDict, current: JsonDict) -> None:
    """``ConfigError`` naming every difference when ``current`` is not the recorded run."""
    found = differences(recorded, current)
    if found:
        raise ConfigError(
            f"cannot resume: this is not the run recorded in {path} ({'; '.join(found)}); "
            "run the same command as before, or start a new run: --overwrite, or another "
            "output (collect's --output, eval's --output-dir)"
        )


def write_identity(path: Path, identity: JsonDict) -> None:
    """Write ``identity`` to ``path`` whole or not at all (a temporary file, then a rename)."""
    temporary = path.with_name(path.name + ".tmp")
    with writing(path):
        temporary.write_bytes(orjson.dumps(identity, option=orjson.OPT_INDENT_2) + b"\n")
        os.replace(temporary, path)


def _inner(identity: JsonDict, top: str, key: str) -> Any:
    """``identity[top][key]``, or None."""
    inside = identity.get(top)
    return inside.get(key) if isinstance(inside, dict) else None


def _flat(value: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _flat(inner, f"{prefix}.{key}")
    else:
        yield prefix, value


def _show(value: Any) -> str:
    if value is _ABSENT:
        return "no value"
    text = orjson.dumps(value).decode()
    return text if len(text) <= 80 else text[:77] + "..."


def _version() -> str:
    try:
        return metadata.version("palaestra")
    except metadata.PackageNotFoundError:
        return "unknown"
