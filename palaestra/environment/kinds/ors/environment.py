"""``OrsEnvironment``: an Open Reward Standard server's environment as a palaestra environment.

``--env ors:http://host:port[/ENV][?split=NAME]`` reads the server's tasks of one split (its
first, unless named) into task rows (``palaestra.environment.kinds.ors.tasks``), offers the model
the server's tools, and runs each rollout in a session of its own on the server:

- each tool call is the server's ``/call``; a call the server refuses (unknown tool, wrong
  arguments, after the episode finished) goes back to the model as the tool's error, as a
  ``@tool``'s would; every reward a tool output carries is kept;
- at the end, when no tool finished the episode and the server names a *terminal tool*, the
  model's last message goes through it (as ORS harnesses do), and its reward is kept too;
- the verdict's reward is the sum of the rewards the server gave (its ``step_rewards`` each
  one, in order; ``metrics.finished`` whether a tool ended the episode).

A server that fails (it does not answer, answers what is not ORS, or a tool's stream ends in
``error``) fails the rollout explicitly: ``tool_error`` during a tool call, ``env_error`` when
the session cannot be opened, ``verifier_error`` in the final call (or the kind the server
named, as palaestra's own ORS server names it), never a reward of 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from palaestra.environment.base import Environment, check_tool_names
from palaestra.environment.kinds.ors.connection import Catalogue, OrsServerError, Sessions
from palaestra.environment.sessions import Session
from palaestra.environment.tools import ToolSpec, json_schema_arguments
from palaestra.errors import EnvironmentFailure, RolloutFailure, ToolError, ToolFailure
from palaestra.types import FailureKind, JsonDict, Verdict, output_text
from palaestra.wire import ors

TASK_FIELD = "ors"
"""The row field holding the server's task: ``{"split", "index", "task_spec"}``."""


class OrsFailure(RolloutFailure):
    """A failure the server named by its kind (``rollout failed (<kind>): ...``)."""

    def __init__(self, kind: FailureKind, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind


@dataclass(slots=True)
class OrsState:
    """One rollout's session on the server and the rewards its tool outputs carried."""

    sid: str
    rewards: list[float] = field(default_factory=list)
    finished: bool = False


class OrsEnvironment(Environment):
    """Runs an Open Reward Standard server's episodes (``--env ors:URL``)."""

    name = "ors"
    tool_timeout: ClassVar[float] = 600.0
    verify_timeout: ClassVar[float] = 600.0
    location_args: ClassVar[tuple[str, ...]] = ("url",)

    def __init__(self, url: str, environment: str, split: str = "") -> None:
        """The environment ``environment`` of the server at ``url`` (its tools are listed
        now). ``split`` names where the rows were read from, for the run's identity: a row
        seeds its session with its own task spec, whatever its split."""
        self.url = url
        self.environment = environment
        self.split = split
        tools, terminal = Catalogue(url).tools(environment)
        self.terminal: JsonDict | None = terminal
        specs = {tool["name"]: _tool_spec(tool) for tool in tools}
        check_tool_names(f"ors:{url}/{environment}", specs)
        self._listed = tools
        vars(self)["tool_specs"] = specs  # this instance's tools: the server's
        self._sessions = Sessions(url, environment, timeout=self.tool_timeout)

    def tools(self) -> list[JsonDict]:
        return [dict(tool) for tool in self._listed]

    async def seed(self, task: JsonDict) -> OrsState:
        spec = task.get(TASK_FIELD)
        task_spec = spec.get("task_spec") if isinstance(spec, dict) else None
        if not isinstance(task_spec, dict):
            raise EnvironmentFailure(
                f"the task has no '{TASK_FIELD}.task_spec': it is not a row of an ORS server"
            )
        try:
            return OrsState(await self._sessions.open(task_spec))
        except OrsServerError as error:
            raise _failure(error, EnvironmentFailure, "opening the session") from None

    async def call(self, session: Session, name: str, arguments: JsonDict) -> str:
        """One call of the server's tool ``name`` (what each tool of this environment does)."""
        state: OrsState = session.state
        try:
            result = await self._sessions.call(state.sid, name, arguments)
        except OrsServerError as error:
            raise _failure(error, ToolFailure, f"tool '{name}'") from None
        if not result.ok:
            raise ToolError(result.error)
        self._keep(state, result)
        return result.text

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        state: OrsState = session.state
        if not state.finished and self.terminal is not None:
            argument = self.terminal.get("arg")
            arguments = {} if argument is None else {str(argument): output_text(response)}
            name = str(self.terminal["name"])
            try:
                result = await self._sessions.call(state.sid, name, arguments)
            except OrsServerError as error:
                kind = FailureKind(error.kind) if error.kind in _KINDS else None
                return Verdict.failed(
                    kind or FailureKind.VERIFIER_ERROR, f"the terminal tool '{name}': {error}"
                )
            if not result.ok:
                return Verdict.failed(
                    FailureKind.VERIFIER_ERROR,
                    f"the server refused its terminal tool '{name}': {result.error}",
                )
            self._keep(state, result)
        return Verdict(
            reward=sum(state.rewards),
            step_rewards=list(state.rewards),
            metrics={"finished": state.finished},
        )

    async def close(self, session: Session) -> None:  # type: ignore[override]  # async
        if isinstance(session.state, OrsState):
            await self._sessions.close(session.state.sid)

    async def aclose(self) -> None:
        await self._sessions.aclose()
        await super().aclose()

    @staticmethod
    def _keep(state: OrsState, result: ors.CallResult) -> None:
        if result.reward is not None:
            state.rewards.append(result.reward)
        state.finished = state.finished or result.finished


_KINDS = frozenset(kind.value for kind in FailureKind)


def _failure(error: OrsServerError, default: type[RolloutFailure], what: str) -> RolloutFailure:
    """The failure ``error`` is: of the kind the server named, else ``default``."""
    if error.kind in _KINDS:
        return OrsFailure(FailureKind(error.kind), f"{what}: {error}")
    return default(f"{what}: {error}")


def _tool_spec(tool: JsonDict) -> ToolSpec:
    name = str(tool["name"])

    async def call(environment: OrsEnvironment, session: Session, arguments: JsonDict) -> str:
        return await environment.call(session, name, arguments)

    call.__name__ = name
    schema: Any = tool.get("parameters") or {"type": "object"}
    arguments = json_schema_arguments(name, schema)
    return ToolSpec(name, str(tool.get("description") or name), call, arguments, True, False)
