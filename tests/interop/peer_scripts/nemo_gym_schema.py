"""Check what palaestra wrote against NeMo Gym 0.4's own schema classes and readers.

Runs in the nemo-gym peer venv, never in palaestra's. ``argv[1]`` is a JSON spec::

    {"output": path, "verify_answers": [...], "verify_failure": {...}}

``output`` is a palaestra run's output file; its failures, materialized inputs and aggregate
files sit beside it under NeMo Gym's names. Prints one JSON object: ``problems`` (each a line
naming the file, the row and what NeMo Gym's code said) and the facts the test compares.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from nemo_gym.base_resources_server import BaseVerifyResponse
from nemo_gym.config_types import AggregateMetrics
from nemo_gym.openai_utils import NeMoGymFunctionCallOutput, NeMoGymResponse
from nemo_gym.reward_profile import compute_aggregate_metrics
from nemo_gym.rollout_collection import (
    NG_FAILURE_CLASS_KEY,
    RolloutCollectionConfig,
    RolloutCollectionHelper,
)
from pydantic import ValidationError

FAILURE_CLASSES = {"kill_shaped", "timeout_exceeded", "skipped", "transient", "legitimate"}


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check_response(where: str, response: Any, problems: list[str]) -> None:
    """A Response NeMo Gym validates, field for field in its order, that it would write alike."""
    try:
        parsed = NeMoGymResponse.model_validate(response)
    except ValidationError as error:
        problems.append(f"{where}: NeMoGymResponse: {error}")
        return
    fields = list(NeMoGymResponse.model_fields)
    if list(response)[: len(fields)] != fields:
        problems.append(f"{where}: fields {list(response)} are not NeMo Gym's {fields}")
    dumped = parsed.model_dump(mode="json")
    lost = {k: response[k] for k in fields if dumped.get(k) != response.get(k) and k != "output"}
    if lost:
        problems.append(f"{where}: NeMo Gym would write {sorted(lost)} differently")
    for position, item in enumerate(response["output"]):
        if item.get("type") != "function_call_output":
            continue
        order = list(NeMoGymFunctionCallOutput.model_fields)
        parsed_item = NeMoGymFunctionCallOutput.model_validate(item).model_dump(mode="json")
        if list(item) != order or parsed_item != item:
            problems.append(f"{where}: output[{position}] {item} is not NeMo Gym's {order}")


def main(spec: dict[str, Any]) -> dict[str, Any]:
    problems: list[str] = []
    output = Path(spec["output"])
    failures_path = output.with_name(output.stem + "_failures.jsonl")
    aggregate_path = output.with_name(output.stem + "_aggregate_metrics.json")
    scored, failed = rows(output), rows(failures_path)

    for number, row in enumerate(scored, 1):
        where = f"{output.name}:{number}"
        try:
            BaseVerifyResponse.model_validate(row)
        except ValidationError as error:
            problems.append(f"{where}: BaseVerifyResponse: {error}")
        check_response(where, row["response"], problems)

    for number, row in enumerate(failed, 1):
        where = f"{failures_path.name}:{number}"
        if row.get(NG_FAILURE_CLASS_KEY) not in FAILURE_CLASSES:
            problems.append(f"{where}: {NG_FAILURE_CLASS_KEY} is {row.get(NG_FAILURE_CLASS_KEY)!r}")
        if row.get("response") is not None:
            check_response(where, row["response"], problems)

    # NeMo Gym's resume reads the run's files as its own: done pairs skipped, failures counted.
    config = RolloutCollectionConfig(
        input_jsonl_fpath=str(output), output_jsonl_fpath=str(output), resume_from_cache=True
    )
    try:
        to_run, done, _, _ = RolloutCollectionHelper()._load_from_cache(config)
        resume = {"to_run": len(to_run), "done": len(done)}
    except Exception as error:  # any failure of NeMo Gym's reader is the finding
        problems.append(f"NeMo Gym's resume cannot read the run: {type(error).__name__}: {error}")
        resume = {}

    # NeMo Gym's aggregate of the same rows, stripped as its collector strips them.
    stripped = []
    for row in scored:
        entry = {k: v for k, v in row.items() if k not in ("response", "responses_create_params")}
        entry["response"] = {"usage": row["response"]["usage"]}
        stripped.append(entry)
    theirs = compute_aggregate_metrics(stripped)
    ours = json.loads(aggregate_path.read_text())
    for number, entry in enumerate(ours):
        try:
            AggregateMetrics.model_validate(entry)
        except ValidationError as error:
            problems.append(f"{aggregate_path.name}[{number}]: AggregateMetrics: {error}")

    for position, answer in enumerate(spec["verify_answers"]):
        try:
            BaseVerifyResponse.model_validate(answer)
        except ValidationError as error:
            problems.append(f"/verify answer {position}: BaseVerifyResponse: {error}")
    failure = spec["verify_failure"]
    if failure.get(NG_FAILURE_CLASS_KEY) not in FAILURE_CLASSES:
        problems.append(f"/verify failure: {NG_FAILURE_CLASS_KEY} is missing")
    return {
        "problems": problems,
        "resume": resume,
        "their_agent_metrics": theirs.agent_metrics,
        "their_key_metrics": theirs.key_metrics,
        "our_aggregate": ours,
    }


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
