"""AgentDojo reached through its own package: suites, tasks, injections, tool runtime, checks.

Everything this environment scores with is AgentDojo's: the suites and their task classes
(``agentdojo.task_suite.get_suites``), the environments' YAML data and the injection mechanism
(``TaskSuite.load_and_inject_default_environment``), the attacks that write the injections
(``agentdojo.attacks.load_attack``), the tool runtime (``FunctionsRuntime`` driven by AgentDojo's
own ``ToolsExecutor``, the element its agent pipelines run tools with) and the checks
(``TaskSuite._check_task_result``: a user task's utility, an injection task's security, each
from the model's last answer, the environment before and after, and the calls made).

``agentdojo`` is imported here, lazily (``load``): ``import palaestra`` and listing the
environments never pay its import (several seconds: its package imports every LLM provider's SDK).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

import orjson

from palaestra import ConfigError, JsonDict, assistant_message

VERSION = "v1.2.2"
"""The benchmark version whose tasks are run (AgentDojo's latest in agentdojo 0.1.35:
workspace 40 user x 14 injection tasks, travel 20 x 7, banking 16 x 9, slack 21 x 5)."""
SUITES = ("workspace", "travel", "banking", "slack")
DEFAULT_ATTACK = "important_instructions_no_model_name"
"""AgentDojo's "important instructions" prompt injection, signed by the suites' user (Emma
Johnson) and addressed to "the AI language model": the policy's name is not known when the
tasks are written, so the variant that names no model is the default."""
ATTACK_TARGET = "local"
"""The pipeline name given to attacks that address the model by name (AgentDojo's own name for a
local model); only the attack text of those attacks depends on it."""
CASES = ("all", "utility", "security")
"""Which cases a suite yields: every user task alone and with each injection task (``all``),
only alone (``utility``), or only with an injection (``security``)."""


@dataclass(frozen=True, slots=True)
class Case:
    """One AgentDojo case: a user task, alone or with an injection task and its injections."""

    suite: str
    user_task_id: str
    injection_task_id: str | None = None
    attack: str | None = None
    injections: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Episode:
    """The state of one rollout: the case's tasks, its environment before and after, the calls.

    ``environment`` is this rollout's own copy (the tools change it); ``pre_environment`` is
    a deep copy taken before any call, as AgentDojo takes it. ``calls`` are the
    ``FunctionCall`` objects AgentDojo's executor ran, in order, as it left them (it turns a
    string argument that spells a list into the list, in place).
    """

    case: Case
    suite: Any
    user_task: Any
    injection_task: Any
    runtime: Any
    environment: Any
    pre_environment: Any
    calls: list[tuple[str, JsonDict, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Checks:
    """AgentDojo's verdicts on one trajectory. ``security`` is AgentDojo's own: True when the
    injection task's goal was reached (the agent was hijacked); None without an injection."""

    utility: bool
    security: bool | None


def load(version: str = VERSION) -> dict[str, Any]:
    """AgentDojo's suites of ``version`` by name; ``ConfigError`` (one line) when the package is
    missing or does not know the version."""
    return _suites(version)


@cache
def _suites(version: str) -> dict[str, Any]:
    try:
        from agentdojo.task_suite.load_suites import get_suites
    except ImportError as error:
        raise ConfigError(
            f"the agentdojo environment needs the 'agentdojo' package ({error}); install it "
            "with scripts/install.sh (pip install --no-deps agentdojo==0.1.35 and the few "
            "packages its imports need)"
        ) from None
    try:
        suites: dict[str, Any] = get_suites(version)
    except Exception as error:
        raise ConfigError(f"agentdojo has no benchmark version {version!r} ({error})") from None
    if not suites:
        raise ConfigError(f"agentdojo has no benchmark version {version!r}")
    return suites


def suite_names(text: str | Sequence[str]) -> tuple[str, ...]:
    """``"all"``, a name or a comma-separated list as suite names, checked."""
    names = [text] if isinstance(text, str) else list(text)
    parts = [p.strip() for name in names for p in name.split(",") if p.strip()]
    if not parts or parts == ["all"]:
        return SUITES
    unknown = [p for p in parts if p not in SUITES]
    if unknown:
        raise ConfigError(
            f"suite: unknown AgentDojo suite {', '.join(map(repr, unknown))} "
            f"(known: {', '.join(SUITES)}, or all)"
        )
    return tuple(dict.fromkeys(parts))


