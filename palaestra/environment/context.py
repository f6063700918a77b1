"""What whatever runs an environment lends it, once, before its first rollout.

An environment never reaches for process-wide state or has attributes written into it from
outside: the runner (``LocalEnvironmentClient``, so ``collect``, ``serve env``, ``palaestra
test`` and the trainers' adapters) hands it an ``EnvironmentContext`` through
``Environment.setup``. The context holds the runner's warm worker pool (``run_in_pool``), an
HTTP client to share, the run's user model (``--user-model``) and opens the models an
environment asks for (judges).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from palaestra.models.base import Model
    from palaestra.sandbox.pool import WorkerPool
    from palaestra.transport import HttpClient


@dataclass(frozen=True, slots=True)
class EnvironmentContext:
    """The runner's parts an environment may use; the runner owns and closes them."""

    worker_pool: Callable[[], WorkerPool] | None = None
    """The runner's worker pool, started on first call; None outside a runner."""
    http: HttpClient | None = None
    """An HTTP client to share for the models this context opens (None: each opens its own)."""
    user_model: Model | None = None
    """The run's user model (``--user-model``), for environments with a simulated user
    (``palaestra.environment.users.ModelUser``); None when the run named none."""

    def open_model(
        self, spec: str, model_name: str | None = None, *, within: float | None = None
    ) -> Model:
        """A model from a spec as ``--model`` takes it (``local``, a URL, a configured name).

        ``within``: the seconds one call may take in all, retries included (a call made
        inside ``verify`` must end before ``verify_timeout`` does, or a model that hangs would
        cost every rollout its whole time limit and never count as hung): the model retries at
        most once, each attempt waiting at most half of it: a quarter for the answer, a
        quarter for a pause (its own timeouts when shorter). The caller closes the model
        (``aclose``) when the environment closes.
        """
        from palaestra.models.backends import build_model
        from palaestra.models.resolve import model_config

        config = model_config(spec, model_name=model_name)
        if within is not None:
            fitted = {
                "max_retries": min(config.max_retries, 1),
                "request_timeout": min(config.request_timeout, within / 4),
                "pause_deadline": min(config.pause_deadline, within / 4),
            }
            config = config.model_copy(update=fitted)
        return build_model(config, http=self.http)
