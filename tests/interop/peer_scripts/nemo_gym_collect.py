"""Run NeMo Gym 0.4's own collector (and its simple_agent, when asked) against palaestra servers.

Runs in the nemo-gym peer venv, never in palaestra's. ``argv[1]`` is a JSON spec::

    {"workdir": str, "rows": [...], "servers": {name: {"kind", "host", "port", ...}},
     "simple_agent": name | null}

Servers are named as NeMo Gym's global config names them; ``simple_agent`` names the entry
this script serves itself with NeMo Gym's ``SimpleAgent`` (its ``resources_server`` and
``model_server`` entries name the others). NeMo Gym's head server is not needed: the collector
is handed a ``ServerClient`` built from the same config. Prints one JSON object: the rows of
the output and failures files, the aggregate, and the error that stopped the run, if any.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import uvicorn
from nemo_gym.config_types import BaseServerConfig
from nemo_gym.global_config import NEMO_GYM_CONFIG_DICT_ENV_VAR_NAME
from nemo_gym.rollout_collection import RolloutCollectionConfig, RolloutCollectionHelper
from nemo_gym.server_utils import ServerClient
from omegaconf import OmegaConf


def serve_simple_agent(name: str) -> None:
    """Serve NeMo Gym's SimpleAgent as ``ng_run`` would, from the config in the environment.

    In a process of its own: NeMo Gym's HTTP client is one per process, bound to one loop.
    """
    from nemo_gym.global_config import get_global_config_dict
    from responses_api_agents.simple_agent.app import SimpleAgent, SimpleAgentConfig

    config_dict = get_global_config_dict()
    entry = dict(config_dict[name]["responses_api_agents"][name])
    config = SimpleAgentConfig.model_validate({**entry, "name": name})
    client = ServerClient(
        head_server_config=BaseServerConfig(host="127.0.0.1", port=1),
        global_config_dict=config_dict,
    )
    app = SimpleAgent(config=config, server_client=client).setup_webserver()
    uvicorn.run(app, host=entry["host"], port=entry["port"], log_level="warning")


def start_simple_agent(name: str, entry: dict) -> subprocess.Popen:
    agent = subprocess.Popen([sys.executable, __file__, "--serve-simple-agent", name])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and agent.poll() is None:
        with socket.socket() as probe:
            if probe.connect_ex((entry["host"], entry["port"])) == 0:
                return agent
        time.sleep(0.05)
    agent.kill()
    raise RuntimeError("NeMo Gym's simple_agent did not start")


def main() -> None:
    spec = json.loads(sys.argv[1])
    work = Path(spec["workdir"])
    global_config = {}
    for name, entry in spec["servers"].items():
        kind = entry.pop("kind")
        global_config[name] = {kind: {name: {"entrypoint": "app.py", **entry}}}
    # How ng_run hands its servers their config: NeMo Gym's global config, from the environment.
    os.environ[NEMO_GYM_CONFIG_DICT_ENV_VAR_NAME] = json.dumps(global_config)
    client = ServerClient(
        head_server_config=BaseServerConfig(host="127.0.0.1", port=1),  # never contacted
        global_config_dict=OmegaConf.create(global_config),
    )
    agent = None
    if spec.get("simple_agent"):
        name = spec["simple_agent"]
        agent = start_simple_agent(name, global_config[name]["responses_api_agents"][name])
    RolloutCollectionHelper.setup_server_client = lambda self, head_server_config=None: client
    inputs = work / "input.jsonl"
    inputs.write_text("".join(json.dumps(row) + "\n" for row in spec["rows"]))
    output = work / "rollouts.jsonl"
    config = RolloutCollectionConfig(
        input_jsonl_fpath=str(inputs),
        output_jsonl_fpath=str(output),
        upload_rollouts_to_wandb=False,
    )
    error = None
    try:
        asyncio.run(RolloutCollectionHelper().run_from_config(config))
    except Exception as exc:  # the collector stopping its whole run is what tests look for
        error = f"{type(exc).__name__}: {exc}"
    finally:
        if agent is not None:
            agent.terminate()
            agent.wait(timeout=10)

    def rows(path: Path) -> list:
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    aggregate = work / "rollouts_aggregate_metrics.json"
    print(
        json.dumps(
            {
                "rollouts": rows(output),
                "failures": rows(work / "rollouts_failures.jsonl"),
                "aggregate": json.loads(aggregate.read_text()) if aggregate.exists() else None,
                "error": error,
            }
        )
    )


if __name__ == "__main__":
    if sys.argv[1] == "--serve-simple-agent":
        serve_simple_agent(sys.argv[2])
    else:
        main()