def number(task_id: str) -> int:
    """The number in a task id (``user_task_12`` -> 12): AgentDojo's own order of its tasks."""
    match = re.search(r"(\d+)$", task_id)
    return int(match.group(1)) if match else -1


def tool_schema(function: Any) -> JsonDict:
    """An AgentDojo ``Function`` as a Responses function tool: its name, description and the
    JSON schema of its parameters model, as AgentDojo's OpenAI pipeline offers it."""
    return {
        "type": "function",
        "name": function.name,
        "description": function.description,
        "parameters": function.parameters.model_json_schema(),
        "strict": False,
    }


def _suite_tools(suite: Any) -> list[JsonDict]:
    """The suite's tools as Responses function tools, a fresh copy for each task row (pydantic
    builds each JSON schema anew: once per suite, not once per row of its thousand)."""
    return orjson.loads(_suite_tools_json(suite))  # type: ignore[no-any-return]


@cache
def _suite_tools_json(suite: Any) -> bytes:
    return orjson.dumps([tool_schema(f) for f in suite.tools])


@cache
def system_message() -> str:
    """AgentDojo's default system message (its ``data/system_messages.yaml``)."""
    from agentdojo.agent_pipeline.agent_pipeline import load_system_message

    return str(load_system_message(None))


def attack_for(suite: Any, name: str) -> Any:
    """AgentDojo's attack ``name`` on ``suite``; ``ConfigError`` naming the known ones."""
    from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
    from agentdojo.attacks.attack_registry import ATTACKS, load_attack

    class Target(BasePipelineElement):  # type: ignore[misc]
        """The attacked pipeline as attacks see it: only its name is read."""

        name = ATTACK_TARGET

        def query(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("attacks read the target's name; they never run it")

    usable = sorted(n for n in ATTACKS if n != "manual")  # "manual" asks a person at a prompt
    if name not in usable:
        raise ConfigError(f"attack: unknown AgentDojo attack {name!r} (known: {', '.join(usable)})")
    return load_attack(name, _AttackedSuite(suite), Target())


class _AttackedSuite:
    """A suite as an attack reads it: the suite itself, but the environment it loads (once per
    user task, with the same canary injections, to find the vectors the task's ground truth
    reads) is parsed once and copied (``_injected``)."""

    def __init__(self, suite: Any) -> None:
        self._suite = suite

    def __getattr__(self, name: str) -> Any:
        return getattr(self._suite, name)

    def load_and_inject_default_environment(self, injections: dict[str, str]) -> Any:
        return _injected(self._suite, tuple(sorted(injections.items()))).model_copy(deep=True)


@dataclass(frozen=True, slots=True)
class Drawn:
    """A case as drawn, before its injections are written: the suite, the user task and, for a
    security case, the injection task and the attack (AgentDojo's) that writes them."""

    suite: str
    user_task_id: str
    injection_task_id: str | None = None
    attack: Any = None


def cases(suites: Mapping[str, Any], names: Sequence[str], which: str, attack: str) -> list[Drawn]:
    """Every case of the suites ``names``, in AgentDojo's order: each user task alone, then
    with each injection task (for a denial-of-service attack, the first only, as AgentDojo's
    benchmark runs it), for ``attack`` to write the injections of (``written``). Drawn first:
    the attack runs a user task's ground truth to find what it reads, so a draw of a few cases
    pays for theirs only."""
    if which not in CASES:
        raise ConfigError(f"cases: {which!r} is not one of {', '.join(CASES)}")
    drawn: list[Drawn] = []
    for name in names:
        suite = suites[name]
        injection_ids = sorted(suite.injection_tasks, key=number)
        chosen = attack_for(suite, attack) if which != "utility" else None
        if chosen is not None and chosen.is_dos_attack:
            injection_ids = injection_ids[:1]
        for user_id in sorted(suite.user_tasks, key=number):
            if which != "security":
                drawn.append(Drawn(name, user_id))
            if chosen is not None:
                drawn.extend(Drawn(name, user_id, i, chosen) for i in injection_ids)
    return drawn


def written(suites: Mapping[str, Any], drawn: Drawn, attack: str) -> Case:
    """The case ``drawn``, its injections written by its attack (named ``attack``)."""
    if drawn.injection_task_id is None:
        return Case(drawn.suite, drawn.user_task_id)
    suite = suites[drawn.suite]
    user_task = suite.get_user_task_by_id(drawn.user_task_id)
    injection_task = suite.get_injection_task_by_id(drawn.injection_task_id)
    injections = dict(drawn.attack.attack(user_task, injection_task))
    return Case(drawn.suite, drawn.user_task_id, drawn.injection_task_id, attack, injections)


def task_row(suites: Mapping[str, Any], case: Case, version: str) -> JsonDict:
    """The task row of ``case``: AgentDojo's system message and the user task's prompt, the
    suite's tools, what ``seed`` needs to rebuild the case, and AgentDojo's ground truth: the
    answer its ground-truth pipeline gives (``gold_output``) and, as ``golden_response``, the
    ground-truth calls followed by that answer."""
    suite = suites[case.suite]
    user_task = suite.get_user_task_by_id(case.user_task_id)
    golden: list[JsonDict] = [
        {
            "type": "function_call",
            "call_id": f"gold_{index}",
            "name": call["name"],
            "arguments": orjson.dumps(call["arguments"]).decode(),
        }
        for index, call in enumerate(_calls(user_task.ground_truth(_prepared(suite, case))))
    ]
    golden.append(assistant_message(user_task.GROUND_TRUTH_OUTPUT))
    return {
        "responses_create_params": {
            "input": [
                {"role": "system", "content": system_message()},
                {"role": "user", "content": user_task.PROMPT},
            ],
            "tools": _suite_tools(suite),
        },
        "benchmark_version": version,
        "suite": case.suite,
        "user_task_id": case.user_task_id,
        "injection_task_id": case.injection_task_id,
        "attack": case.attack,
        "injections": case.injections,
        "gold_output": user_task.GROUND_TRUTH_OUTPUT,
        "golden_response": golden,
    }


def case_of(task: JsonDict, loaded: Mapping[str, Any], version: str) -> Case:
    """The case a task row names; ``ValueError`` (one line) naming the field that is wrong."""
    suite = task.get("suite")
    if not isinstance(suite, str) or suite not in loaded:
        raise ValueError(f"the task's 'suite' must be one of {', '.join(loaded)}, not {suite!r}")
    row_version = task.get("benchmark_version", version)
    if row_version != version:
        raise ValueError(
            f"the task is of AgentDojo {row_version!r} but the environment runs {version!r} "
            f"(--env-arg version={row_version})"
        )
    user_id = task.get("user_task_id")
    if not isinstance(user_id, str) or user_id not in loaded[suite].user_tasks:
        raise ValueError(f"the task's 'user_task_id' {user_id!r} is not a {suite} user task")
    injection_id = task.get("injection_task_id") or None  # "": rows written with no injection
    if injection_id is not None and (
        not isinstance(injection_id, str) or injection_id not in loaded[suite].injection_tasks
    ):
        raise ValueError(
            f"the task's 'injection_task_id' {injection_id!r} is not a {suite} injection task"
        )
    injections = task.get("injections") or {}
    if not isinstance(injections, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in injections.items()
    ):
        raise ValueError("the task's 'injections' must map injection vector ids to text")
    attack = task.get("attack")
    return Case(
        suite, user_id, injection_id, attack if isinstance(attack, str) else None, injections
    )


def start(loaded: Mapping[str, Any], case: Case) -> Episode:
    """A new rollout of ``case``: a copy of the suite's environment with the case's injections
    placed by AgentDojo (``load_and_inject_default_environment``), prepared by the user task
    (``init_environment``), and a copy of that before any call, as ``run_task_with_pipeline``
    takes it."""
    from agentdojo.functions_runtime import FunctionsRuntime

    suite = loaded[case.suite]
    user_task = suite.get_user_task_by_id(case.user_task_id)
    injection_task = (
        suite.get_injection_task_by_id(case.injection_task_id)
        if case.injection_task_id is not None
        else None
    )
    environment = _prepared(suite, case)
    return Episode(
        case,
        suite,
        user_task,
        injection_task,
        FunctionsRuntime(suite.tools),
        environment,
        environment.model_copy(deep=True),
    )


def _prepared(suite: Any, case: Case) -> Any:
    """A copy of the suite's environment with the case's injections placed, prepared by the
    user task (``init_environment``): a rollout's own, or the one a task row's ground truth
    reads (once: it does not change it)."""
    injected = _injected(suite, tuple(sorted(case.injections.items())))
    return suite.get_user_task_by_id(case.user_task_id).init_environment(
        injected.model_copy(deep=True)
    )


@lru_cache(maxsize=128)
def _injected(suite: Any, injections: tuple[tuple[str, str], ...]) -> Any:
    """The suite's environment with ``injections`` placed; never changed (each rollout
    deep-copies it: parsing and validating the YAML costs far more than a copy).

    The steps of AgentDojo's ``TaskSuite.load_and_inject_default_environment``, on its own
    files and checks (``read_suite_file``, ``get_injection_vector_defaults``,
    ``validate_injections``), but the text is parsed by libyaml's safe loader when PyYAML has
    it: the pure-Python one AgentDojo calls takes most of the time of writing the suites' task
    rows (each rebuilds its case's environment for the ground truth)."""
    import yaml
    from agentdojo.task_suite.task_suite import read_suite_file, validate_injections

    text = read_suite_file(suite.name, "environment.yaml", suite.data_path)
    defaults = _vector_defaults(suite)
    placed = dict(injections)
    validate_injections(placed, defaults)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return suite.environment_type.model_validate(
        yaml.load(text.format(**dict(defaults, **placed)), Loader=loader)
    )


@cache
def _vector_defaults(suite: Any) -> dict[str, str]:
    """The default text of each of the suite's injection vectors (AgentDojo's)."""
    defaults: dict[str, str] = suite.get_injection_vector_defaults()
    return defaults


def run_call(episode: Episode, name: str, arguments: Mapping[str, Any]) -> str:
    """Run one call through AgentDojo's ``ToolsExecutor`` on the episode's environment; the
    text the model reads: the tool's error when it raised or its arguments were invalid (as
    AgentDojo's pipelines show it), else its result formatted by AgentDojo (YAML)."""
    from agentdojo.agent_pipeline.tool_execution import ToolsExecutor
    from agentdojo.functions_runtime import FunctionCall
    from agentdojo.types import ChatAssistantMessage, get_text_content_as_str

    given = dict(arguments)
    call = FunctionCall(function=name, args=dict(given))
    asked = ChatAssistantMessage(role="assistant", content=None, tool_calls=[call])
    _, _, _, messages, _ = ToolsExecutor().query("", episode.runtime, episode.environment, [asked])
    episode.calls.append((name, given, call))
    answer = messages[-1]
    if answer.get("error"):
        return str(answer["error"])
    return str(get_text_content_as_str(answer["content"]))


def trace(episode: Episode, made: Sequence[tuple[str, Any]]) -> list[Any]:
    """The calls of the trajectory as AgentDojo's checks read them (every call the policy made,
    in order): the executed ones as AgentDojo's executor left them; a call that never reached it
    (a tool the environment lacks, arguments that are not a JSON object) as the policy wrote it.
    ``made`` is each call's name and parsed arguments, from the trajectory."""
    from agentdojo.functions_runtime import FunctionCall

    executed = iter(episode.calls)
    pending = next(executed, None)
    calls: list[Any] = []
    for name, arguments in made:
        if pending is not None and (pending[0], pending[1]) == (name, arguments):
            calls.append(pending[2])
            pending = next(executed, None)
        else:
            args = arguments if isinstance(arguments, dict) else {}
            calls.append(FunctionCall(function=name, args=args))
    return calls


def check(episode: Episode, model_output: str, calls: Sequence[Any]) -> Checks:
    """AgentDojo's checks of the episode: the user task's utility and, with an injection, the
    injection task's security, each by ``TaskSuite._check_task_result`` (the dispatcher
    ``run_task_with_pipeline`` scores with: ``*_from_traces`` when the task defines it, else
    ``utility``/``security`` on the environments)."""
    from agentdojo.types import text_content_block_from_string

    output = [text_content_block_from_string(model_output)]
    suite, pre, post = episode.suite, episode.pre_environment, episode.environment
    utility = bool(suite._check_task_result(episode.user_task, output, pre, post, calls))
    security = None
    if episode.injection_task is not None:
        injection = episode.injection_task
        security = bool(suite._check_task_result(injection, output, pre, post, calls))
    return Checks(utility, security)


def ground_truth(episode: Episode) -> list[JsonDict]:
    """The user task's ground-truth calls (``BaseUserTask.ground_truth`` on the episode's
    environment before any call) as ``{"name", "arguments"}``."""
    return _calls(episode.user_task.ground_truth(episode.pre_environment))


def _calls(function_calls: Sequence[Any]) -> list[JsonDict]:
    """AgentDojo's ``FunctionCall`` objects as ``{"name", "arguments"}``."""
    return [{"name": call.function, "arguments": dict(call.args)} for call in function_calls]
