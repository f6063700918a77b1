"""What a rollout's runner hands its agent beside the task: ``RolloutContext``.

``Agent.run(task, env, model, context)`` gets it as an argument, so an agent sees in its
signature what the run lends the rollout: where to checkpoint and what to resume from
(``durability``), and the rollout as the model pools see it (``scope``: its endpoints, the
policy versions of its calls and the trainer's policy clock). The collector, the training
sampler and a worker process make one per rollout and pass it to their runner; ``BoundAgent``
completes it with the rollout's scope.
"""

from __future__ import annotations

from dataclasses import dataclass

from palaestra.agents.durable import Checkpoints, Durability
from palaestra.environment.running.client import EnvironmentClient
from palaestra.models.affinity import RolloutScope


@dataclass(frozen=True, slots=True)
class RolloutContext:
    """One rollout's context, the fourth argument of ``Agent.run``."""

    durability: Durability | None = None
    """Where the rollout checkpoints and the checkpoint it resumes from
    (``palaestra.agents.durable``), lent by the run's writer; None: it cannot checkpoint (a
    run without checkpoints, a runner that said ``durable = False``)."""
    scope: RolloutScope | None = None
    """The rollout as the model pools see it (``palaestra.models.affinity``): the endpoint its
    calls stick to, their policy versions, the trainer's policy clock. ``BoundAgent.run``
    opens one when its caller gave none; None only for an agent called outside any runner."""

    def checkpoints(self, env: EnvironmentClient) -> Checkpoints | None:
        """The rollout's checkpointing against ``env``: None unless the rollout was lent a
        ``Durability`` and ``env`` can export and restore its state (then the rollout starts
        afresh and saves nothing, as before checkpoints existed)."""
        durability = self.durability
        if durability is None or not env.restorable:
            return None
        return Checkpoints(durability, env, self.scope)


NO_CONTEXT = RolloutContext()
"""The context of an agent called by hand (a test, a notebook): no checkpoints, no scope."""
