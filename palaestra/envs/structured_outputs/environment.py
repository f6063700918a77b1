"""structured_outputs: the answer must parse as json/yaml/toml/xml/csv and fit a JSON Schema.

Task fields: ``schema`` (a JSON Schema, draft 2020-12), ``format`` (``json`` by default, or
``yaml``, ``toml``, ``xml``, ``csv``) and ``strict`` (default true: every object must have all
its properties and no others). Reward 1 when the answer parses and validates, else 0, with an
``error_type`` metric: ``none``, ``no_answer``, ``parse_error`` or ``schema_error``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from typing import Any

from palaestra import (
    Environment,
    FailureKind,
    JsonDict,
    Session,
    Verdict,
    output_text,
    strip_reasoning,
)
from palaestra.envs.structured_outputs.documents import (
    FORMATS,
    ParseError,
    answer_body,
    parse,
    strict_schema,
)
from palaestra.envs.structured_outputs.generator import make_task

MAX_ANSWER_CHARS = 200_000


class StructuredOutputs(Environment):
    """Answer as JSON/YAML/TOML/XML/CSV matching a JSON Schema; reward 1 or 0 with error_type."""

    name = "structured_outputs"

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        text = strip_reasoning(output_text(response))
        # Parsing and validating a large document is CPU work: keep it off the event loop.
        result = await asyncio.to_thread(check_answer, session.task, text)
        if result["error_type"] == "invalid_task":
            return Verdict.failed(FailureKind.INVALID_INPUT, result["error"])
        return Verdict(reward=1.0 if result["error_type"] == "none" else 0.0, metrics=result)

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """Random schemas over a few themes (book, city, product, ...), in all five formats."""
        rng = random.Random(seed)
        for _ in range(count):
            yield make_task(rng)


def check_answer(task: JsonDict, text: str) -> dict[str, Any]:
    """Score ``text`` for ``task``: a dict with ``error_type``, ``error`` and ``format``.

    A pure function of its arguments, so stored rollouts can be re-verified.
    """
    from jsonschema import Draft202012Validator, SchemaError
    from jsonschema.exceptions import best_match

    fmt = task.get("format", "json")
    schema = task.get("schema")
    if fmt not in FORMATS or not isinstance(schema, dict):
        return _result("invalid_task", f"need a 'schema' object and a 'format' in {FORMATS}", fmt)
    if task.get("strict", True):
        schema = strict_schema(schema)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        return _result("invalid_task", f"the task's schema is invalid: {error.message}", fmt)
    body = answer_body(text)
    if not body:
        return _result("no_answer", "the answer is empty", fmt)
    if len(body) > MAX_ANSWER_CHARS:
        return _result("parse_error", f"the answer is over {MAX_ANSWER_CHARS} characters", fmt)
    try:
        data = parse(body, fmt, schema)
    except ParseError as error:
        return _result("parse_error", str(error), fmt)
    mismatch = best_match(Draft202012Validator(schema).iter_errors(data))
    if mismatch is not None:
        where = "/".join(str(p) for p in mismatch.absolute_path) or "(top level)"
        return _result("schema_error", f"{where}: {mismatch.message}"[:300], fmt)
    return _result("none", "", fmt)


def _result(error_type: str, error: str, fmt: Any) -> dict[str, Any]:
    return {"error_type": error_type, "error": error, "format": str(fmt)}
