"""The oracle and the null agent: the two ends a reward is checked against, with no model.

- ``OracleAgent`` (``--agent oracle``) replays the task's gold actions
  (``Environment.gold_actions``): for each user turn it emits that turn's gold calls as
  ``function_call`` items, runs them in the environment through the client (their outputs
  join the trajectory as the tool-calling agent's do), answers with a short fixed text, then
  lets the user speak (``user_turn``); at the end the environment verifies. A correct reward
  gives it 1 on every task.
- ``NullAgent`` (``--agent null``) never calls a tool: it answers every turn with a fixed
  polite refusal and lets the user speak until the user is done or its step budget ends. A
  reward that gives it more than 0 on a task that requires an action can be had by doing
  nothing.

Neither calls the model: ``preflight`` (what ``BoundAgent.check`` runs) neither reaches nor
loads it, so ``palaestra collect --agent oracle --model local`` builds the model's client
(cheap) but never loads the weights. The oracle needs the gold actions, which an in-process
environment gives (the client's ``environment``) and a client may offer itself (a
``gold_actions(task)`` method); a served environment that offers neither is refused before
any rollout, in one line.

The oracle answers every gold turn in order and stops when the user is done (or there is no
user: then only the first turn is replayed); turns beyond the gold ones are answered with the
fixed text alone. A turn's gold actions may also hold what the policy should say, as
``{"role": "assistant", "content": "..."}`` (for a verifier that reads the answer as well as
the state: information the user asked for); the oracle says it, in its place among the calls,
instead of the fixed text. Both agents stop at ``max_steps`` answers (marked ``truncated``).

``palaestra test`` runs both on every example task that has gold actions
(``palaestra.authoring.reference``).

A turn-based environment (reset/step) is played, not talked to: the oracle takes the first
observation from ``reset``, then steps each gold turn's said text as its action (the
observation after it joins as the environment's message) until the episode ends; the null
agent takes the first observation and does nothing more (no action is taken), so a reward
for the untouched start shows.
"""

from __future__ import annotations

import inspect
import time
from typing import Any, TypeGuard

import orjson

from palaestra.agents.context import NO_CONTEXT, RolloutContext
from palaestra.agents.episode import Conversation, run_episode
from palaestra.agents.tool_calling import request_params
from palaestra.environment.base import Environment
from palaestra.environment.running.client import (
    EnvironmentClient,
    LocalEnvironmentClient,
    StepEnvironmentClient,
)
from palaestra.environment.step import StepEnvironment
from palaestra.errors import ConfigError, EnvironmentFailure, InvalidTask, ToolCallRejected
from palaestra.models.base import Model, ModelStats
from palaestra.types import (
    AgentResult,
    JsonDict,
    Producer,
    assistant_message,
    function_call_output,
    user_message,
)

ORACLE_TEXT = "Done."
"""What the oracle says after each turn's gold calls."""
NULL_TEXT = "I'm sorry, but I can't help with that."
"""What the null agent says, every turn."""
DEFAULT_MAX_STEPS = 32
"""Most answers (assistant messages) of one rollout, unless ``max_steps`` says."""

GoldActions = list[list[JsonDict]]


class ScriptedAgent:
    """An agent whose policy side is written here, not asked of a model: each rollout's
    ``play`` writes its ``Talk``; the model is neither reached nor loaded. The oracle, the
    null agent and the cheats of ``palaestra test`` (``palaestra.authoring.cheats``) are
    scripted agents. Each stops at ``max_steps`` answers; ``text`` is its fixed answer."""

    name: str
    speaker = ""
    """The name its items carry (``msg_<speaker>_0``); empty: its ``name``."""

    def __init__(self, *, max_steps: int = DEFAULT_MAX_STEPS, text: str = ORACLE_TEXT) -> None:
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.max_steps = max_steps
        self.text = text

    async def preflight(self, env: EnvironmentClient, model: Model) -> None:
        """Nothing to check by default: a scripted agent needs no model."""

    async def run(
        self,
        task: JsonDict,
        env: EnvironmentClient,
        model: Model,
        context: RolloutContext = NO_CONTEXT,
    ) -> AgentResult:
        params = request_params(task, env)

        async def body(session_id: str, result: AgentResult) -> None:
            talk = Talk(params, result, self.speaker or self.name)
            await self.play(task, env, session_id, talk)

        return await run_episode(task, env, body)

    async def play(
        self, task: JsonDict, env: EnvironmentClient, session_id: str, talk: Talk
    ) -> None:
        """Write one rollout: the calls and answers in ``talk`` (its ``result`` too)."""
        raise NotImplementedError


