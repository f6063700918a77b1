"""Harbor's own package reads and writes ATIF trajectories: run with the harbor peer's Python.

argv[1]: JSON ``{"root": DIR, "written": FILE}``. Each ``.json`` file in DIR is checked with
``harbor.utils.trajectory_validator.TrajectoryValidator`` (its errors listed), parsed with
Harbor's ``Trajectory`` model and dumped again with ``to_json_dict`` (what Harbor keeps of it),
and its token usage summed with ``harbor.utils.trajectory_utils.compute_model_usage``. Then a
trajectory built with Harbor's models (a user step, an agent step with a tool call, its
observation and token ids, a final answer) is written to FILE, validated the same way.
Prints one JSON object.
"""

import json
import sys
from pathlib import Path

from harbor.models.trajectories import (
    Agent,
    FinalMetrics,
    Metrics,
    Observation,
    ObservationResult,
    Step,
    ToolCall,
    Trajectory,
)
from harbor.utils.trajectory_utils import compute_model_usage
from harbor.utils.trajectory_validator import TrajectoryValidator

spec = json.loads(sys.argv[1])
files = []
for path in sorted(Path(spec["root"]).glob("*.json")):
    validator = TrajectoryValidator()
    valid = validator.validate(path)
    trajectory = Trajectory.model_validate_json(path.read_text())
    usage = compute_model_usage(trajectory)
    files.append(
        {
            "name": path.name,
            "valid": valid,
            "errors": validator.get_errors(),
            "schema_version": trajectory.schema_version,
            "kept": trajectory.to_json_dict(),
            "output_tokens": sum(u.n_output_tokens for u in usage.values()),
        }
    )

written = Trajectory(
    schema_version="ATIF-v1.7",
    session_id="harbor-run",
    agent=Agent(name="terminus-2", version="2.0", model_name="some-model"),
    steps=[
        Step(step_id=1, source="user", message="Count the files in /app."),
        Step(
            step_id=2,
            source="agent",
            message="I will list them.",
            tool_calls=[
                ToolCall(tool_call_id="c1", function_name="bash", arguments={"cmd": "ls /app"})
            ],
            observation=Observation(
                results=[ObservationResult(source_call_id="c1", content="a.txt\nb.txt")]
            ),
            metrics=Metrics(
                prompt_tokens=3,
                completion_tokens=2,
                prompt_token_ids=[1, 2, 3],
                completion_token_ids=[4, 5],
                logprobs=[-0.1, -0.2],
            ),
        ),
        Step(step_id=3, source="agent", message="There are 2 files."),
    ],
    final_metrics=FinalMetrics(total_prompt_tokens=3, total_completion_tokens=2),
    extra={"reward": 1.0},
)
Path(spec["written"]).write_text(json.dumps(written.to_json_dict()))
validator = TrajectoryValidator()
print(
    json.dumps(
        {
            "files": files,
            "written_valid": validator.validate(Path(spec["written"])),
            "written_errors": validator.get_errors(),
        }
    )
)
