"""Run a script of ``peer_scripts/`` with a peer's own Python and read the JSON it prints last."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import orjson

from tests.support.peers import peer_python

SCRIPTS = Path(__file__).parent / "peer_scripts"


def run_peer(peer: str, script: str, spec: dict[str, Any], *, cwd: Path) -> Any:
    """The JSON object ``script`` printed last; a failure shows the peer's own output."""
    python = peer_python(peer)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(RAY_USAGE_STATS_ENABLED="0", WANDB_MODE="disabled", HF_HUB_OFFLINE="1", NO_PROXY="*")
    done = subprocess.run(
        [str(python), str(SCRIPTS / script), orjson.dumps(spec).decode()],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, f"{script} failed:\n{done.stdout}\n{done.stderr}"
    return orjson.loads(lines[-1])
