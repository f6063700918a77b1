"""bfcl_multi_turn: BFCL's multi-turn categories on BFCL's own backends, scored by BFCL's checks.

A rollout holds fresh instances of the task's BFCL backends (file system, trading bot, travel
booking, ...); the model's tool calls run on them directly. The user is scripted: BFCL's
recorded turns, one each time the policy answers without calling a function. The verdict
replays the trajectory's calls turn by turn on fresh instances, as BFCL's checker does, and
after every user turn asks BFCL's state check and response check (``backend.check_turns``):
``step_rewards`` holds one result per turn and the reward is 1 only if every turn passes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pydantic

from palaestra import (
    Environment,
    FailureKind,
    InvalidTask,
    JsonDict,
    ScriptedUser,
    Session,
    ToolSpec,
    UserTurn,
    Verdict,
    read_objects,
)
from palaestra.envs._shared.bfcl import draw
from palaestra.envs.bfcl_multi_turn.backend import (
    Backends,
    Call,
    check_turns,
    keyword_arguments,
)
from palaestra.envs.bfcl_multi_turn.data import (
    CATEGORIES,
    FUNC_DOC_FILES,
    bfcl_data_dir,
    convert_function,
    load_tasks,
    parse_call,
    parse_categories,
)


@dataclass(slots=True)
class Rollout:
    """One rollout's state: its backends (the model's calls run here) and its user."""

    backends: Backends
    user: ScriptedUser


class _AnyArguments(pydantic.BaseModel):
    """A call's arguments exactly as the model gave them: BFCL's backends check them."""

    model_config = pydantic.ConfigDict(extra="allow")


class BfclMultiTurn(Environment):
    """Multi-turn tool use on BFCL's executable backends, scored by BFCL's own state and
    response checks after every user turn."""

    name = "bfcl_multi_turn"

    def __init__(self, category: str = "all") -> None:
        self.categories = parse_categories(category)
        self._documents = _function_documents()
        # Every function of the eight backends is callable (BFCL's checker executes any method
        # of a task's backends); which ones a task offers is its own tool list. The table is
        # read from the package's data when the environment is built, so it is the instance's
        # (the class, imported to list environments, needs no bfcl-eval).
        self.tool_specs = {  # type: ignore[misc]
            name: ToolSpec(
                name, str(doc["description"]), _dispatcher(name), _AnyArguments, True, False
            )
            for name, doc in self._documents.items()
        }

    def tools(self) -> list[JsonDict]:
        return [convert_function(doc) for doc in self._documents.values()]

    def seed(self, task: JsonDict) -> Rollout:
        missing = [k for k in ("user_turns", "involved_classes", "ground_truth") if k not in task]
        if missing:
            raise InvalidTask(f"bfcl_multi_turn: the task has no {', '.join(missing)}")
        try:
            return Rollout(Backends(task), ScriptedUser(task["user_turns"][1:]))
        except (KeyError, TypeError, AttributeError) as error:
            raise InvalidTask(f"bfcl_multi_turn: malformed task ({error!r})") from error

    def call(self, session: Session, name: str, arguments: JsonDict) -> str:
        """Run one model call on the rollout's backends: BFCL's execution text."""
        state: Rollout = session.state
        return state.backends.execute(name, [], arguments)

    async def user_turn(self, session: Session, conversation: list[JsonDict]) -> UserTurn:
        state: Rollout = session.state
        return await state.user.reply(conversation)

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        task = session.task
        output = response.get("output")
        if not isinstance(output, list):
            return Verdict.failed(FailureKind.MODEL_ERROR, "the response has no output list")
        turns = model_turns(output)
        try:
            checked = check_turns(task, turns)
        except (KeyError, TypeError, ValueError) as error:
            return Verdict.failed(
                FailureKind.INVALID_INPUT, f"bfcl_multi_turn: malformed task ({error})"
            )
        step_rewards = [1.0 if turn.valid else 0.0 for turn in checked.turns]
        return Verdict(
            reward=1.0 if checked.valid else 0.0,
            step_rewards=step_rewards,
            metrics={
                "category": str(task.get("category", "")),
                "bfcl_id": str(task.get("bfcl_id", "")),
                "turns": len(task["ground_truth"]),
                "turns_reached": min(len(turns), len(task["ground_truth"])),
                "turns_passed": int(sum(step_rewards)),
                "error_type": checked.error_type,
                "error": checked.error_message[:500],
            },
        )

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
        """BFCL's ground-truth calls per user turn, read with ``ast`` (positional arguments
        named by the backend method's signature)."""
        truth = task.get("ground_truth")
        if not isinstance(truth, list):
            return None
        classes = list(task.get("involved_classes") or [])
        gold: list[list[JsonDict]] = []
        for strings in truth:
            calls = []
            for text in strings:
                name, args, kwargs = parse_call(text)
                arguments = keyword_arguments(classes, name, args, kwargs)
                calls.append({"name": name, "arguments": arguments})
            gold.append(calls)
        return gold

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """``count`` tasks of the chosen categories, drawn without replacement, shuffled by
        ``seed`` (``count`` = all of them runs the whole benchmark)."""
        tasks = list(load_tasks(self.categories))
        yield from draw(tasks, count, seed, "bfcl_multi_turn", self.categories)


def model_turns(output: list[Any]) -> list[list[list[Call]]]:
    """The trajectory's function calls, by user turn, then by model step (BFCL's decoded form).

    A user message starts the next turn (the first turn is the task's input). A step is a run
    of consecutive ``function_call`` items (one answer's calls). As BFCL decodes an answer, a
    step with a call whose arguments are not a JSON object is dropped whole.
    """
    turns: list[list[list[Call]]] = [[]]
    step: list[Call] | None = []
    for item in output:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "function_call":
            call = _decoded(item)
            if step is not None:
                step = [*step, call] if call is not None else None
            continue
        _close_step(turns, step)
        step = []
        if kind == "message" and item.get("role") == "user":
            turns.append([])
    _close_step(turns, step)
    return turns


def _close_step(turns: list[list[list[Call]]], step: list[Call] | None) -> None:
    if step:
        turns[-1].append(step)


def _decoded(item: JsonDict) -> Call | None:
    name, raw = item.get("name"), item.get("arguments")
    if not isinstance(name, str):
        return None
    if isinstance(raw, str):
        try:
            raw = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
    return (name, [], raw) if isinstance(raw, dict) else None


def _dispatcher(name: str) -> Any:
    def run(env: BfclMultiTurn, session: Session, **arguments: Any) -> str:
        return env.call(session, name, arguments)

    run.__name__ = run.__qualname__ = name
    return run


def _function_documents() -> dict[str, JsonDict]:
    """Every function document of the eight backends, by name (the names are unique)."""
    directory = bfcl_data_dir() / "multi_turn_func_doc"
    documents: dict[str, JsonDict] = {}
    for file in FUNC_DOC_FILES.values():
        for _, row in read_objects(directory / file):
            documents[str(row["name"])] = row
    return documents


__all__ = ["CATEGORIES", "BfclMultiTurn", "model_turns"]
