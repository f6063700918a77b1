"""``TrlEnvironment``: any palaestra environment in TRL's ``environment_factory`` shape, checked
without trl (the same against the real GRPOTrainer is in test_trl_grpo_smoke.py)."""

from __future__ import annotations

import inspect
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import orjson
import pytest

from palaestra import Environment, Session, ToolError, Verdict, output_text, tool
from palaestra.environment.step import StepEnvironment
from palaestra.errors import ConfigError, RolloutFailure
from palaestra.training.trl import (
    TASK_COLUMN,
    TrlEnvironment,
    python_type,
    response_of,
    task_of,
    trl_row,
)
from palaestra.types import FailureKind, JsonDict, StepResult, function_calls


class Shop(Environment):
    """Buy items; the reward is what the task says when the cart holds the wanted item."""

    name = "shop"

    def seed(self, task: JsonDict) -> JsonDict:
        return {"cart": []}

    @tool
    def buy(
        self,
        session: Session,
        item: str,
        quantity: int = 1,
        colour: Literal["red", "blue"] | None = None,
    ) -> str:
        """Put an item in the cart.

        Args:
            item: The item's name.
            quantity: How many.
            colour: Which colour, if it matters.
        """
        if item == "nothing":
            raise ToolError("there is no such item")
        session.state["cart"].append(item)
        return f"{quantity} x {item} in the cart ({len(session.state['cart'])} lines)"

    @tool
    async def count(self, session: Session) -> int:
        """How many lines the cart holds."""
        return len(session.state["cart"])

    @tool
    def explode(self) -> str:
        """A tool with a bug."""
        raise RuntimeError("boom")

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        if session.task.get("unscorable"):
            return Verdict.failed(FailureKind.VERIFIER_ERROR, "cannot score this one")
        wanted = session.task["wanted"] in session.state["cart"]
        said = "done" in output_text(response)
        return Verdict(
            reward=session.task["reward"] if wanted and said else 0.0,
            metrics={"calls": len(function_calls(response))},
        )


def task(wanted: str = "apple", reward: float = 0.75, **fields: Any) -> JsonDict:
    return {
        "responses_create_params": {
            "input": [
                {"role": "system", "content": "Shop."},
                {"role": "user", "content": f"Buy {wanted}."},
            ]
        },
        "wanted": wanted,
        "reward": reward,
        **fields,
    }


@pytest.fixture
def shop() -> Iterator[TrlEnvironment]:
    with TrlEnvironment(Shop) as env:
        yield env


def bought(item: str) -> list[JsonDict]:
    """A completion as TRL hands it to reward functions: a call, its result, an answer."""
    return [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "buy", "arguments": {}}}],
        },
        {"role": "tool", "name": "buy", "content": f"1 x {item} in the cart"},
        {"role": "assistant", "content": "done"},
    ]


def test_each_tool_is_a_public_method_with_the_tools_typed_signature_and_docstring(
    shop: TrlEnvironment,
) -> None:
    rollout = shop.factory()
    public = sorted(
        name
        for name, _ in inspect.getmembers(type(rollout), predicate=inspect.isfunction)
        if not name.startswith("_")
    )
    assert public == ["buy", "count", "explode", "reset"]  # what TRL exposes: tools + reset
    signature = inspect.signature(rollout.buy)
    assert list(signature.parameters) == ["item", "quantity", "colour"]
    assert signature.parameters["item"].default is inspect.Parameter.empty
    assert signature.parameters["quantity"].annotation is int
    assert signature.parameters["colour"].annotation == Literal["red", "blue"] | None
    doc = inspect.getdoc(rollout.buy)
    assert doc is not None and doc.startswith("Put an item in the cart.")
    assert "    item: The item's name." in doc and "    colour: Which colour, if it matters." in doc
    assert rollout.buy.__name__ == "buy"


def test_tool_calls_run_in_the_session_of_their_own_rollout(shop: TrlEnvironment) -> None:
    first, second = shop.factory(), shop.factory()
    first.reset(**trl_row(task()))
    second.reset(**trl_row(task()))
    assert first.buy(item="apple") == "1 x apple in the cart (1 lines)"
    assert first.buy(item="pear", quantity=2) == "2 x pear in the cart (2 lines)"
    assert second.count() == "0"  # an async tool, run on the adapter's loop
    first.reset(**trl_row(task()))  # TRL reuses instances: a reset starts a fresh session
    assert first.count() == "0"


def test_a_wrong_call_is_answered_to_the_model_as_in_collect_and_the_rollout_goes_on(
    shop: TrlEnvironment,
) -> None:
    rollout = shop.factory()
    rollout.reset(**trl_row(task()))
    assert rollout.buy(item="nothing") == "Error: there is no such item"
    assert rollout.buy(quantity=3).startswith("Error: invalid arguments for tool 'buy'")
    rollout.buy(item="apple")
    assert shop.reward(completions=[bought("apple")], environments=[rollout]) == [0.75]


def test_the_reward_verifies_the_finished_conversation_with_its_calls_and_outputs(
    shop: TrlEnvironment,
) -> None:
    rollouts = [shop.factory() for _ in range(3)]
    for rollout, reward in zip(rollouts, (0.75, 0.25, 1.0), strict=True):
        rollout.reset(**trl_row(task(reward=reward)))
        rollout.buy(item="apple")
    completions = [bought("apple"), bought("apple"), [{"role": "assistant", "content": "no"}]]
    assert shop.reward(completions=completions, environments=rollouts) == [0.75, 0.25, 0.0]
    assert shop.reward.__name__ == "shop"  # TRL logs it as rewards/shop


