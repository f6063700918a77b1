"""NeMo Evaluator's environment protocol, spoken by the environment server beside NeMo Gym's.

``GET /health`` and ``GET /dataset_size`` describe the server's task list; a
``/seed_session`` body holding only ``idx`` picks task ``idx`` from it and answers the prompt;
a ``/verify`` body with an ``expected`` key is the evaluator form: the answer is plain text.
"""

from __future__ import annotations

import orjson

from palaestra.http.json import RequestError
from palaestra.types import JsonDict, assistant_message, input_items
from palaestra.wire.rows import PARAMS

PROTOCOL = "nemo-gym+nemo-evaluator"


def is_evaluator_seed(body: JsonDict) -> bool:
    return set(body) == {"idx"}


def is_evaluator_verify(body: JsonDict) -> bool:
    return "expected" in body


def task_at(dataset: list[JsonDict], body: JsonDict) -> tuple[int, JsonDict]:
    idx = body.get("idx")
    if not isinstance(idx, int) or isinstance(idx, bool):
        raise RequestError(422, "field 'idx' must be an integer", param="idx")
    if not 0 <= idx < len(dataset):
        raise RequestError(
            400, f"idx {idx} is out of range (dataset size {len(dataset)})", param="idx"
        )
    return idx, dataset[idx]


def prompt_of(idx: int, task: JsonDict) -> JsonDict:
    """The evaluator's view of a task: prompt, expected answer, metadata, messages, system.

    ``metadata`` is every field of the task but its params (``expected_answer`` too) and its
    ``idx``: NeMo Evaluator's ``GymSolver`` sends an agent the messages plus the metadata as
    the row to run, and that row must be the whole task (without ``expected_answer`` a
    palaestra agent's verify could only fail, which NeMo Evaluator reads as a reward of 0).
    """
    items = input_items(task[PARAMS])
    messages = [
        {"role": str(i.get("role", "user")), "content": _text(i.get("content"))}
        for i in items
        if i.get("type", "message") == "message"
    ]
    system = next((m["content"] for m in messages if m["role"] in ("system", "developer")), None)
    prompt = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    metadata = {k: v for k, v in task.items() if k != PARAMS}
    return {
        "prompt": prompt,
        "expected_answer": task.get("expected_answer"),
        "metadata": {"idx": idx, **metadata},
        "messages": messages,
        "system": system,
    }


def evaluator_task(body: JsonDict, dataset: list[JsonDict]) -> JsonDict:
    """The task an evaluator-form /verify is about: from ``metadata.idx``, else its fields."""
    metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    if "idx" in metadata and dataset:
        return task_at(dataset, {"idx": metadata["idx"]})[1]
    return {
        PARAMS: {"input": []},
        **metadata,
        "expected_answer": body.get("expected"),
    }


def indexed_task(body: JsonDict, dataset: list[JsonDict]) -> JsonDict | None:
    """The dataset row a Gym-form /verify names by ``metadata.idx`` or ``idx``, if any.

    (NeMo Evaluator's native client forwards the seed's metadata, ``idx`` included, as
    top-level fields.)
    """
    metadata = body.get("metadata")
    idx = metadata.get("idx") if isinstance(metadata, dict) else None
    if idx is None:
        idx = body.get("idx")
    if isinstance(idx, int) and not isinstance(idx, bool) and 0 <= idx < len(dataset):
        return dataset[idx]
    return None


def text_response(text: str) -> JsonDict:
    return {
        "id": "resp_evaluator",
        "object": "response",
        "status": "completed",
        "output": [assistant_message(text)],
    }


def evaluator_answer(body: JsonDict, fields: JsonDict) -> JsonDict:
    """``{reward, extracted_answer, scoring_details, metadata}`` from a verdict's fields."""
    details = {k: v for k, v in fields.items() if k not in ("reward", "extracted_answer")}
    return {
        "reward": fields.get("reward", 0.0),
        "extracted_answer": fields.get("extracted_answer"),
        "scoring_details": details,
        "metadata": body.get("metadata") or {},
    }


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else orjson.dumps(content).decode()
