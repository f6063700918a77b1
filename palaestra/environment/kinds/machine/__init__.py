"""Tools for a machine: a persistent sandboxed shell, a file editor and ``submit``.

- ``Machine``: one rollout's sandbox: a work dir, a bash that keeps its state between
  commands (``shell``), and an ``Editor`` over the same files (``editor``).
- ``MachineTools``: a mixin that gives an environment the ``bash``, ``str_replace_editor``
  and ``submit`` tools on a per-rollout machine (``tools``).
"""

from palaestra.environment.kinds.machine.editor import Editor
from palaestra.environment.kinds.machine.machine import Machine
from palaestra.environment.kinds.machine.shell import ShellEnded, ShellResult
from palaestra.environment.kinds.machine.tools import MachineState, MachineTools

__all__ = ["Editor", "Machine", "MachineState", "MachineTools", "ShellEnded", "ShellResult"]
