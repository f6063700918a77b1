"""function_calling: emit the right function call(s) in one step (Berkeley Function Calling data).

The model's calls are scored, never executed. Run it with ``--agent single_turn``; under the
tool-calling agent only the calls of the model's first answer count.
"""

from __future__ import annotations

from collections.abc import Iterator

from palaestra import ConfigError, Environment, FailureKind, JsonDict, Session, Verdict
from palaestra.envs._shared.bfcl import draw
from palaestra.envs.function_calling.compare import check_calls, first_turn_calls, reference_calls
from palaestra.envs.function_calling.data import ALLOWED_CATEGORIES, CATEGORIES, load_tasks


class FunctionCalling(Environment):
    """Single-step tool-call correctness on BFCL tasks: right functions, right typed arguments."""

    name = "function_calling"

    def __init__(self, categories: tuple[str, ...] = CATEGORIES) -> None:
        """``categories``: the BFCL categories ``generate_tasks`` draws from (on the command
        line ``--env-arg categories=simple_python,multiple``)."""
        for category in categories:
            if category not in ALLOWED_CATEGORIES:
                raise ConfigError(
                    f"function_calling: categories: {category!r} is not one of "
                    f"{', '.join(ALLOWED_CATEGORIES)}"
                )
        if not categories:
            raise ConfigError("function_calling: categories: name at least one category")
        self.categories = tuple(categories)

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        task = session.task
        expected = task.get("expected_calls")
        params = task.get("responses_create_params")
        tools = params.get("tools") if isinstance(params, dict) else None
        if not isinstance(expected, list) or not all(isinstance(e, dict) for e in expected):
            return Verdict.failed(
                FailureKind.INVALID_INPUT, "the task has no 'expected_calls' list of objects"
            )
        if not isinstance(tools, list):
            return Verdict.failed(
                FailureKind.INVALID_INPUT, "the task has no responses_create_params.tools list"
            )
        calls = first_turn_calls(response)
        if calls is None:
            return Verdict.failed(FailureKind.MODEL_ERROR, "the response has no output list")
        check = check_calls(calls, expected, tools)
        return Verdict(
            reward=1.0 if check.ok else 0.0,
            metrics={
                "category": str(task.get("category", "")),
                "num_calls": len(calls),
                "num_expected_calls": len(expected),
                "mismatch": check.reason,
            },
        )

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
        """The expected calls with each argument's first accepted value, in the one turn (they
        are scored, never run: the environment has no tools of its own)."""
        expected = task.get("expected_calls")
        params = task.get("responses_create_params")
        tools = params.get("tools") if isinstance(params, dict) else None
        if not isinstance(expected, list) or not all(isinstance(e, dict) for e in expected):
            return None
        return [reference_calls(expected, tools if isinstance(tools, list) else [])]

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """``count`` BFCL tasks drawn without replacement, shuffled by ``seed``."""
        tasks = list(load_tasks(self.categories))
        yield from draw(tasks, count, seed, "function_calling", self.categories, "BFCL tasks")
