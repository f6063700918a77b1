"""Whether an environment's suite modules really import here, checked without importing them.

A distribution's metadata says a package is installed, not that it imports: a suite installed
with ``--no-deps`` imports only if what its modules import is there too (AgentDojo's task
suites load every LLM provider's SDK; one of them imports ``tokenizers``). So ``palaestra envs``
imports each environment's modules for real, in a fresh interpreter per environment (the
catalogue's own process imports no suite), all environments at once. The answers are kept
under ``~/.cache/palaestra/imports``, keyed by the interpreter, its search path, every installed
distribution and version and the modules asked: installing or removing anything asks again.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

import orjson

TIMEOUT = 300.0
"""Seconds one environment's imports may take (AgentDojo's take several on a busy machine)."""

_PROBE = """\
import importlib, sys
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except BaseException as error:
        cause = error
        while cause is not None and not isinstance(cause, ModuleNotFoundError):
            cause = cause.__cause__ or cause.__context__
        if cause is not None and cause.name:
            print(cause.name)
        else:
            print(f"{name} ({type(error).__name__}: {error})".replace("\\n", " ")[:200])
        sys.exit(1)
"""
"""Import each module named; on the first failure print the module that is missing (found
along the exception's causes: a lazy import may wrap it in an ``ImportError``) or, failing
that, the module that did not import and why, on one line."""


def import_failures(checks: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """For each name whose modules do not all import in a fresh interpreter, what is missing
    (a module name) or why one does not import; names whose modules import are left out."""
    cache = _cache_dir() / f"{_key(checks)}.json"
    try:
        return dict(orjson.loads(cache.read_bytes()))
    except (OSError, orjson.JSONDecodeError, TypeError, ValueError):
        pass
    running = {
        name: subprocess.Popen(
            [sys.executable, "-c", _PROBE, *modules],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        for name, modules in checks.items()
        if modules
    }
    failures: dict[str, str] = {}
    for name, process in running.items():
        try:
            out, _ = process.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            failures[name] = f"{checks[name][0]} (its import took over {TIMEOUT:.0f} s)"
            continue
        if process.returncode != 0:
            lines = out.strip().splitlines()
            failures[name] = lines[-1] if lines else f"{checks[name][0]} (its import crashed)"
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_bytes(orjson.dumps(failures))
    except OSError:
        pass  # a read-only home: check again next time
    return failures


def _cache_dir() -> Path:
    return Path.home() / ".cache" / "palaestra" / "imports"


def _key(checks: Mapping[str, Sequence[str]]) -> str:
    installed = sorted(
        f"{dist.metadata['Name']}=={dist.version}@{dist.locate_file('')}"
        for dist in metadata.distributions()
    )
    parts = {
        "python": sys.executable,
        # "" is the working directory (``python -c``), as its path is (``python -m``)
        "path": [os.path.abspath(entry) for entry in sys.path],
        "cwd": os.getcwd(),
        "installed": installed,
        "checks": {name: list(modules) for name, modules in sorted(checks.items())},
    }
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]
