"""palaestra: build RL environments for LLMs and collect verified rollouts from them.

The public names live here; everything else is an implementation detail. Every name of the
author's kit (``palaestra.environment``: ``Environment``, ``tool``, ``Session``, ``Verdict``,
the rubric, the judge, users, the ready-made kinds...) is also a name of ``palaestra``, so
``from palaestra import ...`` is the one import an environment needs. ``collect`` (and
``collect_async``, ``run_spec``, ``RunSummary``), ``eval`` (environments + model + repeats ->
runs and a report with intervals; ``eval_async``, ``Evaluation``), the run specification
(``RunSpec`` and its parts) and the output row types load on first use, as the kit's heavier
pieces do, so ``import palaestra`` stays light for code that only defines an environment.
"""

from typing import TYPE_CHECKING, Any

from palaestra import environment as _kit
from palaestra._util.lazy import lazy_exports
from palaestra._util.moved import install as _install_moved_modules
from palaestra.agents import Agent, AgentResult, SingleTurnAgent, ToolCallingAgent
from palaestra.errors import CallbackError

if TYPE_CHECKING:
    from palaestra.collection.collector import RunSummary
    from palaestra.environment import *  # noqa: F403  the author's kit, every name of its __all__
    from palaestra.run.collect import collect, collect_async, run_spec
    from palaestra.run.eval import Evaluation, eval, eval_async
    from palaestra.spec import (
        AgentSpec,
        CollectOptions,
        EnvSpec,
        ModelConfig,
        RunSpec,
        ServeSpec,
    )
    from palaestra.wire.rows import AggregateFile, FailureRow

_LAZY = {
    "collect": "palaestra.run.collect",
    "collect_async": "palaestra.run.collect",
    "run_spec": "palaestra.run.collect",
    "RunSummary": "palaestra.collection.collector",
    "eval": "palaestra.run.eval",
    "eval_async": "palaestra.run.eval",
    "Evaluation": "palaestra.run.eval",
    "AgentSpec": "palaestra.spec",
    "CollectOptions": "palaestra.spec",
    "EnvSpec": "palaestra.spec",
    "ModelConfig": "palaestra.spec",
    "RunSpec": "palaestra.spec",
    "ServeSpec": "palaestra.spec",
    "AggregateFile": "palaestra.wire.rows",
    "FailureRow": "palaestra.wire.rows",
}
_run_names = lazy_exports("palaestra", _LAZY)


def __getattr__(name: str) -> Any:
    """The kit's names from ``palaestra.environment``; the run's load on first use."""
    if name in _kit.__all__:
        return getattr(_kit, name)
    return _run_names(name)


_install_moved_modules()  # old import paths (palaestra.env_client, ...) for one release


__all__ = [
    "Agent",
    "AgentResult",
    "AgentSpec",
    "AggregateFile",
    "CallbackError",
    "CollectOptions",
    "EnvSpec",
    "Evaluation",
    "FailureRow",
    "ModelConfig",
    "RunSpec",
    "RunSummary",
    "ServeSpec",
    "SingleTurnAgent",
    "ToolCallingAgent",
    "collect",
    "collect_async",
    "eval",
    "eval_async",
    "run_spec",
]
__all__ += _kit.__all__
