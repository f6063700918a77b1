"""Rollout files for the viewer's tests, built with the collector's own row functions.

Rows come from ``palaestra.collection.records`` (``rollout_row``, ``failure_row``), the functions
a real run writes with, so their shape is a run's. The token ids are SmolLM2's (the embedded
model's) for a real weather conversation, so the viewer can decode them with its vocabulary.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from palaestra.collection.records import dispatch_row, failure_row, rollout_row
from palaestra.types import AgentResult, Failure, FailureKind, JsonDict, Verdict

AGENT = {"type": "responses_api_agents", "name": "weather_tool_calling"}
SYSTEM = "You are a helpful assistant. Use the get_weather tool to answer questions."
LOCAL_MODEL = "SmolLM2-135M-Instruct"

# "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat's the
# weather like in San Francisco?<|im_end|>\n<|im_start|>assistant\n" in SmolLM2's vocabulary
PROMPT_IDS = [1, 9690, 198, 2683, 359, 253, 5356, 11173, 30, 2, 198, 1, 4093, 198, 1780, 506]
PROMPT_IDS += [260, 3947, 702, 281, 4653, 10463, 47, 2, 198, 1, 520, 9531, 198]
CALL_IDS = [22942, 30, 726, 79, 29624, 42, 198, 39428, 20721, 25535, 21541, 10463, 23597, 2]
TOOL_IDS = [198, 1, 19324, 198, 39428, 20721, 25535, 2, 198, 1, 520, 9531, 198]
ANSWER_IDS = [504, 3947, 281, 4653, 10463, 314, 4011, 30, 2]


def task(task_index: int, question: str, **fields: object) -> JsonDict:
    params = {
        "input": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": question},
        ]
    }
    row = {"responses_create_params": params, **fields}
    return dispatch_row(
        row,
        task_index=task_index,
        rollout_index=fields.pop("rollout", 0) or 0,  # type: ignore[arg-type]
        agent_ref=AGENT,
        overrides={},
    )


def _usage(input_tokens: int, output_tokens: int) -> JsonDict:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }


def tool_calling_response(
    city: str, *, with_tokens: bool = False, model: str = "scripted"
) -> JsonDict:
    call: JsonDict = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": orjson.dumps({"city": city}).decode(),
        "status": "completed",
    }
    answer: JsonDict = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [
            {"type": "output_text", "text": f"The weather in {city} is cold.", "annotations": []}
        ],
    }
    if with_tokens:
        call["prompt_token_ids"] = PROMPT_IDS
        call["generation_token_ids"] = CALL_IDS
        call["generation_log_probs"] = [-0.5] * len(CALL_IDS)
        answer["prompt_token_ids"] = PROMPT_IDS + CALL_IDS + TOOL_IDS
        answer["generation_token_ids"] = ANSWER_IDS
        answer["generation_log_probs"] = [-0.25] * len(ANSWER_IDS)
    output = [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": f"I should look up {city}."}],
        },
        call,
        {
            "call_id": "call_1",
            "output": orjson.dumps(
                {"city": city, "weather_description": f"The weather in {city} is cold."}
            ).decode(),
            "type": "function_call_output",
            "id": None,
            "status": "completed",
        },
        answer,
    ]
    return {"id": "resp_1", "model": model, "output": output, "usage": _usage(120, 30)}


def scored(
    task_index: int,
    city: str,
    reward: float,
    *,
    rollout: int = 0,
    with_tokens: bool = False,
    seconds: float = 1.0,
    model: str = "scripted",
) -> JsonDict:
    dispatched = task(task_index, f"What's the weather like in {city}?", expected_city=city)
    dispatched["_ng_rollout_index"] = rollout
    result = AgentResult(
        response=tool_calling_response(city, with_tokens=with_tokens, model=model),
        verdict=Verdict(
            reward=reward,
            reward_components={"called_tool": 1.0, "named_city": reward},
            metrics={"said_city": reward > 0},
        ),
        model_calls=2,
        tool_calls=1,
        timings={
            "seed": 0.001,
            "model": seconds * 0.8,
            "tools": 0.01,
            "verify": 0.002,
            "total": seconds,
        },
    )
    return rollout_row(dispatched, result, attempt=1)


def simulated_user(task_index: int, reward: float) -> JsonDict:
    dispatched = task(task_index, "Let's find a slot for our meeting.")
    output = [
        {"type": "message", "role": "user", "content": "Hi! When are you free next week?"},
        _assistant("How about Tuesday at 10?"),
        {"type": "message", "role": "user", "content": "Tuesday is bad for me; Wednesday works."},
        _assistant("Wednesday at 10 then."),
    ]
    result = AgentResult(
        response={"id": "resp_2", "model": "scripted", "output": output, "usage": _usage(200, 20)},
        verdict=Verdict(reward=reward, step_rewards=[0.0, reward]),
        model_calls=2,
        producers=["user", "policy", "user", "policy"],
        timings={"seed": 0.001, "model": 0.5, "steps": 0.01, "verify": 0.001, "total": 0.52},
    )
    return rollout_row(dispatched, result, attempt=1)


def _assistant(text: str) -> JsonDict:
    return {
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def failed(task_index: int, kind: FailureKind, reason: str, *, rollout: int = 0) -> JsonDict:
    dispatched = task(task_index, "What's the weather like in Atlantis?")
    dispatched["_ng_rollout_index"] = rollout
    call = {
        "type": "function_call",
        "id": "fc_9",
        "call_id": "call_9",
        "name": "get_weather",
        "arguments": '{"city": "Atlantis"}',
        "status": "completed",
    }
    result = AgentResult(
        response={"id": "resp_9", "model": "scripted", "output": [call], "usage": _usage(90, 10)},
        model_calls=1,
        tool_calls=1,
        timings={"seed": 0.001, "model": 0.3, "tools": 0.2, "total": 0.51},
    )
    return failure_row(dispatched, Failure(kind, reason), result, attempt=1)


def write_run(path: Path, rows: list[JsonDict], failures: list[JsonDict] = ()) -> Path:  # type: ignore[assignment]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    if failures:
        sidecar = path.with_name(path.name.removesuffix(".jsonl") + "_failures.jsonl")
        sidecar.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in failures))
    return path


CITIES = ["San Francisco", "Paris", "Tokyo", "Lima", "Oslo", "Cairo", "Sydney", "Quito"]


def small_run(path: Path) -> Path:
    """12 scored rollouts (one with token ids, one with a simulated user) and 3 failures."""
    rows = [
        scored(t, CITIES[t % len(CITIES)], float(t % 3 == 0), seconds=0.5 + t / 10)
        for t in range(10)
    ]
    rows.append(scored(10, "San Francisco", 1.0, with_tokens=True, model=LOCAL_MODEL))
    rows.append(simulated_user(11, 0.5))
    failures = [
        failed(
            12, FailureKind.TOOL_ERROR, "KeyError: 'Atlantis' (at weather.py:41 in get_weather)"
        ),
        failed(13, FailureKind.TIMEOUT, "get_weather ran past its 60 s limit"),
        failed(14, FailureKind.TOOL_ERROR, "KeyError: 'Mu' (at weather.py:41 in get_weather)"),
    ]
    return write_run(path, rows, failures)


def big_run(path: Path, rows: int) -> Path:
    """``rows`` rollouts of one shape with varying task, reward, time and tokens (1 in 50 a
    failure), written fast by reusing one row."""
    template = scored(0, "Paris", 1.0)
    failure = failed(0, FailureKind.TIMEOUT, "too slow")
    with (
        open(path, "wb") as out,
        open(path.with_name(path.name.removesuffix(".jsonl") + "_failures.jsonl"), "wb") as sidecar,
    ):
        for n in range(rows):
            if n % 50 == 49:
                failure["_ng_task_index"] = n // 4
                failure["_ng_rollout_index"] = n % 4
                sidecar.write(orjson.dumps(failure) + b"\n")
                continue
            template["_ng_task_index"] = n // 4
            template["_ng_rollout_index"] = n % 4
            template["reward"] = (n % 7) / 6
            template["_palaestra"]["timings"]["total"] = (n % 13) / 3
            template["response"]["usage"]["total_tokens"] = 100 + n % 997
            out.write(orjson.dumps(template) + b"\n")
    return path