class OracleAgent(ScriptedAgent):
    """Replays the gold actions turn by turn; needs no model."""

    name = "oracle"

    async def preflight(self, env: EnvironmentClient, model: Model) -> None:
        """Refuse (``ConfigError``, one line) an environment whose gold actions are out of
        reach; the model is neither reached nor loaded."""
        gold_source(env)

    async def play(
        self, task: JsonDict, env: EnvironmentClient, session_id: str, talk: Talk
    ) -> None:
        gold = await gold_actions(env, task)
        if gold is None:
            raise InvalidTask(f"environment '{env.name}' gives no gold actions for this task")
        if turn_based(env):
            await self._play(gold, talk, session_id, env)
        else:
            await self._replay(gold, talk, session_id, env)

    async def _replay(
        self, gold: GoldActions, talk: Talk, session_id: str, env: EnvironmentClient
    ) -> None:
        result = talk.result
        runs = {tool["name"] for tool in env.tools()}
        for step in range(self.max_steps):
            actions = gold[step] if step < len(gold) else []
            phase = time.perf_counter()
            said = False
            for action in actions:
                if is_said(action):
                    talk.say(action["content"])
                    said = True
                    continue
                item = talk.call(action)
                if runs:  # an environment without tools scores the calls its tasks bring
                    talk.add(await run_gold_call(item, session_id, env), Producer.TOOL)
                    result.tool_calls += 1
            result.add_time("tools", phase)
            if not said:
                talk.say(self.text)
            if await talk.user_answers(env, session_id) is False:
                return
        result.truncated = "max_steps"

    async def _play(
        self, gold: GoldActions, talk: Talk, session_id: str, env: StepEnvironmentClient
    ) -> None:
        """A turn-based episode: each gold turn's said text is one action."""
        talk.add(user_message(await env.reset(session_id)), Producer.ENVIRONMENT)
        for step in range(self.max_steps):
            if step >= len(gold):
                return  # the gold moves are spent and the episode goes on: verify it as it is
            said = [action["content"] for action in gold[step] if is_said(action)]
            if len(said) != 1 or len(said) != len(gold[step]):
                raise InvalidTask(
                    f"environment '{env.name}': a turn-based gold turn is one said action "
                    f"({{'role': 'assistant', 'content': ...}}), not {gold[step]!r}"
                )
            talk.say(said[0])
            phase = time.perf_counter()
            outcome = await env.step(session_id, said[0])
            talk.result.add_time("steps", phase)
            if outcome.terminated or outcome.truncated:
                return
            talk.add(user_message(outcome.observation), Producer.ENVIRONMENT)
        talk.result.truncated = "max_steps"


class NullAgent(ScriptedAgent):
    """Never calls a tool: refuses politely every turn. Needs no model."""

    name = "null"

    def __init__(self, *, max_steps: int = DEFAULT_MAX_STEPS, text: str = NULL_TEXT) -> None:
        super().__init__(max_steps=max_steps, text=text)

    async def play(
        self, task: JsonDict, env: EnvironmentClient, session_id: str, talk: Talk
    ) -> None:
        if turn_based(env):
            talk.add(user_message(await env.reset(session_id)), Producer.ENVIRONMENT)
            return  # no action at all: the untouched start is verified
        for _ in range(self.max_steps):
            talk.say(self.text)
            if await talk.user_answers(env, session_id) is False:
                return
        talk.result.truncated = "max_steps"


class Talk(Conversation):
    """A conversation whose policy side is written here, not asked of a model: the oracle's
    and the null agent's calls and messages stand where the policy's would (``policy``)."""

    def __init__(self, params: JsonDict, result: AgentResult, speaker: str) -> None:
        super().__init__(params, result)
        self.speaker = speaker
        self.calls = 0
        self.answers = 0
        result.response = {
            "model": speaker,
            "status": "completed",
            "output": self.outputs,
            "usage": self.usage,
        }

    def call(self, call: JsonDict) -> JsonDict:
        """Add a gold call as a ``function_call`` item; return the item."""
        number = self.calls
        self.calls += 1
        item: JsonDict = {
            "type": "function_call",
            "id": f"fc_{self.speaker}_{number}",
            "call_id": f"call_{self.speaker}_{number}",
            "name": call["name"],
            "arguments": orjson.dumps(call["arguments"]).decode(),
            "status": "completed",
        }
        self.add(item, Producer.POLICY)
        return item

    def say(self, text: str) -> None:
        item = assistant_message(text, item_id=f"msg_{self.speaker}_{self.answers}")
        self.add(item, Producer.POLICY)
        self.answers += 1

    async def user_answers(self, env: EnvironmentClient, session_id: str) -> bool:
        """Let the user speak; False when there is no user or the user is done."""
        if not env.has_user:
            return False
        phase = time.perf_counter()
        turn = await env.user_turn(session_id, self.history + self.outputs)
        self.result.add_time("user", phase)
        if turn is None:
            return False
        if turn.text:
            self.add(user_message(turn.text), Producer.USER)
            self.result.user_turns += 1
        return not turn.done


