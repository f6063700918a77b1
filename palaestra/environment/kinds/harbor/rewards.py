"""The reward a Harbor verifier left in ``/logs/verifier``, read as Harbor reads it.

Harbor's rule (``harbor.verifier.Verifier``): ``reward.json``, when present, is the only file
read (a ``reward.txt`` beside it is ignored, even when ``reward.json`` has no ``reward`` key);
it must be a JSON object whose every value is a finite number (a boolean counts as 1 or 0, as
in Python), each one a component of the reward; a value that is not (text, null, a list, an
object) makes the file unreadable to Harbor, its trial left without a reward, and here a
``RewardRefused``: the rollout fails as ``verifier_error`` naming the file and the key, never a
silent 0. Without ``reward.json``, ``reward.txt`` holds one number. An empty or unparseable
file, or neither file, is a ``RewardProblem`` saying which, never read as a number (the
environment scores such a box 0, the problem as its reason).

Harbor's scalar is the ``reward`` component; its ``mean`` metric takes a dictionary with exactly
one key as that key's value, and fails on more. The same here: ``reward`` if present, else the
only component, else an error naming the components (which one is the reward is not guessed).
A reward that is not finite is an error too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass

from palaestra.errors import PalaestraError, VerifierFailure

REWARD_KEY = "reward"


class RewardProblem(PalaestraError):
    """Why no reward could be read (one line); the Harbor environment scores the task 0 and
    gives this as the row's ``unverified`` reason."""


class RewardRefused(VerifierFailure):
    """``reward.json`` holds a value that is not a number: the tests' output is malformed, as
    Harbor refuses it; a failure of kind ``verifier_error`` (one line: the file and the key),
    never read as a 0."""


@dataclass(frozen=True, slots=True)
class Reward:
    reward: float
    components: dict[str, float]
    """Every numeric component, ``reward`` included (one, named ``reward``, from reward.txt)."""
    source: str
    """Which file it came from: ``reward.json`` or ``reward.txt``."""


Reader = Callable[[str], bytes | None]
"""The content of a file of ``/logs/verifier`` by name; None when there is no such file."""


def read_reward(read: Reader, where: str = "reward.json") -> Reward:
    """The reward the tests wrote, ``read`` giving the files of the box's ``/logs/verifier``;
    ``RewardProblem`` when there is none to read, ``RewardRefused`` when ``reward.json`` (its
    path in the box: ``where``) holds a value that is not a number."""
    json_data = read("reward.json")
    if json_data is not None:
        components = _json_components(json_data, where)
        return Reward(_scalar(components), components, "reward.json")
    text_data = read("reward.txt")
    if text_data is not None:
        value = _text_reward(text_data)
        return Reward(value, {REWARD_KEY: value}, "reward.txt")
    raise RewardProblem("the tests wrote no reward (/logs/verifier/reward.txt or reward.json)")


def _text_reward(data: bytes) -> float:
    text = _text(data, "reward.txt")
    try:
        value = float(text)
    except ValueError:
        raise RewardProblem(f"reward.txt is not a number: {_shown(text)}") from None
    return _finite(value, "reward.txt")


def _json_components(data: bytes, where: str) -> dict[str, float]:
    text = _text(data, "reward.json")
    try:
        parsed = json.loads(text)
    except ValueError as error:
        raise RewardProblem(f"reward.json is not valid JSON ({error})") from None
    if not isinstance(parsed, dict):
        raise RewardProblem(f"reward.json must be a JSON object, not {type(parsed).__name__}")
    components: dict[str, float] = {}
    for key, value in parsed.items():
        if not isinstance(value, int | float):
            raise RewardRefused(
                f"{where}: key {key!r} is {_shown(json.dumps(value))}, not a number "
                f"(Harbor refuses such a file: the tests must write numbers only)"
            )
        try:
            number = float(value)
        except OverflowError:  # an integer past a float's range
            number = math.inf
        components[key] = _finite(number, f"reward.json's {key}")
    return components


def _scalar(components: dict[str, float]) -> float:
    if REWARD_KEY in components:
        return components[REWARD_KEY]
    if len(components) == 1:
        return next(iter(components.values()))
    names = ", ".join(sorted(components)) or "none"
    raise RewardProblem(
        f"reward.json has no 'reward' key and {len(components)} numeric components ({names}): "
        f"name the reward 'reward'"
    )


def _text(data: bytes, name: str) -> str:
    text = data.decode("utf-8", errors="replace")
    if not text.strip():
        raise RewardProblem(f"{name} is empty")
    return text


def _finite(value: float, where: str) -> float:
    if not math.isfinite(value):
        raise RewardProblem(f"{where} is {value}, not a finite number")
    return value


def _shown(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= 60 else text[:57] + "...")


NETWORK_SIGNS = (
    "could not resolve host",
    "temporary failure in name resolution",
    "temporary failure resolving",
    "name or service not known",
    "no address associated with hostname",
    "network is unreachable",
    "failed to establish a new connection",
    "unable to resolve host address",
    "nameresolutionerror",
    "failed to lookup address information",
    "could not connect to server",
)
"""What a program says when it cannot reach the network (curl, wget, apt, git, pip, uv,
Python's sockets): a box here has none, so tests that try write a 0 that says nothing about
the agent's work (Harbor's template test.sh installs its runner from the network)."""


def network_attempt(output: bytes | None) -> str | None:
    """The first line of the tests' ``output`` showing they tried to reach the network (cut
    to 200 characters), or None."""
    for line in (output or b"").decode(errors="replace").splitlines():
        lowered = line.lower()
        if any(sign in lowered for sign in NETWORK_SIGNS):
            text = " ".join(line.split())
            return text if len(text) <= 200 else text[:197] + "..."
    return None
