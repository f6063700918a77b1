"""Any palaestra environment as TRL's ``GRPOTrainer(environment_factory=...)`` wants it.

::

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from palaestra.training.trl import TrlEnvironment

    env = TrlEnvironment("weather")               # a name, file, import path, class or instance
    trainer = GRPOTrainer(
        model, args=GRPOConfig(...), processing_class=tokenizer,
        train_dataset=env.dataset(tasks),          # palaestra task rows -> TRL prompt rows
        environment_factory=env.factory,           # one instance per rollout
        reward_funcs=env.reward,                   # the environment's verify
    )

TRL's contract (``trl`` 1.16, ``GRPOTrainer``): ``environment_factory()`` makes an instance;
TRL keeps a pool of them and calls ``reset(**row)`` before each rollout; every public method of
the instance's *class* is a tool, described to the model by ``transformers.get_json_schema``
(type hints + Google docstring) and called with the model's arguments as keywords.

- ``reset`` seeds a palaestra session from the row (``env.dataset`` keeps the whole task row
  as JSON in the ``palaestra_task`` column; a row without it is taken as the task itself).
- One method per palaestra tool, made from the tool's JSON schema (so a served environment's
  tools work too): a typed signature, a docstring with each parameter's description. palaestra
  still validates the arguments against the full schema; a wrong call is answered to the model
  as ``Error: ...`` text, exactly as in ``palaestra collect``.
- ``reward`` verifies the finished conversation (TRL's completion messages, turned into the
  Responses items ``verify`` reads) and closes the session.

Failures are never a 0: a rollout whose seed, tool or verification fails (or whose verdict is
a failure) gets the reward ``None``, which TRL turns into NaN and masks (left out of the group
baseline and the logged mean, advantage 0). Each is logged as a warning with its kind and
reason and counted in TRL's metrics (``palaestra/failed``, ``palaestra/failed/<kind>``);
``on_failure="raise"`` stops training at the first instead (a ``RolloutFailure`` of that
kind). An unreachable served environment (``ServiceUnreachable``) always stops training.

TRL calls these methods synchronously from its own thread; palaestra's environment code is
async. Each ``TrlEnvironment`` runs its environment client on a private event loop in one
daemon thread and waits on it, so it never touches (or blocks) TRL's own async loop.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import uuid
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Literal, TypeVar

import orjson

from palaestra._util.loop import LoopThread
from palaestra.environment.base import Environment
from palaestra.environment.running.client import EnvironmentClient, LocalEnvironmentClient
from palaestra.environment.step import StepEnvironment
from palaestra.environment.verdicts import verdict_problem
from palaestra.errors import (
    ConfigError,
    RolloutFailure,
    ServiceUnreachable,
    ToolCallRejected,
)
from palaestra.models.chat_format import chat_request_to_responses_params, responses_to_chat
from palaestra.types import Failure, FailureKind, JsonDict, Verdict, output_as_text
from palaestra.wire.rows import PARAMS

__all__ = ["TASK_COLUMN", "TrlEnvironment", "use_chatml_tool_template"]

log = logging.getLogger(__name__)
T = TypeVar("T")

TASK_COLUMN = "palaestra_task"
"""The dataset column holding the whole task row as JSON (``TrlEnvironment.dataset``)."""

_RESERVED = frozenset({"reset", "get_reward"})
"""Method names TRL gives a meaning of its own: a tool cannot take them."""


class TrlEnvironment:
    """A palaestra environment as TRL's ``environment_factory``, dataset rows and reward.

    ``env`` is a registered name, a file (``./my_env.py[:Class]``), an import path
    (``package.module:Class``), an ``Environment`` class (built with ``args``) or instance, or
    any ``EnvironmentClient`` (e.g. a served environment). Call ``close()`` (or use ``with``)
    when training is over: it closes the sessions still open and the environment.
    """

    def __init__(
        self,
        env: str | type[Environment] | Environment | EnvironmentClient,
        args: JsonDict | None = None,
        *,
        on_failure: Literal["mask", "raise"] = "mask",
    ) -> None:
        if on_failure not in ("mask", "raise"):
            raise ConfigError(f"on_failure must be 'mask' or 'raise', not {on_failure!r}")
        self.on_failure = on_failure
        self.client = _client(env, args or {})
        self.name = self.client.name
        if self.client.has_user:
            # TRL's loop has no user turn: the user would never speak, and its turns could not
            # be told from the policy's. rollout_func runs them and keeps them out of the mask.
            name = self.name
            self._loop_close_client()
            raise ConfigError(
                f"environment '{name}' has a simulated user, and TRL's environment_factory "
                "runs tool calls only: use TrlRolloutFunc (rollout_func), which runs the "
                "user's turns and keeps them out of the loss mask"
            )
        self.failures: dict[str, int] = {}
        """Failed rollouts so far, by failure kind."""
        self._loop = LoopThread(f"palaestra-trl-{self.name}")
        self._fatal: ServiceUnreachable | None = None
        self.environment_class = _environment_class(self, self.client.tools())
        """The class ``factory`` instantiates: ``reset`` plus one method per tool."""
        self.reward = _reward_function(self)
        """TRL reward function (``reward_funcs=env.reward``): the environment's verdicts."""

    def _loop_close_client(self) -> None:
        """Close the client opened for an environment that is then refused."""
        loop = LoopThread(f"palaestra-trl-{self.name}-refused")
        try:
            loop.run(self.client.aclose())
        finally:
            loop.stop()

    def factory(self) -> _Rollout:
        """One environment instance for TRL (``environment_factory=env.factory``)."""
        instance: _Rollout = self.environment_class()
        return instance

    def dataset(self, tasks: Iterable[JsonDict]) -> Any:
        """A ``datasets.Dataset`` of TRL rows from palaestra task rows.

        Each row has the conversational ``prompt`` (the task's input as chat messages) and
        the whole task as JSON in ``palaestra_task``, which ``reset`` seeds the session from.
        """
        # installed with trl; imported here so that palaestra itself never needs it
        datasets: Any = importlib.import_module("datasets")
        return datasets.Dataset.from_list([trl_row(task) for task in tasks])

    def tasks(self, count: int, seed: int) -> list[JsonDict]:
        """``count`` task rows from the environment's generator (``generate_tasks``)."""
        client = self.client
        environment = client.environment if isinstance(client, LocalEnvironmentClient) else None
        if not isinstance(environment, Environment):
            raise ConfigError(f"environment '{self.name}' generates no tasks here")
        return list(environment.generate_tasks(count, seed))

    def score(self, row: JsonDict, completion: list[JsonDict] | str) -> Verdict | Failure:
        """Seed a session for ``row``, verify ``completion`` in it, close it: one verdict.

        For evaluation outside the trainer (a rollout without tool calls).
        """
        rollout = self.factory()
        rollout.reset(**row)
        return rollout._verify(completion)

    def close(self) -> None:
        """Close the environment (its open sessions first) and the private event loop."""
        try:
            self._loop.run(self.client.aclose())
        finally:
            self._loop.stop()

    def __enter__(self) -> TrlEnvironment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run a client call on the private loop; remember an unreachable service."""
        try:
            return self._loop.run(coroutine)
        except ServiceUnreachable as error:
            self._fatal = error
            raise

    def _failed(self, failure: Failure) -> None:
        self.failures[str(failure.kind)] = self.failures.get(str(failure.kind), 0) + 1
        log.warning("palaestra rollout failed (%s): %s", failure.kind, failure.reason)
        if self.on_failure == "raise":
            error = RolloutFailure(f"a rollout of '{self.name}' failed: {failure.reason}")
            error.kind = failure.kind
            raise error


class _Rollout:
    """Base of the class ``TrlEnvironment`` builds: TRL exposes its public methods as tools,
    so everything here but ``reset`` is private."""

    _adapter: TrlEnvironment

    def __init__(self) -> None:
        self._session: str | None = None
        self._task: JsonDict = {}
        self._failure: Failure | None = None

    def reset(self, **row: Any) -> None:
        """Start a rollout of the task in ``row`` (a fresh palaestra session)."""
        self._close()
        self._failure = None
        self._task = task_of(row)
        try:
            self._session = self._adapter._run(self._adapter.client.seed(self._task))
        except RolloutFailure as error:
            self._fail(error)
        return None

    def _call(self, name: str, arguments: JsonDict) -> str:
        if self._failure is not None or self._session is None:
            raise RuntimeError(f"this rollout has failed: {self._failure_reason()}")
        try:
            return output_as_text(
                self._adapter._run(self._adapter.client.call_tool(self._session, name, arguments))
            )
        except ToolCallRejected as rejected:
            return f"Error: {rejected}"  # the model's mistake: it reads why and goes on
        except RolloutFailure as error:
            self._fail(error)
            raise RuntimeError(f"the tool failed: {self._failure_reason()}") from None

    def _verify(self, completion: list[JsonDict] | str) -> Verdict | Failure:
        try:
            if self._failure is not None or self._session is None:
                return self._failure or Failure(FailureKind.INTERNAL_ERROR, "reset was not called")
            response = response_of(completion)
            try:
                verdict = self._adapter._run(
                    self._adapter.client.verify(self._session, self._task, response)
                )
            except RolloutFailure as error:
                self._fail(error)
                return self._failure or Failure(error.kind, error.reason)
            problem = verdict_problem(verdict)
            if verdict.failure is None and problem is not None:
                verdict = Verdict.failed(FailureKind.VERIFIER_ERROR, problem)
            return verdict.failure or verdict
        finally:
            self._close()

    def _fail(self, error: RolloutFailure) -> None:
        if isinstance(error, ServiceUnreachable):
            raise error
        self._failure = Failure(error.kind, error.reason)

    def _failure_reason(self) -> str:
        failure = self._failure
        return f"{failure.kind}: {failure.reason}" if failure else "reset was not called"

    def _close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            try:
                self._adapter._run(self._adapter.client.close(session))
            except RolloutFailure as error:
                log.warning("closing a palaestra session failed (%s): %s", error.kind, error.reason)


def _reward_function(adapter: TrlEnvironment) -> Callable[..., list[float | None]]:
    def reward(
        completions: list[Any],
        environments: list[_Rollout] | None = None,
        log_metric: Callable[[str, float], None] | None = None,
        **_: Any,
    ) -> list[float | None]:
        if environments is None:
            raise ConfigError(
                f"the reward of '{adapter.name}' needs environment_factory=env.factory as well"
            )
        rewards: list[float | None] = []
        failed: dict[str, int] = {}
        for rollout, completion in zip(environments, completions, strict=True):
            outcome = rollout._verify(completion)
            if adapter._fatal is not None:
                raise adapter._fatal  # a served environment is gone: nothing can go on
            if isinstance(outcome, Failure):
                failed[str(outcome.kind)] = failed.get(str(outcome.kind), 0) + 1
                adapter._failed(outcome)
                rewards.append(None)
            else:
                rewards.append(float(outcome.reward))
        if log_metric is not None:
            log_metric("palaestra/failed", sum(failed.values()) / max(len(rewards), 1))
            for kind, count in failed.items():
                log_metric(f"palaestra/failed/{kind}", count / len(rewards))
        return rewards

    reward.__name__ = reward.__qualname__ = adapter.name
    return reward


def use_chatml_tool_template(tokenizer: Any) -> bool:
    """Give a ChatML tokenizer whose template cannot render tools (SmolLM2's) TRL's Qwen2.5
    template: the same ChatML turns plus ``<tool_call>`` JSON, which TRL can render, parse and
    patch for training. Returns whether it changed the template.

    TRL refuses ``environment_factory`` with a template that drops tool calls; the Qwen2.5 one
    is among those TRL knows how to parse. Only for ChatML vocabularies (``<|im_start|>``).
    """
    templates: Any = importlib.import_module("trl.chat_template_utils")
    if templates.supports_tool_calling(tokenizer):
        return False
    if "<|im_start|>" not in tokenizer.get_vocab():
        raise ConfigError("the tokenizer is not ChatML: give it a chat template with tools")
    tokenizer.chat_template = templates.qwen2_5_chat_template
    return True


# --- rows and conversations ------------------------------------------------------------------


def trl_row(task: JsonDict) -> JsonDict:
    """One TRL dataset row for a palaestra task: its ``prompt`` messages and the task as JSON."""
    params = task.get(PARAMS)
    if not isinstance(params, dict):
        raise ConfigError("a task row needs 'responses_create_params' with an 'input'")
    messages = responses_to_chat({"input": params.get("input", [])})["messages"]
    return {"prompt": messages, TASK_COLUMN: orjson.dumps(task).decode()}


def task_of(row: JsonDict) -> JsonDict:
    """The palaestra task of a TRL row (see ``trl_row``); a row without one is the task."""
    encoded = row.get(TASK_COLUMN)
    if isinstance(encoded, str):
        task: JsonDict = orjson.loads(encoded)
        return task
    task = {key: value for key, value in row.items() if key != "prompt"}
    if PARAMS not in task:
        prompt = row.get("prompt", [])
        chat = prompt if isinstance(prompt, list) else [{"role": "user", "content": str(prompt)}]
        task[PARAMS] = chat_request_to_responses_params({"messages": chat})
    return task


def response_of(completion: list[JsonDict] | str) -> JsonDict:
    """TRL's completion (chat messages, or text) as the Responses object ``verify`` reads.

    TRL's tool calls carry no ids: the k-th tool message answers the k-th call.
    """
    if isinstance(completion, str):
        completion = [{"role": "assistant", "content": completion}]
    messages: list[JsonDict] = []
    pending: list[str] = []
    for message in completion:
        message = dict(message)
        if message.get("role") == "assistant" and message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                call_id = str(call.get("id") or f"call_{uuid.uuid4().hex[:12]}")
                pending.append(call_id)
                calls.append({**call, "id": call_id})
            message["tool_calls"] = calls
        elif message.get("role") == "tool" and not message.get("tool_call_id"):
            message["tool_call_id"] = pending.pop(0) if pending else None
        messages.append(message)
    items = chat_request_to_responses_params({"messages": messages})["input"]
    return {
        "id": f"resp_{uuid.uuid4().hex}",
        "object": "response",
        "status": "completed",
        "output": items,
    }


# --- building the environment class --------------------------------------------------------


def _client(
    env: str | type[Environment] | Environment | EnvironmentClient, args: JsonDict
) -> EnvironmentClient:
    if isinstance(env, str):
        from palaestra.environment.finding.registry import find_environment

        env = find_environment(env).environment
    if isinstance(env, type) and issubclass(env, Environment):
        env = env(**args)
    elif args:
        raise ConfigError("args are for an environment given by name or class, not an instance")
    if isinstance(env, StepEnvironment):
        raise ConfigError(
            f"environment '{env.name}' is turn-based (reset/step): TRL's environment_factory "
            "drives tool calls only"
        )
    if isinstance(env, Environment):
        return LocalEnvironmentClient(env)
    if isinstance(env, EnvironmentClient):
        return env
    raise ConfigError(f"not an environment: {env!r:.80}")


def _environment_class(adapter: TrlEnvironment, tools: list[JsonDict]) -> type[_Rollout]:
    namespace: dict[str, Any] = {"_adapter": adapter, "__module__": __name__}
    for schema in tools:
        name = str(schema.get("name") or (schema.get("function") or {}).get("name") or "")
        if not name.isidentifier() or name.startswith("_") or name in _RESERVED:
            raise ConfigError(
                f"tool '{name}' of environment '{adapter.name}' cannot be a TRL tool method "
                "(it must be an identifier, not start with '_', and not be reset/get_reward)"
            )
        namespace[name] = tool_method(schema)
    class_name = "".join(part.title() for part in adapter.name.split("_")) or "Environment"
    return type(f"{class_name}Rollout", (_Rollout,), namespace)


def tool_method(schema: JsonDict) -> Callable[..., str]:
    """A method calling the tool ``schema`` describes, with the signature and Google-style
    docstring that ``transformers.get_json_schema`` turns back into that schema."""
    nested = schema.get("function")
    function: JsonDict = nested if isinstance(nested, dict) else schema
    name = str(function["name"])
    parameters = function.get("parameters") or {}
    definitions = parameters.get("$defs") or {}
    required = set(parameters.get("required") or [])
    signature = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    doc_args: list[str] = []
    properties: dict[str, JsonDict] = parameters.get("properties") or {}
    # Required parameters first: a signature cannot put one after a parameter with a default.
    ordered = sorted(properties.items(), key=lambda item: item[0] not in required)
    for parameter, spec in ordered:
        hint = python_type(spec, definitions)
        default = inspect.Parameter.empty if parameter in required else spec.get("default")
        signature.append(
            inspect.Parameter(
                parameter, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint
            )
        )
        annotations[parameter] = hint
        text = " ".join(str(spec.get("description") or parameter.replace("_", " ")).split())
        doc_args.append(f"    {parameter}: {text}")

    def method(self: _Rollout, **arguments: Any) -> str:
        return self._call(name, arguments)

    method.__name__ = method.__qualname__ = name
    description = " ".join(str(function.get("description") or name).split())
    method.__doc__ = description + ("\n\nArgs:\n" + "\n".join(doc_args) if doc_args else "")
    method.__annotations__ = annotations
    method.__signature__ = inspect.Signature(signature, return_annotation=str)  # type: ignore[attr-defined]
    return method


_SCALARS: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "null": type(None),
}


def python_type(spec: JsonDict, definitions: JsonDict) -> Any:
    """The Python type hint of a JSON schema, as precise as ``get_json_schema`` can express.

    Nested objects become ``dict`` (their properties are not expressible as a type hint; the
    tool still validates them).
    """
    reference = spec.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/$defs/"):
        return python_type(definitions.get(reference.rsplit("/", 1)[1], {}), definitions)
    if spec.get("enum"):
        return Literal.__getitem__(tuple(spec["enum"]))
    if "const" in spec:
        return Literal.__getitem__(spec["const"])
    variants = spec.get("anyOf") or spec.get("oneOf")
    if isinstance(variants, list) and variants:
        return _union([python_type(variant, definitions) for variant in variants])
    kind = spec.get("type")
    if isinstance(kind, list):
        return _union([python_type({**spec, "type": one}, definitions) for one in kind])
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        items = spec.get("items")
        if isinstance(items, dict) and items:
            return list.__class_getitem__(python_type(items, definitions))
        return list
    if kind == "object":
        extra = spec.get("additionalProperties")
        if isinstance(extra, dict) and not spec.get("properties"):
            return dict.__class_getitem__((str, python_type(extra, definitions)))
        return dict
    return Any


def _union(hints: list[Any]) -> Any:
    result = hints[0]
    for hint in hints[1:]:
        result = result | hint
    return result
