"""Harbor task folders as an environment: ``--env harbor:PATH`` (``HarborEnvironment``).

- ``tasks``: the folders read, checked against what a machine here gives (what ``task.toml``
  says that is honoured, what is refused), and their task rows;
- ``boxes``: staging a folder into a box, running a command in it, reading a file out of it;
- ``rewards``: the reward the tests wrote, read as Harbor reads it;
- ``environment``: ``HarborEnvironment``, a machine per rollout, the agent's tools over it,
  the tests as the verifier, the oracle (``solution/solve.sh``) as gold actions.

An environment that ships Harbor folders (``swe_local``, ``terminal``) subclasses
``HarborEnvironment`` with its folder as the default ``path``.
"""

from palaestra.environment.kinds.harbor.environment import HarborEnvironment, HarborState

__all__ = ["HarborEnvironment", "HarborState"]
