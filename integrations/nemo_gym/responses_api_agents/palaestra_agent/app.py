"""palaestra's agent as a NeMo Gym agent server, started by ``ng_run`` like any other.

``ng_run`` runs ``python app.py`` in this directory with NeMo Gym's global config in
``NEMO_GYM_CONFIG_DICT`` (YAML) and this server's name in ``NEMO_GYM_CONFIG_PATH``. This reads
the entry (host, port, and palaestra's own keys: ``env`` or ``resources_server``, ``model`` or
``model_server``, ``agent``, ``max_steps``), resolves the servers it names to URLs through the
same config, and becomes ``palaestra serve agent`` (``exec``: the process ng_run watches is the
server). Only palaestra is needed in this server's venv, not nemo_gym.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import yaml


def entry_of(config: dict[str, Any], name: str) -> dict[str, Any]:
    """A server's settings: ``config[name][<server type>][<implementation>]``."""
    (by_impl,) = config[name].values()
    (entry,) = by_impl.values()
    return dict(entry)


def url_of(config: dict[str, Any], reference: dict[str, Any]) -> str:
    """The base URL of the server a ``{type, name}`` reference names."""
    target = entry_of(config, str(reference["name"]))
    return f"http://{target['host']}:{target['port']}"


def serve_argv(config: dict[str, Any], name: str) -> list[str]:
    """``palaestra serve agent`` arguments for the agent server ``name`` of ``config``."""
    entry = entry_of(config, name)
    argv = ["-m", "palaestra", "serve", "agent"]
    if entry.get("resources_server"):
        argv += ["--env-url", url_of(config, entry["resources_server"])]
    elif entry.get("env"):
        argv += ["--env", str(entry["env"])]
    else:
        raise SystemExit(f"error: {name}: set env (a palaestra environment) or resources_server")
    if entry.get("model_server"):
        argv += ["--model", url_of(config, entry["model_server"]) + "/v1"]
    else:
        argv += ["--model", str(entry.get("model") or "local")]
    for key, flag in (("agent", "--agent"), ("max_steps", "--max-steps")):
        if entry.get(key) is not None:
            argv += [flag, str(entry[key])]
    return [*argv, "--host", str(entry["host"]), "--port", str(entry["port"])]


def main() -> None:
    config = yaml.safe_load(os.environ["NEMO_GYM_CONFIG_DICT"])
    argv = serve_argv(config, os.environ["NEMO_GYM_CONFIG_PATH"])
    os.execv(sys.executable, [sys.executable, *argv])


if __name__ == "__main__":
    main()
