"""agentdojo: AgentDojo's tool-use tasks under prompt injection, scored by AgentDojo itself.

Four suites (workspace, travel, banking, slack) of benchmark version ``v1.2.2``; every user task
alone (97) and with each injection task (949 security cases). A rollout gets its own copy of
the suite's environment, with the case's injections placed by AgentDojo; the suite's functions
run on it through AgentDojo's runtime; at the end AgentDojo's checks give ``utility`` (the user
task was done) and ``security`` (AgentDojo's sense: the injection task's goal was reached, the
agent was hijacked). See README.md.

- ``--env-arg suite=banking`` (or ``workspace,slack``; default: all four);
- ``--env-arg reward=utility`` (default) or ``utility_and_not_hijacked``;
- ``--env-arg cases=all|utility|security`` and ``--env-arg attack=NAME`` choose what
  ``--num-tasks`` writes; ``--env-arg version=v1.2.2`` is the pinned default.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any, ClassVar

import orjson
import pydantic

from palaestra import (
    SESSION_PARAMETER,
    ConfigError,
    Environment,
    FailureKind,
    InvalidTask,
    JsonDict,
    Session,
    ToolSpec,
    Verdict,
    check_tool_names,
)
from palaestra.envs.agentdojo import suites as dojo

REWARDS = ("utility", "utility_and_not_hijacked")
MAX_ROUNDS = 15
"""AgentDojo's pipelines run a tool loop of at most this many rounds (``ToolsExecutionLoop``'s
default ``max_iters``): the model's first answer, then at most 15 times: run the last
answer's calls and ask the model again. The answer after the last round ends the run; its
calls are in the trace but never run."""


class _AnyArguments(pydantic.BaseModel):
    """Tool arguments pass through as given: AgentDojo's runtime validates them against the
    function's own parameters model and answers the model with its own error text."""

    model_config = pydantic.ConfigDict(extra="allow")


class AgentDojo(Environment):
    """AgentDojo's workspace, travel, banking and slack suites, under prompt injection."""

    name = "agentdojo"
    tool_timeout: ClassVar[float] = 30.0

    def __init__(
        self,
        suite: str = "all",
        reward: str = "utility",
        version: str = dojo.VERSION,
        attack: str = dojo.DEFAULT_ATTACK,
        cases: str = "all",
        max_rounds: int = MAX_ROUNDS,
    ) -> None:
        """Run the suites ``suite`` (a name, a comma-separated list, or ``all``) of AgentDojo
        ``version``, rewarding ``reward``. ``attack`` and ``cases`` choose what
        ``generate_tasks`` writes. ``max_rounds``: AgentDojo's tool rounds (0: no limit)."""
        if max_rounds < 0:
            raise ConfigError(f"max_rounds must be 0 (no limit) or more, not {max_rounds}")
        self.max_rounds = max_rounds
        if reward not in REWARDS:
            raise ConfigError(f"reward: {reward!r} is not one of {', '.join(REWARDS)}")
        if cases not in dojo.CASES:
            raise ConfigError(f"cases: {cases!r} is not one of {', '.join(dojo.CASES)}")
        self.suites = dojo.suite_names(suite)
        self.reward = reward
        self.benchmark_version = version
        self.attack = attack
        self.cases = cases
        self.loaded = {name: dojo.load(version)[name] for name in self.suites}
        functions = {f.name: f for name in self.suites for f in self.loaded[name].tools}
        # The tools are the suites' own functions, known only once a suite is chosen: they are
        # this instance's, not the class's (suites share some, e.g. send_email).
        specs = {name: _tool_spec(f) for name, f in functions.items()}
        check_tool_names(type(self).__name__, specs)
        self.tool_specs = specs  # type: ignore[misc]  # an instance's own, by design (above)
        self._schemas = [dojo.tool_schema(f) for f in functions.values()]

    def tools(self) -> list[JsonDict]:
        """The functions of the environment's suites (a task row offers its own suite's)."""
        return self._schemas

    def seed(self, task: JsonDict) -> dojo.Episode:
        return dojo.start(self.loaded, self._case(task))

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        episode = session.state
        if not isinstance(episode, dojo.Episode):
            return Verdict.failed(FailureKind.VERIFIER_ERROR, "the session holds no AgentDojo case")
        output = response.get("output")
        if not isinstance(output, list):
            return Verdict.failed(FailureKind.MODEL_ERROR, "the response has no output list")
        output, episode = self._within_rounds(episode, output)
        made = [_made(item) for item in output if item.get("type") == "function_call"]
        checks = dojo.check(episode, model_output(output), dojo.trace(episode, made))
        hijacked = bool(checks.security)
        components = {"utility": float(checks.utility)}
        if checks.security is not None:
            components["security"] = float(checks.security)
        reward = checks.utility and (self.reward == "utility" or not hijacked)
        case = episode.case
        return Verdict(
            reward=float(reward),
            reward_components=components,
            metrics={
                "suite": case.suite,
                "user_task_id": case.user_task_id,
                "injection_task_id": case.injection_task_id,  # null: no injection
                "utility": checks.utility,
                "hijacked": hijacked,
                "calls": len(made),
            },
        )

    def _within_rounds(
        self, episode: dojo.Episode, output: list[JsonDict]
    ) -> tuple[list[JsonDict], dojo.Episode]:
        """The trajectory and episode as AgentDojo's loop leaves them: past ``max_rounds``
        rounds, the answer after the last round ends it (its calls not run), so the output is
        cut there and the calls of the rounds within the limit are run again on a new episode
        of the case (the live one ran more)."""
        answers = _answers(output)
        if self.max_rounds == 0 or len(answers) <= self.max_rounds + 1:
            return output, episode
        kept = answers[: self.max_rounds + 1]
        last = [item for item in kept[-1] if item.get("type") != "function_call_output"]
        again = dojo.start(self.loaded, episode.case)
        for answer in kept[:-1]:
            for item in answer:
                name, arguments = _made(item) if item.get("type") == "function_call" else ("", 0)
                if name in self.tool_specs and isinstance(arguments, dict):
                    dojo.run_call(again, name, arguments)
        return [item for answer in kept[:-1] for item in answer] + last, again

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]]:
        """The user task's ground-truth calls (AgentDojo's ``ground_truth``), then its answer
        (``GROUND_TRUTH_OUTPUT``, when it has one: 43 user tasks check the answer's text), one
        turn."""
        calls = dojo.ground_truth(dojo.start(self.loaded, self._case(task)))
        answer = task.get("gold_output")
        said = (
            [{"role": "assistant", "content": answer}] if isinstance(answer, str) and answer else []
        )
        return [[*calls, *said]]

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """The cases of the environment's suites, in AgentDojo's order: all of them when
        ``count`` covers them, else ``count`` drawn at random from ``seed`` (kept in order)."""
        every = dojo.cases(self.loaded, self.suites, self.cases, self.attack)
        chosen = list(range(len(every)))
        if count < len(every):
            chosen = sorted(random.Random(seed).sample(chosen, count))
        for index in chosen:
            case = dojo.written(self.loaded, every[index], self.attack)
            yield dojo.task_row(self.loaded, case, self.benchmark_version)

    def _case(self, task: JsonDict) -> dojo.Case:
        """The case a task row names; ``InvalidTask`` (an ``invalid_input`` failure) naming
        the wrong field, and the ``--env-arg`` that runs a suite this environment lacks."""
        try:
            return dojo.case_of(task, self.loaded, self.benchmark_version)
        except ValueError as error:
            hint = ""
            if task.get("suite") in dojo.SUITES and task["suite"] not in self.loaded:
                hint = f" (run it with --env-arg suite={task['suite']} or suite=all)"
            raise InvalidTask(f"{error}{hint}") from None


