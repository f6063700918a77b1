"""Harbor's own package reads task folders: run with the harbor peer's Python.

argv[1]: JSON ``{"root": DIR}``. Each folder in DIR is loaded with ``harbor.models.task.task.Task``
(its TaskConfig and layout checks) and linted with ``harbor.lint.task.lint_task`` under Harbor's
default rules. Prints one JSON object: per task, the fields Harbor read and its findings.
"""

import json
import sys
from pathlib import Path

from harbor.lint.models import DEFAULT_RULES
from harbor.lint.task import lint_task
from harbor.models.task.config import TaskConfig
from harbor.models.task.task import Task

spec = json.loads(sys.argv[1])
tasks = []
for folder in sorted(Path(spec["root"]).iterdir()):
    task = Task(folder)
    config = task.config
    tasks.append(
        {
            "name": task.name,
            "valid": Task.is_valid_dir(folder),
            "instruction": task.instruction,
            "schema_version": config.schema_version,
            "network_mode": config.environment.network_mode.value,
            "cpus": config.environment.cpus,
            "memory_mb": config.environment.memory_mb,
            "storage_mb": config.environment.storage_mb,
            "build_timeout_sec": config.environment.build_timeout_sec,
            "agent_timeout_sec": config.agent.timeout_sec,
            "agent_user": config.agent.user,
            "verifier_timeout_sec": config.verifier.timeout_sec,
            "metadata": config.metadata,
            "has_solution": task.paths.discovered_solve_path is not None,
            "findings": [
                {"rule": str(finding.rule), "message": finding.message}
                for finding in lint_task(folder, selected_rules=set(DEFAULT_RULES))
            ],
        }
    )
# Harbor writing a task.toml with every section set: palaestra must read it without an unknown key.
full = TaskConfig.model_validate(
    {
        "task": {"name": "org/name", "version": "1", "authors": [{"name": "a"}]},
        "metadata": {"difficulty": "easy"},
        "source": "s",
        "verifier": {
            "timeout_sec": 5,
            "env": {"A": "1"},
            "user": "root",
            "environment_mode": "separate",
            "environment": {"cpus": 1},
        },
        "agent": {
            "timeout_sec": 6,
            "user": 1000,
            "network_mode": "allowlist",
            "allowed_hosts": ["example.com"],
        },
        "environment": {
            "docker_image": "debian:bookworm-slim",
            "cpus": 2.5,
            "memory_mb": 1,
            "storage_mb": 2,
            "gpus": 0,
            "env": {"B": "2"},
            "workdir": "/app",
            "healthcheck": {"command": "true"},
            "network_mode": "no-network",
            "mcp_servers": [{"name": "m", "transport": "stdio", "command": "x"}],
        },
        "solution": {"env": {"C": "3"}},
        "artifacts": ["/logs/out"],
    }
)
print(json.dumps({"tasks": tasks, "harbor_written": full.model_dump_toml()}))
