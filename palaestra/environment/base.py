"""``Environment``: tools, per-rollout state and verification for a family of tasks.

A minimal environment::

    class Weather(Environment):
        \"\"\"Answers questions about the weather.\"\"\"

        @tool
        def get_weather(self, city: str) -> str:
            \"\"\"Get the current weather in a city.

            Args:
                city: The city name.
            \"\"\"
            return f"cold in {city}"

        def verify(self, session: Session, response: JsonDict) -> float:
            return 1.0

``seed``, ``verify``, ``close`` and the tools may be plain or ``async`` methods. A tool that
declares a ``session`` parameter receives the rollout's ``Session``; its ``state`` is what
``seed`` returned. Raise ``ToolError`` in a tool to tell the model its call was wrong.

Plain methods run in a worker thread and ``async`` ones on the event loop, each within its
limit (``tool_timeout``, ``verify_timeout``, ``seed_timeout``, ``close_timeout``): a slow or
stuck call fails its own rollout as ``timeout`` and never stalls the others. Because plain
methods of concurrent rollouts run at the same time, guard state they share through ``self``
with a lock (a session's ``state`` is used by one call at a time). A trivially cheap method can
be ``async def`` to skip the thread hop and its CPU cost
(``palaestra.environment.running.threads``).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from palaestra.environment.context import EnvironmentContext
from palaestra.environment.sessions import Session
from palaestra.environment.tools import ToolSpec, build_tool_spec, tool_options
from palaestra.errors import ConfigError
from palaestra.types import JsonDict, Verdict
from palaestra.wire.protocol import RESERVED_ROUTES

if TYPE_CHECKING:
    from palaestra.environment.users import UserTurn

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Baseline:
    """The embedded model's measured score: the mean reward, its 95% interval, over how many
    tasks, and the command that measured it."""

    score: float
    interval: tuple[float, float]
    tasks: int
    command: str
    note: str = ""

    def text(self) -> str:
        low, high = self.interval
        return f"{self.score:.3f} [{low:.3f}, {high:.3f}] n={self.tasks}"


class Environment:
    """Base class of every environment. Subclass it, add ``@tool`` methods and ``verify``."""

    name: ClassVar[str] = ""
    """Registry name; defaults to the class name in lower case."""
    description: ClassVar[str] = ""
    """One line for ``palaestra envs``; defaults to the first line of the class docstring."""
    session_ttl: ClassVar[float] = 3600.0
    """Seconds an idle session lives before it expires."""
    default_agent: ClassVar[str] = "tool_calling"
    """The agent ``palaestra collect`` uses for this environment unless ``--agent`` says."""
    tool_timeout: ClassVar[float] = 60.0
    """Seconds a tool call (and a turn-based ``reset`` or ``step``) may take."""
    verify_timeout: ClassVar[float] = 60.0
    seed_timeout: ClassVar[float] = 60.0
    close_timeout: ClassVar[float] = 60.0
    user_turn_timeout: ClassVar[float] = 300.0
    """Seconds ``user_turn`` may take (a user model's answer: generous, as a policy's is)."""
    tool_specs: ClassVar[dict[str, ToolSpec]] = {}
    pool_workers: ClassVar[int | None] = None
    """Worker processes for ``run_in_pool`` (started on first use); ``None``: one per core."""
    category: ClassVar[str] = ""
    """The catalogue's category (``math``, ``tool use``, ``games``...; ``palaestra envs``)."""
    peer: ClassVar[str] = ""
    """The same suite elsewhere, for the catalogue (e.g. ``NeMo Gym: math_with_judge``)."""
    requires: ClassVar[tuple[str, ...]] = ()
    """Distributions (PyPI names) this environment needs at run time beyond palaestra's own;
    ``palaestra envs`` says whether they are installed, without importing them."""
    install: ClassVar[str] = ""
    """The command that installs ``requires`` (shown by ``palaestra envs``)."""
    baseline: ClassVar[Baseline | None] = None
    """The embedded model's measured score on this environment, for the catalogue."""
    version: ClassVar[int] = 1
    """Raised by one whenever a change scores the same answer differently or gives a seed
    other tasks: runs record it (the run identity, every row), ``--resume`` refuses a run of
    another version, and ``palaestra envs`` shows it. A built-in's is its catalogue table's
    ``version`` (``palaestra.environment.finding.catalogue.environment_version``)."""
    network: ClassVar[bool] = False
    """Whether this environment's tasks may use the network. False (the default, and every
    built-in's: machines and suites here have none): a run's model requests go closed-book,
    without provider-hosted tools such as web search (``palaestra.models.closed_book``),
    unless the run opts in (``CollectOptions.hosted_tools``); each row says which
    (``_palaestra.closed_book``). True: hosted tools a task names are sent as they are."""
    scripted_user_args: ClassVar[dict[str, Any]] = {}
    """Constructor arguments that put a scripted user where a model would play it (tau2:
    ``{"user": "gold"}``): ``palaestra test`` given no user model builds the environment with
    them (under the arguments it is given), so its checks run without one."""
    context: EnvironmentContext = EnvironmentContext()
    """What the runner lent this environment (``setup``); outside a runner, nothing."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("name"):
            cls.name = cls.__name__.lower()
        if not cls.__dict__.get("description"):
            doc = inspect.getdoc(cls) or ""
            cls.description = doc.strip().splitlines()[0] if doc.strip() else ""
        cls.tool_specs = _collect_tools(cls)

    def setup(self, context: EnvironmentContext) -> None:
        """Take what the runner lends (worker pool, HTTP client, model opener), once, before
        the first rollout. Override it to prepare what needs them; call ``super().setup``."""
        self.context = context

    def seed(self, task: JsonDict) -> Any:
        """Build the state of a new rollout of ``task``. The default is an empty dict."""
        return {}

    def verify(
        self, session: Session, response: JsonDict
    ) -> Verdict | float | Awaitable[Verdict | float]:
        """Score the finished trajectory ``response`` (an OpenAI Response dict).

        Return a ``Verdict`` (or just a number, taken as the reward). Return
        ``Verdict.failed(...)`` when the rollout cannot be scored: it is then recorded as a
        failure, not as a reward of 0.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement verify()")

    def close(self, session: Session) -> None:
        """Release what ``seed`` acquired. Called once per session, also on expiry."""

    async def check_models(self) -> None:
        """Reach the models this environment opens (its judge) once, before the first rollout,
        as a run checks its own model and user model: one that is gone refuses the run
        (``ModelOutage``) instead of failing each rollout after its policy ran. The default
        has none to check; call it after ``setup``."""

    async def aclose(self) -> None:
        """Release what the environment itself holds (a judge model, ...) when its runner stops."""

    async def run_in_pool(
        self,
        function: Callable[..., T],
        /,
        *args: Any,
        timeout: float | None = None,
        memory_mb: int | None = None,
        cpu_seconds: float | None = None,
        **kwargs: Any,
    ) -> T:
        """Run ``function(*args, **kwargs)`` in a warm worker process and return its result.

        For CPU-heavy work in ``verify`` or a tool (math-verify, running tests): the event
        loop, and so every other rollout, stays responsive. ``function`` must be a top-level
        function of an importable module; arguments and result must pickle. ``timeout``,
        ``memory_mb`` and ``cpu_seconds`` bound the task (default: 60 s, 2048 MB, no CPU cap).
        A worker that crashes or breaks a limit is replaced and the task retried once; if it
        fails again the rollout fails as ``worker_crash``, ``timeout`` or ``sandbox_limit``,
        never as a reward of 0. An exception raised by ``function`` is raised here.
        """
        if self.context.worker_pool is None:
            raise ConfigError(
                f"{type(self).__name__}.run_in_pool needs a worker pool: run the environment "
                "through LocalEnvironmentClient (palaestra collect and serve do)"
            )
        pool = self.context.worker_pool()
        return await pool.run(
            function, *args, timeout=timeout, memory_mb=memory_mb, cpu_seconds=cpu_seconds, **kwargs
        )

    def user_turn(
        self, session: Session, conversation: list[JsonDict]
    ) -> UserTurn | Awaitable[UserTurn | None] | None:
        """The user's answer when the policy's answer called no tool; None: there is no user.

        ``conversation`` is the trajectory so far (the task's input items, then every output
        item). The default has no user: the rollout ends when the policy stops calling tools.
        An environment with a simulated user returns its ``reply`` (``palaestra.environment.
        users``); a ``UserTurn`` with ``done`` set ends the conversation. Raise
        ``UserModelFailure`` when the user cannot answer.

        Overriding it is what gives an environment a user: the runner checks once whether the
        class overrides it (``client.has_user``) and never calls it otherwise. It may be plain
        or ``async``, runs within ``user_turn_timeout`` like a tool, and is served as ``POST
        /user_turn``. The tool-calling agent bounds the conversation (``max_steps``,
        ``max_user_turns``).
        """
        return None

    def export_state(self, session: Session) -> JsonDict | Awaitable[JsonDict]:
        """The rollout's state as JSON, so a stopped collection can continue it; optional.

        Together with ``restore_state`` this makes an environment *restorable*: the
        collector then checkpoints each unfinished rollout before its first model call and
        at every turn boundary (after the tools of a turn, or a user's message, were added)
        with this state, and a
        collection killed and resumed (``--resume``) continues the rollout from its last
        completed turn instead of starting it again, so no tool of a completed turn runs
        twice. Return everything ``restore_state`` needs (a JSON object: dicts, lists,
        strings, numbers, booleans, null), not a live handle. It is called on the event loop
        once per turn: keep it cheap. Not implemented (the default): the rollout restarts.
        """
        raise NotImplementedError(f"{type(self).__name__} does not export its state")

    def restore_state(self, task: JsonDict, state: JsonDict) -> Any:
        """A rollout's state rebuilt from what ``export_state`` returned (what ``seed`` would
        have returned, as it stood at that turn); plain or ``async``, within
        ``seed_timeout``.

        The turn that was in progress when the collection stopped is done again from the
        checkpoint: a tool of that turn may already have acted on something outside the
        state (a file, a service). Make such an effect idempotent with a key held in the
        state (an id chosen in ``seed`` and a sequence number), so doing it again is a no-op.
        """
        raise NotImplementedError(f"{type(self).__name__} does not restore its state")

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
        """The task's reference solution as tool calls, turn by turn; None: the task has none.

        Each inner list holds the calls (``{"name": ..., "arguments": {...}}``) the policy
        should make before its next answer to the user: one list per user turn. ``palaestra
        test`` replays them (the oracle must score 1) and checks that doing nothing scores 0
        where the task requires an action.
        """
        return None

    def requires_action(self, task: JsonDict) -> bool | None:
        """Whether doing nothing must score 0 on ``task``; None (the default): decide from the
        gold actions (any action required). An environment whose gold actions may be lookups
        that change nothing (τ²-bench's) says which tasks refusing fails."""
        return None

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """Yield ``count`` task rows made from ``seed`` (same seed, same tasks).

        Environments whose tasks come from a generator override this; ``palaestra collect
        --num-tasks N --seed S`` then needs no input file.
        """
        raise NotImplementedError(f"environment '{self.name}' does not generate tasks")

    def tools(self) -> list[JsonDict]:
        """The function tools of this environment, in Responses ``tools`` form."""
        return [spec.schema() for spec in self.tool_specs.values()]


