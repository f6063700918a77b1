"""Isolated code execution with limits, and a warm worker pool for CPU-heavy work.

- ``Sandbox``: run model-written code (a command or a Python snippet) with no network, a
  read-only system, a private work dir and resource limits; ``Sandbox.session()`` keeps a
  Python process (and its globals) alive across tool calls.
- ``WorkerPool``: run CPU-heavy verification (math-verify, test suites) in warm worker
  processes with per-task timeout, memory and CPU caps, off the event loop. Environments
  reach it through ``Environment.run_in_pool``.
"""

from palaestra.sandbox.limits import Limit, Limits, limit_from_error
from palaestra.sandbox.pool import PoolClosed, PoolStats, PoolTaskError, WorkerPool
from palaestra.sandbox.result import SandboxResult
from palaestra.sandbox.runner import DEBIAN_PYTHON, Isolation, Sandbox, SandboxUnavailable
from palaestra.sandbox.session import CellResult, PythonSession, SessionClosed

__all__ = [
    "DEBIAN_PYTHON",
    "CellResult",
    "Isolation",
    "Limit",
    "Limits",
    "PoolClosed",
    "PoolStats",
    "PoolTaskError",
    "PythonSession",
    "Sandbox",
    "SandboxResult",
    "SandboxUnavailable",
    "SessionClosed",
    "WorkerPool",
    "limit_from_error",
]
