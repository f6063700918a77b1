"""``mini_swe_agent``: the unmodified mini-swe-agent from PyPI, driving the task's box.

mini-swe-agent (the SWE-bench reference harness) is installed in a venv of its own by
``scripts/install_harnesses.sh`` (its dependencies never meet palaestra's) and run per rollout
as a command line (``palaestra.agents.command``). Everything it is told comes through its own
documented settings, written to a config file in the rollout's private directory (the key
stays out of ``ps``), over the built-in config it is given (``config``, default ``mini.yaml``):

- its model: litellm's OpenAI client (``model_name`` ``openai/...``) at the rollout's gateway
  URL with the rollout's key, so every call is recorded; cost tracking off (a local model has
  no price), the step limit ``max_steps``;
- its environment: its ``docker`` environment with ``executable`` the rollout's ``box-exec
  --docker`` (``palaestra.agents.box_exec``), so each command it runs, it runs in the task's
  box, in the image's working directory;
- its agent: the non-interactive ``default`` agent, its trajectory file kept private.

mini-swe-agent picks its model class by the model's name, not by its config: its
``mini_textbased.yaml`` asks for actions in a fenced block but leaves the model class that
parses them (``litellm_textbased``) to a command-line flag. So a ``config`` whose name starts
with ``mini_textbased`` gets that class unless ``model_class`` names another.

It needs tasks with a box (``terminal``, ``swe_local``, ``harbor:``). The task's own verifier
scores the box it leaves; a run that crashes, hangs or never calls the model is an
``agent_error``.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from pathlib import Path

from palaestra.agents.box_exec import DOCKER_NAME
from palaestra.agents.command import CommandAgent
from palaestra.errors import ConfigError

HARNESSES_VARIABLE = "PALAESTRA_HARNESSES"
"""Where ``scripts/install_harnesses.sh`` put the harness venvs, when not the default."""
VENV = "mini-swe-agent"
"""The venv's name under the harnesses' directory."""
TEXTBASED_CONFIG = "mini_textbased"
"""How the names of mini-swe-agent's configs for text actions start."""
TEXTBASED_MODEL = "litellm_textbased"
"""Its model class that reads an action from a fenced block of the answer."""


def harnesses_dir() -> Path:
    """``$PALAESTRA_HARNESSES``, else ``~/.cache/palaestra/harnesses`` (as the script has it)."""
    given = os.environ.get(HARNESSES_VARIABLE)
    if given:
        return Path(given)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "palaestra" / "harnesses"


def installed(agent: str, what: str, venv: str, program: str, path: str | None, given: str) -> Path:
    """A harness' ``program`` in its venv: ``path`` (the program, or a venv holding it), else
    the installed venv ``venv``'s; a one-line ``ConfigError`` saying how to install it."""
    where = Path(path).expanduser() if path else harnesses_dir() / venv
    found = where / "bin" / program if where.is_dir() else where
    if not (found.is_file() and os.access(found, os.X_OK)):
        raise ConfigError(
            f"agent '{agent}': {what} is not installed at {where}: run "
            f"`bash scripts/install_harnesses.sh`, or give --agent-arg path=<{given}>"
        )
    return found


def find_mini(path: str | None) -> Path:
    """mini-swe-agent's ``mini`` command (``installed``)."""
    return installed("mini_swe_agent", "mini-swe-agent", VENV, "mini", path, "its venv or mini")


class MiniSweAgent(CommandAgent):
    """mini-swe-agent on the task's box, its model calls through the gateway.

    ``path``: its venv or ``mini`` command (default: the installed venv); ``config``: the
    built-in config (or a YAML file) its settings go over; ``max_steps``: its step limit;
    ``model_name``: the litellm model name it is given (the gateway serves the run's model
    whatever the name); ``model_class``: its model class (``litellm``, ``litellm_textbased``,
    ...; default: ``litellm_textbased`` for a ``mini_textbased`` config, else its own
    choice); ``model_attempts``: how often it tries a failing model call;
    ``timeout``, ``box_timeout``, ``stderr_lines``: as for ``command``.
    """

    name = "mini_swe_agent"

    def __init__(
        self,
        *,
        path: str | None = None,
        config: str = "mini.yaml",
        max_steps: int = 30,
        model_name: str = "openai/palaestra",
        model_class: str = "",
        model_attempts: int = 3,
        timeout: float = 1800.0,
        box_timeout: float = 120.0,
        stderr_lines: int = 20,
    ) -> None:
        if max_steps < 1 or model_attempts < 1:
            raise ConfigError("agent 'mini_swe_agent': max_steps and model_attempts must be >= 1")
        self.mini = find_mini(path)
        self.config = config
        self.max_steps = max_steps
        self.model_name = model_name
        textbased = Path(config).name.startswith(TEXTBASED_CONFIG)
        self.model_class = model_class or (TEXTBASED_MODEL if textbased else "")
        self.model_attempts = model_attempts
        super().__init__(
            cmd=f"{shlex.quote(str(self.mini))} {{box_exec}}",  # what preflight checks
            timeout=timeout,
            box_timeout=box_timeout,
            stderr_lines=stderr_lines,
        )

    def command_line(self, values: Mapping[str, str], directory: Path) -> str:
        settings = directory / "palaestra.yaml"  # JSON is YAML
        settings.write_text(json.dumps(self.settings(values, directory)), encoding="utf-8")
        settings.chmod(0o600)
        return shlex.join(
            [
                str(self.mini),
                *("-c", self.config, "-c", str(settings)),
                *("--agent-class", "default"),
                *("-t", values["instruction"]),
                *("-o", str(directory / "trajectory.json")),
            ]
        )

    def settings(self, values: Mapping[str, str], directory: Path) -> dict[str, object]:
        """mini-swe-agent's config for one rollout (merged over ``config``)."""
        return {
            "agent": {
                "step_limit": self.max_steps,
                "cost_limit": 0,
                "output_path": str(directory / "trajectory.json"),
            },
            "model": {
                "model_name": self.model_name,
                **({"model_class": self.model_class} if self.model_class else {}),
                "cost_tracking": "ignore_errors",
                "model_kwargs": {
                    "api_base": values["base_url"],
                    "api_key": values["api_key"],
                    "drop_params": True,
                },
            },
            "environment": {
                "environment_class": "docker",
                "executable": str(directory / DOCKER_NAME),
                "image": "palaestra-box",
                "cwd": ".",  # the image's working directory: where the box's shell starts
                "timeout": int(self.box_timeout) + 10,
                "run_args": [],
            },
        }

    def harness_environment(self, directory: Path) -> dict[str, str]:
        return {
            "MSWEA_CONFIGURED": "true",  # no first-run questions
            "MSWEA_SILENT_STARTUP": "1",
            "MSWEA_GLOBAL_CONFIG_DIR": str(directory / "mini-swe-agent"),
            "MSWEA_COST_TRACKING": "ignore_errors",
            "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": str(self.model_attempts),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no download of litellm's price list
        }