async def run_gold_call(item: JsonDict, session_id: str, env: EnvironmentClient) -> JsonDict:
    """Run one gold call; its output item. A gold call the environment rejects is the task's
    or the environment's bug, so the rollout fails (``invalid_input``) naming it."""
    try:
        output = await env.call_tool(session_id, item["name"], orjson.loads(item["arguments"]))
    except ToolCallRejected as rejected:
        raise InvalidTask(f"gold call {item['name']} was rejected: {rejected}") from None
    return function_call_output(item["call_id"], output)


def turn_based(env: EnvironmentClient) -> TypeGuard[StepEnvironmentClient]:
    """Whether ``env`` is played by reset/step: an in-process ``StepEnvironment`` with no
    simulated user (a served one cannot say; its tools and user are what is used)."""
    environment = env.environment if isinstance(env, LocalEnvironmentClient) else None
    return (
        isinstance(environment, StepEnvironment)
        and isinstance(env, StepEnvironmentClient)
        and not env.has_user
    )


def gold_source(env: EnvironmentClient) -> Any:
    """What gives the gold actions of ``env``'s tasks: the client's own ``gold_actions``, or
    the in-process environment's. ``ConfigError`` (one line) when neither is in reach."""
    own = getattr(env, "gold_actions", None)
    if callable(own):
        return own
    environment = env.environment if isinstance(env, LocalEnvironmentClient) else None
    if not isinstance(environment, Environment):
        raise ConfigError(
            f"the oracle agent replays gold actions, which the served environment "
            f"'{env.name}' does not give: run the environment in this process (--env NAME)"
        )
    if type(environment).gold_actions is Environment.gold_actions:
        raise ConfigError(
            f"environment '{env.name}' has no gold actions (it does not implement "
            "Environment.gold_actions): the oracle agent has nothing to replay"
        )
    return environment.gold_actions


async def gold_actions(env: EnvironmentClient, task: JsonDict) -> GoldActions | None:
    """The gold actions of ``task``, checked: one list of ``{"name", "arguments"}`` per turn
    (arguments a dict or its JSON text). A malformed value is an ``env_error`` naming it."""
    source = gold_source(env)
    try:
        value: Any = source(task)
        if inspect.isawaitable(value):
            value = await value
    except Exception as error:
        raise EnvironmentFailure(
            f"gold_actions raised {type(error).__name__}: {error}".rstrip(": ")
        ) from error
    return None if value is None else checked_gold(value)


def checked_gold(value: object) -> GoldActions:
    """``value`` as gold actions, or ``EnvironmentFailure`` naming the first thing wrong."""
    if not isinstance(value, list):
        raise EnvironmentFailure(
            f"gold_actions returned a {type(value).__name__}, not a list of turns"
        )
    turns: GoldActions = []
    for number, turn in enumerate(value):
        if not isinstance(turn, list):
            raise EnvironmentFailure(f"gold_actions: turn {number} is not a list of calls")
        turns.append([_checked_call(call, number, index) for index, call in enumerate(turn)])
    return turns


def is_said(action: JsonDict) -> bool:
    """Whether a gold action is something to say (``{"role": "assistant", "content": ...}``)
    rather than a call."""
    return action.get("role") == "assistant"


def gold_calls(gold: GoldActions) -> int:
    """How many tool calls ``gold`` holds (what it says is not counted)."""
    return sum(not is_said(action) for turn in gold for action in turn)


def _checked_call(call: object, turn: int, index: int) -> JsonDict:
    where = f"gold_actions: turn {turn}, call {index}"
    if isinstance(call, dict) and call.get("role") == "assistant":
        if not isinstance(call.get("content"), str):
            raise EnvironmentFailure(f"{where}: an assistant message needs a 'content' string")
        return {"role": "assistant", "content": call["content"]}
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise EnvironmentFailure(f"{where} is not an object with a 'name'")
    arguments = call.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = orjson.loads(arguments or "{}")
        except orjson.JSONDecodeError:
            raise EnvironmentFailure(f"{where}: arguments are not JSON") from None
    if not isinstance(arguments, dict):
        raise EnvironmentFailure(f"{where}: arguments must be an object")
    return {"name": call["name"], "arguments": arguments}


class NoModel:
    """The model of a run whose agent calls none (``palaestra test``'s oracle and null runs):
    any call is a bug of the agent, said in one line."""

    name = "none"

    def __init__(self) -> None:
        self.stats = ModelStats()

    async def respond(self, params: JsonDict) -> JsonDict:
        raise ConfigError("this run has no model: its agent must not call one")

    async def check(self) -> None:
        pass

    async def aclose(self) -> None:
        pass
