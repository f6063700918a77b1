"""``openhands``: OpenHands' agent (``openhands-sdk`` from PyPI, unmodified) on the task's box.

The SDK and its tools (``openhands-tools``) are installed in a venv of their own by
``scripts/install_harnesses.sh`` (they need Python 3.12 and a large tree of dependencies that
never meet palaestra's). Per rollout, the venv's interpreter runs a small driver of ours
(``palaestra.agents.openhands_driver``) that builds the SDK's agent through its documented
API and runs its conversation on the task's instruction:

- its ``LLM`` (litellm) at the rollout's gateway URL with the rollout's key, so every call
  is recorded and the trajectory is the gateway's;
- its ``TerminalTool``, whose executor (the tool's documented ``executor`` argument) runs
  each command in the task's box through ``{box_exec}`` (``palaestra.agents.box_exec``);
  the working directory carries over between commands, as in a terminal;
- its own system prompt, its built-in finish and think tools, its iteration limit
  (``max_iterations``) and its stuck detection;
- with ``condenser="llm_summarizing"``, its own history condenser
  (``LLMSummarizingCondenser``, on a copy of the same ``LLM``, as the SDK's presets make it):
  once the conversation holds more than ``condenser_max_size`` events it asks the model for a
  summary of the older ones and goes on from the first ``condenser_keep_first`` events, the
  summary and the newest ones. The summary call extends no call before it, and the agent's
  next call extends at most the calls within the events it kept: each starts a branch of the
  rollout's tree (``palaestra.training.tree``).

Why OpenHands' SDK rather than Harbor's Terminus-2: Terminus-2 drives a ``tmux`` session
inside the environment and installs ``tmux`` with the box's package manager (or builds it
from source) when the image lacks it; palaestra's boxes have no network and their images no
``tmux``, so it cannot start there. The SDK's terminal takes an executor of the caller's,
so its commands reach the box with nothing installed in it.

It needs tasks with a box (``terminal``, ``swe_local``, ``harbor:``). The task's own verifier
scores the box it leaves; a run that crashes, hangs or never calls the model is an
``agent_error``.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path

from palaestra.agents.command import CommandAgent
from palaestra.agents.mini_swe_agent import installed
from palaestra.errors import ConfigError

VENV = "openhands"
"""The venv's name under the harnesses' directory."""
CONDENSERS = ("none", "llm_summarizing")
"""What ``condenser`` takes: no condenser (the SDK's default for an ``Agent``), or the SDK's
``LLMSummarizingCondenser``."""
_DRIVER = Path(__file__).with_name("openhands_driver.py")


def find_python(path: str | None) -> Path:
    """The Python of the venv holding the SDK (``installed``)."""
    return installed("openhands", "OpenHands' SDK", VENV, "python", path, "its venv")


class OpenHandsAgent(CommandAgent):
    """OpenHands' agent on the task's box, its model calls through the gateway.

    ``path``: the SDK's venv (default: the installed one); ``max_iterations``: the
    conversation's iteration limit; ``model_name``: the litellm model name it is given (the
    gateway serves the run's model whatever the name); ``model_attempts``: how often it tries
    a failing model call; ``model_timeout``: seconds one model call may take; ``condenser``:
    ``none`` or ``llm_summarizing`` (its history condenser, see the module docstring), with
    ``condenser_max_size`` and ``condenser_keep_first`` (the SDK's ``max_size`` and
    ``keep_first``, their defaults those of its presets); ``timeout``, ``box_timeout``,
    ``stderr_lines``: as for ``command``.
    """

    name = "openhands"

    def __init__(
        self,
        *,
        path: str | None = None,
        max_iterations: int = 30,
        model_name: str = "openai/palaestra",
        model_attempts: int = 3,
        model_timeout: int = 600,
        condenser: str = "none",
        condenser_max_size: int = 80,
        condenser_keep_first: int = 4,
        timeout: float = 1800.0,
        box_timeout: float = 120.0,
        stderr_lines: int = 20,
    ) -> None:
        if max_iterations < 1 or model_attempts < 1 or model_timeout < 1:
            raise ConfigError(
                "agent 'openhands': max_iterations, model_attempts and model_timeout must be >= 1"
            )
        if condenser not in CONDENSERS:
            raise ConfigError(
                f"agent 'openhands': condenser {condenser!r} is none of {', '.join(CONDENSERS)}"
            )
        if condenser_keep_first < 0 or condenser_max_size // 2 - condenser_keep_first - 1 < 1:
            raise ConfigError(  # the SDK's own rule, told before the harness starts
                "agent 'openhands': condenser_keep_first must be >= 0 and below "
                "condenser_max_size // 2 - 1 (room for the events the condenser keeps)"
            )
        self.python = find_python(path)
        self.max_iterations = max_iterations
        self.model_name = model_name
        self.model_attempts = model_attempts
        self.model_timeout = model_timeout
        self.condenser = condenser
        self.condenser_max_size = condenser_max_size
        self.condenser_keep_first = condenser_keep_first
        super().__init__(
            cmd=f"{shlex.quote(str(self.python))} {{box_exec}}",  # what preflight checks
            timeout=timeout,
            box_timeout=box_timeout,
            stderr_lines=stderr_lines,
        )

    def command_line(self, values: Mapping[str, str], directory: Path) -> str:
        settings = directory / "openhands.json"
        settings.write_text(json.dumps(self.settings(values)), encoding="utf-8")
        settings.chmod(0o600)
        return shlex.join([str(self.python), "-I", str(_DRIVER), str(settings)])

    def settings(self, values: Mapping[str, str]) -> dict[str, object]:
        """What the driver builds the SDK's agent from, for one rollout."""
        return {
            "base_url": values["base_url"],
            "api_key": values["api_key"],
            "model": self.model_name,
            "instruction": values["instruction"],
            "box_exec": values["box_exec"],
            "workdir": values["workdir"],
            "max_iterations": self.max_iterations,
            "box_timeout": self.box_timeout,
            "model_attempts": self.model_attempts,
            "model_timeout": self.model_timeout,
            "condenser": None
            if self.condenser == "none"
            else {"max_size": self.condenser_max_size, "keep_first": self.condenser_keep_first},
        }

    def harness_environment(self, directory: Path) -> dict[str, str]:
        home = directory / "home"  # where the SDK keeps its own files: private, removed after
        home.mkdir(exist_ok=True)
        return {
            "HOME": str(home),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no download of litellm's price list
            "OPENHANDS_SUPPRESS_BANNER": "1",
            "LOG_LEVEL": "WARNING",  # the SDK's own logs: its warnings and errors, not its steps
        }
