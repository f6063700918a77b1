"""Open Reward Standard servers as palaestra environments (``--env ors:URL``)."""

from palaestra.environment.kinds.ors.connection import OrsAddress, OrsServerError, parse_address
from palaestra.environment.kinds.ors.environment import OrsEnvironment, OrsFailure

__all__ = ["OrsAddress", "OrsEnvironment", "OrsFailure", "OrsServerError", "parse_address"]