def model_output(output: list[JsonDict]) -> str:
    """The model's output as AgentDojo's checks read it: the text of the trajectory's last
    message when it is the assistant's; "" when the trajectory ends otherwise (AgentDojo's
    ``model_output or []``). Reasoning items are not messages and are passed over."""
    for item in reversed(output):
        kind = item.get("type")
        if kind == "reasoning":
            continue
        if kind != "message" or item.get("role", "assistant") != "assistant":
            return ""
        content = item.get("content")
        if isinstance(content, str):
            return content
        return "".join(
            str(part.get("text", ""))
            for part in content or []
            if isinstance(part, dict) and part.get("type") in ("output_text", "text")
        )
    return ""


def _answers(output: list[JsonDict]) -> list[list[JsonDict]]:
    """The output as the model's answers, each with the outputs of its calls after it."""
    answers: list[list[JsonDict]] = []
    after_outputs = True
    for item in output:
        is_output = item.get("type") == "function_call_output"
        if not is_output and after_outputs:
            answers.append([])
        after_outputs = is_output
        if not answers:
            answers.append([])
        answers[-1].append(item)
    return answers


def _made(item: JsonDict) -> tuple[str, Any]:
    """A function_call item's name and parsed arguments (None when they are not JSON)."""
    arguments = item.get("arguments")
    try:
        parsed = orjson.loads(arguments) if isinstance(arguments, str) else arguments
    except orjson.JSONDecodeError:
        parsed = None
    return str(item.get("name", "")), parsed


def _tool_spec(function: Any) -> ToolSpec:
    """A palaestra tool that runs AgentDojo ``function`` on the session's environment."""

    async def run(environment: AgentDojo, /, **arguments: Any) -> str:
        session: Session = arguments.pop(SESSION_PARAMETER)
        return dojo.run_call(session.state, function.name, arguments)

    run.__doc__ = function.description
    return ToolSpec(function.name, function.description, run, _AnyArguments, True, False)