def restorable(environment: Environment) -> bool:
    """Whether ``environment`` overrides both ``export_state`` and ``restore_state``."""
    cls = type(environment)
    return (
        getattr(cls, "export_state", None) is not Environment.export_state
        and getattr(cls, "restore_state", None) is not Environment.restore_state
    )


def _collect_tools(cls: type[Environment]) -> dict[str, ToolSpec]:
    specs: dict[str, ToolSpec] = {}
    for klass in reversed(cls.__mro__):
        for attribute in vars(klass).values():
            options = tool_options(attribute)
            if options is not None:
                spec = build_tool_spec(
                    attribute,
                    name=options["name"],
                    blocking=options["blocking"],
                    ends_episode=bool(options.get("ends_episode", False)),
                )
                specs[spec.name] = spec
    if specs:
        check_tool_names(cls.__name__, specs)
    return specs


def check_tool_names(class_name: str, specs: dict[str, ToolSpec]) -> None:
    """Refuse a tool named like a route the environment server answers itself.

    A tool is served at ``POST /<name>``: one called ``seed_session`` or ``verify`` would be
    shadowed by (or shadow) the protocol's route, so it is refused where the class is defined,
    in one line, rather than when a server starts.
    """
    for name, spec in specs.items():
        if name in RESERVED_ROUTES:
            method = getattr(spec.function, "__name__", name)
            raise ConfigError(
                f"{class_name}.{method}: the tool name '{name}' is reserved (an environment "
                f"server answers /{name} itself; reserved: {', '.join(sorted(RESERVED_ROUTES))})"
                f"; rename the method or give it another name with @tool(name=...)"
            )