def test_a_tool_that_breaks_fails_its_rollout_whose_reward_is_none_never_zero(
    shop: TrlEnvironment,
) -> None:
    metrics: list[tuple[str, float]] = []
    broken, fine = shop.factory(), shop.factory()
    broken.reset(**trl_row(task()))
    fine.reset(**trl_row(task()))
    with pytest.raises(RuntimeError, match="tool_error"):  # TRL shows the model the error
        broken.explode()
    fine.buy(item="apple")
    rewards = shop.reward(
        completions=[bought("apple"), bought("apple")],
        environments=[broken, fine],
        log_metric=lambda name, value: metrics.append((name, value)),
    )
    assert rewards == [None, 0.75]  # None: TRL masks it (NaN), outside the group baseline
    assert shop.failures == {"tool_error": 1}
    assert ("palaestra/failed", 0.5) in metrics and ("palaestra/failed/tool_error", 0.5) in metrics


def test_a_verdict_that_is_a_failure_is_masked_and_counted(shop: TrlEnvironment) -> None:
    rollout = shop.factory()
    rollout.reset(**trl_row(task(unscorable=True)))
    assert shop.reward(completions=[bought("apple")], environments=[rollout]) == [None]
    assert shop.failures == {"verifier_error": 1}


def test_on_failure_raise_stops_at_the_first_failed_rollout_with_its_kind() -> None:
    with TrlEnvironment(Shop, on_failure="raise") as env:
        rollout = env.factory()
        rollout.reset(**trl_row(task(unscorable=True)))
        with pytest.raises(RolloutFailure, match="cannot score this one") as raised:
            env.reward(completions=[bought("apple")], environments=[rollout])
        assert raised.value.kind == FailureKind.VERIFIER_ERROR


def test_rows_carry_the_whole_task_and_a_row_without_one_is_the_task() -> None:
    row = trl_row(task(wanted="pear"))
    assert row["prompt"] == [
        {"role": "system", "content": "Shop."},
        {"role": "user", "content": "Buy pear."},
    ]
    assert task_of({**row, "extra": 1}) == task(wanted="pear")
    plain = task_of({"prompt": [{"role": "user", "content": "Hi"}], "wanted": "fig"})
    assert plain["wanted"] == "fig"
    assert plain["responses_create_params"]["input"][0]["content"] == "Hi"
    assert orjson.loads(row[TASK_COLUMN])["wanted"] == "pear"


def test_the_k_th_tool_message_answers_the_k_th_call() -> None:
    calls = [
        {"type": "function", "function": {"name": "buy", "arguments": {"item": "a"}}},
        {"type": "function", "function": {"name": "count", "arguments": {}}},
    ]
    response = response_of(
        [
            {"role": "assistant", "content": "", "tool_calls": calls},
            {"role": "tool", "name": "buy", "content": "ok"},
            {"role": "tool", "name": "count", "content": "1"},
            {"role": "assistant", "content": "done"},
        ]
    )
    items = response["output"]
    assert [item["type"] for item in items] == [
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
        "message",
    ]
    assert items[2]["call_id"] == items[0]["call_id"] and items[3]["call_id"] == items[1]["call_id"]
    assert items[0]["call_id"] != items[1]["call_id"]
    assert orjson.loads(items[0]["arguments"]) == {"item": "a"}
    assert output_text(response) == "done"
    assert output_text(response_of("plain text")) == "plain text"


def test_json_schema_types_become_the_hints_get_json_schema_reads_back() -> None:
    defs = {"Colour": {"enum": ["red", "blue"], "type": "string"}}
    assert python_type({"type": "integer"}, {}) is int
    assert python_type({"$ref": "#/$defs/Colour"}, defs) == Literal["red", "blue"]
    assert python_type({"anyOf": [{"type": "string"}, {"type": "null"}]}, {}) == str | None
    assert python_type({"type": "array", "items": {"type": "number"}}, {}) == list[float]
    assert python_type({"type": ["string", "integer"]}, {}) == str | int
    assert python_type({"type": "object", "properties": {"a": {}}}, {}) is dict


def test_tools_called_from_many_threads_at_once_all_finish(shop: TrlEnvironment) -> None:
    threads_before = threading.active_count()  # other tests' daemon threads may still run
    rollouts = [shop.factory() for _ in range(16)]
    for rollout in rollouts:
        rollout.reset(**trl_row(task()))

    def shop_in(rollout: Any) -> str:
        rollout.buy(item="apple")
        return str(rollout.count())

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(shop_in, rollouts)) == ["1"] * 16
    assert threading.active_count() - threads_before < len(rollouts)  # no thread per rollout


class Guess(StepEnvironment):
    """Turn-based."""

    def reset(self, session: Session) -> str:
        return "go"

    def step(self, session: Session, action: str) -> StepResult:
        return StepResult("done", 1.0, True)


def test_a_turn_based_environment_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match="turn-based"):
        TrlEnvironment(Guess)


def test_environment_args_and_names_build_the_environment() -> None:
    with TrlEnvironment("weather") as env:
        assert [tool["name"] for tool in env.client.tools()] == ["get_weather"]
    with pytest.raises(ConfigError, match="not an instance"):
        TrlEnvironment(Shop(), {"x": 1})


def test_importing_the_adapter_loads_no_trainer_or_torch() -> None:
    code = (
        "import sys, palaestra.training.trl; "
        "print([m for m in ('torch', 'trl', 'transformers', 'datasets') if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
