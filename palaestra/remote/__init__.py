"""Clients of served parts: an environment server (NeMo Gym's resources-server protocol) and an
agent server (``/run``). They implement the same interfaces as their in-process twins, so an
agent cannot tell a local environment from a remote one. No web framework is imported here.
"""

from palaestra.remote.agent import RemoteAgent
from palaestra.remote.env import RemoteEnvironmentClient

__all__ = ["RemoteAgent", "RemoteEnvironmentClient"]
