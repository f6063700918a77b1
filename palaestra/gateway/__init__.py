"""Any harness through the gateway: an OpenAI-compatible endpoint per rollout, recording calls.

``Gateway(model)`` serves one palaestra ``Model`` as Chat Completions, Completions and
Responses (streaming included); ``gateway.open()`` gives a rollout its own base URL and API
key, and every call made there is recorded (``GatewayRollout.calls``) and assembled into the
rollout's trajectory (``GatewayRollout.response()``), token-exact when the model captures
tokens. ``pause``/``resume`` hold callers during a weight update.
"""

from palaestra.gateway.gateway import Gateway, GatewayCounts
from palaestra.gateway.rollout import Call, GatewayRollout

__all__ = ["Call", "Gateway", "GatewayCounts", "GatewayRollout"]
