"""``HarborEnvironment``: Harbor task folders run as an environment (``--env harbor:PATH``).

Per rollout (``seed``): the task's image is built from its ``environment/`` (cached by the
provider) and a box started from it, bounded by its ``[environment]`` resources; the first box
of a task checks that its image has the ``[agent]`` and ``[verifier] user`` (a task whose image
lacks one is ``invalid_input``, in one line, before any agent turn). The agent is told
``instruction.md`` and gets the machine tools (``bash``, ``str_replace_editor``, ``submit``)
over that box, as ``[agent] user``.

``verify``: the agent's shell is stopped and the box sealed (``Box.seal``: every process of
the box killed, the image's ``TOOLCHAIN`` put back), so the tests run the image's programs over
the agent's work; ``tests/`` is copied in at ``/tests`` (the agent never saw it), ``/logs``
made anew (whatever the agent left there removed) with ``/logs/verifier`` owned by the
verifier's user and writable by no one else, and ``bash /tests/test.sh`` runs as
``[verifier] user`` (default: the image's) within ``[verifier] timeout_sec``, with
``VERIFIER_ENV`` added to its environment; the reward is what it wrote (``rewards``).

What the agent did to its own box is the agent's outcome: after a successful seal, tests that
cannot produce a reward (they overran, wrote none or an unreadable one, or ``/tests`` and
``/logs`` could not be made in the box it left) score the task's failure reward, 0, with the
reason in the row's ``unverified`` field, never an excluded failure an agent could choose over
a 0. Only what the agent cannot cause is a failure: a box that cannot be built, started or
sealed, or the provider gone (``sandbox_error``). ``close`` closes the box on every path.

``[agent] timeout_sec`` bounds the agent's phase: after it, the tools refuse (the model is told
its time is up) and each command's own timeout is cut to what is left; the verdict records
``agent_timed_out``. Harbor, too, verifies a trial whose agent ran out of time.

Around the agent's phase (``phases``): health checks before it; after it, the box sealed,
``[[verifier.collect]]`` hooks run, and ``/logs/agent`` and the artifacts taken out and kept
with the row. A ``separate`` verifier runs in a fresh machine (``_verifier_box``) given the
artifacts at their paths, never the agent's box. A multi-step task (``steps``) carries its box
from step to step: each step's tests score it in ``user_turn``, the next step's instruction
being the next user message, the last step's in ``verify``.

A task's network policy other than ``no-network`` is served per phase by a filtering proxy
in its machine (``network``); its stdio MCP servers run in its machine for each agent phase,
their tools offered beside the machine tools (``mcp_servers``).

The oracle (``palaestra test``): ``gold_actions`` is one ``bash`` call that runs ``bash
/solution/solve.sh`` as the agent user, with ``[solution] env``; ``solution/`` is copied into
the box (as root) only for a call that carries this process's random oracle key in its first
line, which no model sees, so a policy cannot make it appear.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from palaestra.environment.base import Environment, check_tool_names
from palaestra.environment.context import EnvironmentContext
from palaestra.environment.kinds.harbor.boxes import (
    STAGE_TIMEOUT,
    BoxRefused,
    agent_view,
    make_own,
    read_in_box,
    run,
    stage,
)
from palaestra.environment.kinds.harbor.mcp_servers import (
    call_tool,
    in_thread,
    list_task_servers,
    listed_tools,
    start_servers,
    stop_servers,
)
from palaestra.environment.kinds.harbor.network import (
    NETWORK_FIELD,
    REFUSED_FIELD,
    NetworkedBox,
    agent_machine_networked,
    agent_policy,
    baseline,
    enter,
    network_row,
    private_ranges,
    verifier_policy,
)
from palaestra.environment.kinds.harbor.phases import (
    TAKE_TIMEOUT,
    TakenFiles,
    any_separate,
    health_budget,
    health_check,
    put_files,
    run_collect,
    sources,
    take_files,
    verify_budget,
)
from palaestra.environment.kinds.harbor.rewards import (
    REWARD_KEY,
    RewardProblem,
    network_attempt,
    read_reward,
)
from palaestra.environment.kinds.harbor.steps import (
    below_minimum,
    combined,
    current_step,
    step_result,
)
from palaestra.environment.kinds.harbor.tasks import (
    TASK_FIELD,
    agent_context,
    box_spec,
    image_context,
    load_tasks,
    rows_directory,
    unpacked,
    write_rows,
)
from palaestra.environment.kinds.machine import MachineState, MachineTools
from palaestra.environment.kinds.machine.machine import Machine
from palaestra.environment.kinds.mcp_connection import Connection, ToolResult
from palaestra.environment.sessions import Session
from palaestra.environment.tools import tool
from palaestra.environment.users import UserTurn
from palaestra.errors import ConfigError, InvalidTask, SandboxFailure, ToolError
from palaestra.sandbox.machines.egress import NO_NETWORK, EgressProxy
from palaestra.sandbox.machines.inside import resolve_user
from palaestra.sandbox.machines.provider import Box, Provider, verifier_path
from palaestra.sandbox.machines.registry import PROVIDERS, make_provider
from palaestra.types import JsonDict, Verdict
from palaestra.wire.harbor import (
    AGENT_LOGS_DIR,
    ARTIFACTS_DIR,
    CONFIG,
    STEPS,
    HarborStep,
    HarborTask,
    StepConfig,
)
from palaestra.wire.rows import TASK_DIGEST

DEFAULT_SANDBOX = "rootfs"
"""Daemonless: it needs nothing running on the machine (``docker`` needs its daemon)."""
ORACLE_MARK = "# palaestra oracle"
LOGS_DIR = "/logs"
VERIFIER_DIR = "/logs/verifier"
TEST_OUTPUT = f"{VERIFIER_DIR}/test-stdout.txt"
UNVERIFIED = "unverified"
"""The row's field saying why a box was scored 0 without its tests' word (absent when they
gave one): what the agent left in its box kept them from producing a reward."""
TESTS_NETWORK = "tests_network"
"""The row's field quoting the tests' output line showing they tried to reach the network
(which no machine here has): ``palaestra test`` fails a check scored that way."""
VERIFIER_ENV: dict[str, str] = {"PYTHONNOUSERSITE": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
"""Added to the tests' environment (the task's ``env`` may still set them): Python ignores the
verifier user's own site-packages and git its ``~/.gitconfig``, both in the agent's reach."""
PUBLISHED = f"{AGENT_LOGS_DIR} {ARTIFACTS_DIR}"
"""Made before each agent phase, writable by every user: Harbor's places for the agent's logs
and the files it publishes (kept with the row, handed to a separate verifier)."""
RESERVED_METRICS = frozenset(
    {
        REWARD_KEY,
        "reward_components",
        "step_rewards",
        "response",
        "failure",
        "harbor_task",
        UNVERIFIED,
        TESTS_NETWORK,
        NETWORK_FIELD,
        REFUSED_FIELD,
    }
)
"""Component names not copied flat into the row (they would shadow a row field)."""


@dataclass(slots=True)
class HarborState(MachineState):
    """One rollout: its task, its box and the agent's deadline (event-loop time)."""

    task: HarborTask | None = None
    name: str = ""
    box: Box | None = None
    deadline: float | None = None
    timed_out: bool = False
    step: int = 0
    """The index of the step the agent is on (a multi-step task's; 0 otherwise)."""
    step_results: list[JsonDict] = field(default_factory=list)
    """Per step judged so far: its name, reward, components and why it was unverified."""
    stopped: bool = False
    """A step scored under its ``min_reward``: the steps after it are not run."""
    proxies: list[EgressProxy] = field(default_factory=list)
    """The filtering proxies of the rollout's machines (``network``), for the row."""
    mcp: dict[str, Connection] = field(default_factory=dict)
    """The task's MCP servers running in its machine for the agent's phase, by name."""


class HarborEnvironment(MachineTools, Environment):
    """Harbor task folders: a machine per rollout, scored by the task's own tests."""

    name: ClassVar[str] = "harbor"
    machine_idle_ttl: ClassVar[float] = 3600.0
    location_args: ClassVar[tuple[str, ...]] = ("path",)
    """Arguments that say where the task folders are, not what they are (each row binds its
    task to its folder's content, checked per rollout): a run's identity does not compare
    them, so a project moved elsewhere resumes (``palaestra.collection.identity``)."""
    folder: ClassVar[Path | None] = None
    """The task folders a subclass ships (``swe_local``, ``terminal``), or their archive
    (unpacked on first use: ``tasks.unpacked``): ``path`` defaults to it, and its rows are the
    environment's example tasks (``example_tasks_file``)."""

    def __init__(
        self,
        path: str | None = None,
        sandbox: str = DEFAULT_SANDBOX,
        network_public: bool = False,
        network_private: str | list[str] = "",
    ) -> None:
        """``path``: a Harbor task folder or a folder of them (default: the class's
        ``folder``). ``sandbox``: the provider that builds and starts the machines, ``rootfs``
        (daemonless, the default) or ``docker`` (or a ``palaestra.sandboxes`` plug-in).
        ``network_public``: run tasks whose policy is ``public`` (every public host passes
        the proxy); ``network_private``: addresses or CIDR ranges (comma-separated) that are
        not public but which an allowlist naming them may reach (a stand-in server, a local
        mirror): the user's word, never a task's."""
        if not PROVIDERS.has(sandbox):
            raise ConfigError(f"unknown sandbox '{sandbox}'; known: {', '.join(PROVIDERS.names())}")
        if path is None and self.folder is None:
            raise ConfigError(f"environment '{self.name}' needs the path of its task folders")
        self.path = unpacked(Path(path) if path is not None else Path(str(self.folder)))
        self.sandbox = sandbox
        self.network_private = private_ranges(network_private)
        self.tasks = self.loaded_tasks(sandbox, public=network_public is True)
        self._provider: Provider | None = None
        self._boxes: set[Box] = set()
        self._oracle_key = secrets.token_hex(16)
        self._mcp_tools: dict[str, dict[str, str]] | None = None
        """Per task declaring MCP servers: each of its servers' tools, naming the server
        (listed once, ``_list_mcp_tools``)."""
        self._users: dict[str, str | None] = {}
        """Per task: why its image lacks its ``[agent]``/``[verifier] user`` (None: it has
        them), found in the first box started from it."""
        configs = [task.config for task in self.tasks.values()]
        # The limits of an environment are its class's; a Harbor environment's come from its
        # tasks' task.toml, so this instance's shadow them (the client reads them per instance).
        seed_timeout = max(c.environment.build_timeout_sec for c in configs) + 180.0
        vars(self).update(
            seed_timeout=seed_timeout + health_budget(configs),
            verify_timeout=max(map(verify_budget, configs))
            + 3 * STAGE_TIMEOUT
            + 2 * TAKE_TIMEOUT
            + (seed_timeout if any(map(any_separate, configs)) else 0.0),
            close_timeout=120.0,
        )
        self.user_turns = any(task.steps for task in self.tasks.values())
        """A next user turn (the next step's instruction) only for multi-step tasks."""
        # A step's tests run in a user turn, and the next step's health checks.
        vars(self)["user_turn_timeout"] = self.verify_timeout + self.seed_timeout

    def loaded_tasks(self, sandbox: str, *, public: bool) -> dict[str, HarborTask]:
        """The tasks at ``path`` by name, each read and checked (``load_tasks``); a subclass
        that makes its folders from data of its own may give them without reading them."""
        return load_tasks(self.path, sandbox, public=public)

    @classmethod
    def example_tasks_file(cls) -> Path | None:
        """The rows of the class's ``folder`` (written where a resumed run finds them), or
        None without one."""
        if cls.folder is None:
            return None
        return write_rows(load_tasks(cls.folder), rows_directory())

    # --- the provider -----------------------------------------------------------------------

    def setup(self, context: EnvironmentContext) -> None:
        super().setup(context)
        self.provider()
        self._list_mcp_tools()

    def provider(self) -> Provider:
        """The provider (made on first use, once per environment): boxes its dead owners left
        are reaped then; one that cannot run here is a one-line ``ConfigError``."""
        if self._provider is None:
            provider = make_provider(self.sandbox)
            problem = provider.problem()
            if problem is not None:
                raise ConfigError(f"sandbox '{self.sandbox}' cannot run here: {problem}")
            provider.reap()
            self._provider = provider
        return self._provider

    def tools(self) -> list[JsonDict]:
        self._list_mcp_tools()
        return super().tools()

    def _list_mcp_tools(self) -> None:
        """The tools of the tasks' MCP servers, listed once and added to this instance's
        ``tool_specs`` (``mcp_servers.listed_tools``)."""
        if self._mcp_tools is not None:
            return
        declaring = {n: t for n, t in self.tasks.items() if t.config.environment.mcp_servers}
        if not declaring:
            self._mcp_tools = {}
            return

        async def each() -> dict[str, dict[str, list[Any]]]:
            return {
                name: await list_task_servers(self.provider(), name, task)
                for name, task in sorted(declaring.items())
            }

        specs, self._mcp_tools = listed_tools(type(self).tool_specs, in_thread(each))
        check_tool_names(type(self).__name__, specs)
        vars(self)["tool_specs"] = specs

    async def call_mcp(
        self, session: Session, name: str, arguments: JsonDict | None = None
    ) -> ToolResult:
        """Call the MCP tool ``name`` of the rollout's task (within the agent's time); a
        ``ToolError`` when its task has no such tool or the server cannot answer."""
        state = _harbor(session)
        self.machine_of(session)  # the agent's time is up: no more tools
        tools = (self._mcp_tools or {}).get(state.name, {})
        return await call_tool(state.mcp, tools, name, arguments or {})

    # --- a rollout --------------------------------------------------------------------------

    def seed(self, task: JsonDict) -> Any:  # a coroutine: the build and start are awaited
        return self._seed(task)

    async def _seed(self, row: JsonDict) -> HarborState:
        name, task = self.task_of(row)
        if self._users.get(name) is not None:  # found when its image was first built
            raise InvalidTask(str(self._users[name]))
        state = HarborState(task=task, name=name)
        config = task.config
        provider = self.provider()
        image = await provider.build(
            agent_context(task), timeout=config.environment.build_timeout_sec
        )
        networked = agent_machine_networked(config)
        box = await provider.start(image, box_spec(task, loopback=networked))
        self._boxes.add(box)
        if networked:
            box = await self._networked(box, state)
        state.box = box
        if name not in self._users:
            self._users[name] = missing_user(task, box.root)
        problem = self._users[name]
        if problem is not None:
            self._boxes.discard(box)
            state.box = None
            await box.close()
            raise InvalidTask(problem)
        await self._start_step(state)
        return state

    async def _start_step(self, state: HarborState) -> None:
        """Before the agent's phase (of the task, or of its current step): the health checks
        (the task's, then the step's), then the agent's clock starts."""
        assert state.task is not None and state.box is not None
        task, step = state.task, current_step(state)
        # Harbor's directories for what the agent publishes, writable by any user (as there).
        # After a step judged in this machine, its tests and reward go: the next step's agent
        # sees neither (a /tests of the image's own is left on the first).
        leftovers = f"rm -rf /tests {VERIFIER_DIR} && " if state.step > 0 else ""
        made = await run(
            state.box,
            f"{leftovers}mkdir -p {PUBLISHED} && chmod 0777 {PUBLISHED}",
            timeout=STAGE_TIMEOUT,
            user="root",
            cwd="/",
        )
        if made.status != 0:
            raise SandboxFailure(f"cannot make {PUBLISHED} in the machine: {_tail(made.output)}")
        checks = [task.config.environment.healthcheck]
        if step is not None:
            checks.append(step.config.healthcheck)
        enter(state.box, "environment", baseline(task.config.environment))
        for check in checks:
            if check is not None:
                await health_check(state.box, check, user=state.box.image.user)
        enter(state.box, "agent", agent_policy(task.config, step.config if step else None))
        if task.config.environment.mcp_servers:
            view = agent_view(state.box, task, step.config if step else None)
            state.mcp = await start_servers(view, task.config.environment.mcp_servers, state.name)
        budget = step.config.agent.timeout_sec if step is not None else None
        budget = budget or task.config.agent.timeout_sec
        state.timed_out = False
        state.deadline = None
        if budget is not None:
            state.deadline = asyncio.get_running_loop().time() + budget

    def task_of(self, row: JsonDict) -> tuple[str, HarborTask]:
        """The task folder a row names, checked to be the one the row was made from."""
        name = row.get(TASK_FIELD)
        if not isinstance(name, str):
            raise InvalidTask(f"a Harbor task row names its folder in '{TASK_FIELD}'")
        task = self.tasks.get(name)
        if task is None:
            raise InvalidTask(f"no task folder '{name}' in {self.path}")
        stamp = row.get(TASK_DIGEST)
        digest = stamp.get("digest") if isinstance(stamp, dict) else None
        if digest is not None and digest != task.digest:
            raise InvalidTask(
                f"task folder {task.path} changed since this task row was made "
                f"({digest} then, {task.digest} now): make the rows again"
            )
        return name, task

    def machine_of(self, session: Session) -> Machine:
        state = _harbor(session)
        if state.deadline is not None and asyncio.get_running_loop().time() >= state.deadline:
            state.timed_out = True
            assert state.task is not None
            raise ToolError(
                f"your time is up ({state.task.config.agent.timeout_sec:g} s): the "
                f"machine takes no more commands. Stop calling tools."
            )
        if state.machine is None:
            if state.box is None:
                raise SandboxFailure("the rollout has no machine")
            state.machine = self.box_machine(state)
        return state.machine

    def box_machine(self, state: HarborState) -> Machine:
        """The agent's machine over the rollout's box, as ``[agent] user`` in its workdir (its
        ``close`` stops the agent's shell and leaves the box to the tests)."""
        assert state.box is not None and state.task is not None
        step = current_step(state)
        view = agent_view(state.box, state.task, step.config if step else None)
        return Machine(
            None,
            self.machine_limits,
            box=view,
            idle_ttl=self.machine_idle_ttl,
            head_bytes=self.output_head_bytes,
            tail_bytes=self.output_tail_bytes,
        )

    @tool
    async def bash(self, session: Session, command: str, timeout: float | None = None) -> str:
        state = _harbor(session)
        limit = self.shell_timeout if timeout is None else timeout
        if state.deadline is not None:
            left = state.deadline - asyncio.get_running_loop().time()
            if 0 < left < limit:
                limit = left
        if command.startswith(f"{ORACLE_MARK} {self._oracle_key}\n"):
            await self._stage_solution(state)
        return await MachineTools.bash(self, session, command, limit)

    bash.__doc__ = MachineTools.bash.__doc__

    async def _stage_solution(self, state: HarborState) -> None:
        assert state.box is not None and state.task is not None
        step = current_step(state)
        solution = step.solution if step is not None else state.task.path / "solution"
        if solution is not None:
            await stage(state.box, solution, "/solution")

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        state = _harbor(session)
        assert state.task is not None
        if not state.task.steps:
            return await self._judge(state)
        if not state.stopped:
            state.step_results.append(step_result(state, await self._judge(state)))
        return combined(state)

    async def user_turn(self, session: Session, conversation: list[JsonDict]) -> UserTurn | None:
        """A multi-step task's next step: when the agent ends a step (answers without a
        tool), that step's tests score it, and the next step's instruction is its next
        message, in the same machine. None for a single-step task and after the last step
        (the rollout ends and ``verify`` scores the last step); a step under its
        ``min_reward`` ends the rollout early."""
        state = _harbor(session)
        task = state.task
        assert task is not None
        if not task.steps or state.stopped or state.step + 1 >= len(task.steps):
            return None
        judged = step_result(state, await self._judge(state))
        state.step_results.append(judged)
        if below_minimum(task.steps[state.step].config, judged):
            state.stopped = True
            return UserTurn("", done=True)
        state.step += 1
        state.closed = False
        state.submitted = False
        await self._start_step(state)
        return UserTurn(task.steps[state.step].instruction)

    async def _networked(self, box: Box, state: HarborState) -> NetworkedBox:
        """``box`` served by a filtering proxy of its own (``network``), in place of it in the
        boxes to close; a proxy that cannot listen in it is a ``SandboxFailure``."""
        proxy = EgressProxy(self.network_private)
        served = NetworkedBox(box, proxy)
        self._boxes.discard(box)
        self._boxes.add(served)
        try:
            await served.serve()
        except BaseException:
            self._boxes.discard(served)
            await served.close()
            raise
        state.proxies.append(proxy)
        return served

    async def _judge(self, state: HarborState) -> Verdict:
        """``_verdict``, and what the machines' proxies let through and refused."""
        verdict = await self._verdict(state)
        verdict.metrics.update(network_row(state.proxies))
        return verdict

    async def _verdict(self, state: HarborState) -> Verdict:
        """The tests' verdict on the agent's phase just ended (the task's, or its current
        step's): the agent's shell stopped and the box sealed, the collect hooks run, the
        artifacts and ``/logs/agent`` taken out, then the tests run in the agent's machine or
        in a fresh one of their own (``separate``)."""
        assert state.task is not None and state.box is not None
        task, box = state.task, state.box
        step = current_step(state)
        await stop_servers(state.mcp)  # the agent's tools end with its phase
        machine, state.machine = state.machine, None
        if machine is not None:  # the agent's shell and what it started stop first
            with contextlib.suppress(Exception):
                await machine.close()
        state.closed = True
        await box.seal()  # SandboxFailure: the box is not fit to verify in (infrastructure)
        step_config = step.config if step is not None else None
        enter(box, "verifier", verifier_policy(task.config, step_config, separate=False))
        metrics: JsonDict = {"harbor_task": state.name, "agent_timed_out": state.timed_out}
        if step is not None:
            metrics["harbor_step"] = step.name
        verifier = step.config.verifier if step is not None else task.config.verifier
        hooks = [*task.config.verifier.collect, *(verifier.collect if step is not None else [])]
        failed = await run_collect(box, hooks, user=box.image.user)
        if failed:
            metrics["collect_failed"] = failed
        store = rows_directory() / "artifacts"
        artifacts: TakenFiles | None = None
        try:
            logs = await take_files(box, [AGENT_LOGS_DIR], store)
            if logs.files:
                metrics["agent_logs"] = logs.row()
            artifacts = await take_files(
                box, sources(task.config.artifacts, step.config.artifacts if step else []), store
            )
            if artifacts.files:
                metrics["artifacts"] = artifacts.row()
        except BoxRefused as refused:
            metrics["artifacts_problem"] = str(refused)
        tests = step.tests if step is not None else task.path / "tests"
        if not task.config.separate_verifier(step.config if step is not None else None):
            return await self._run_tests(state, box, tests, metrics, bundled=False, kept=artifacts)
        if artifacts is None:
            return _unverified(
                f"{state.name}: {metrics['artifacts_problem']} (the separate verifier's "
                f"machine cannot be given the agent's files)",
                metrics,
            )
        own, bundled = await self._verifier_box(state)
        try:
            said = verifier_user(task, step)
            if said is not None:
                try:
                    resolve_user(own.root, said)
                except SandboxFailure as error:
                    raise InvalidTask(
                        f"{task.path / CONFIG}: verifier.user = {said!r}: the separate "
                        f"verifier's image cannot run as it ({error})"
                    ) from None
            try:
                user = said or own.image.user
                await make_own(own, LOGS_DIR, VERIFIER_DIR, user)
                await put_files(own, artifacts)
            except BoxRefused as refused:
                return _unverified(f"{state.name}: {refused}", metrics)
            return await self._run_tests(state, own, tests, metrics, bundled=bundled)
        finally:
            self._boxes.discard(own)
            await own.close()

    async def _verifier_box(self, state: HarborState) -> tuple[Box, bool]:
        """A fresh machine for a separate verifier, and whether its image holds the tests.
        As Harbor resolves it: the step's, then the task's verifier level, the first with a
        ``docker_image`` or a ``tests/Dockerfile`` gives the image (the tests in it); else
        the agent's image, the tests copied in. Bounded by ``[verifier.environment]`` (else
        ``[environment]``). A build or start that fails is a ``SandboxFailure``."""
        assert state.task is not None
        task, step = state.task, current_step(state)
        levels = [(task.config.verifier.environment, task.path / "tests")]
        if step is not None:
            own_tests = task.path / STEPS / step.name / "tests"
            levels.insert(0, (step.config.verifier.environment, own_tests))
        context, bundled = agent_context(task), False
        for environment, tests in levels:
            if environment is not None and environment.docker_image is not None:
                context, bundled = image_context(environment.docker_image), True
                break
            if (tests / "Dockerfile").is_file():
                context, bundled = tests, True
                break
        environment = next((level for level, _ in levels if level is not None), None)
        budget = (environment or task.config.environment).build_timeout_sec
        provider = self.provider()
        image = await provider.build(context, timeout=budget)
        policy = verifier_policy(task.config, step.config if step else None, separate=True)
        networked = policy != NO_NETWORK
        box = await provider.start(image, box_spec(task, environment, loopback=networked))
        self._boxes.add(box)
        if networked:
            box = await self._networked(box, state)
            enter(box, "verifier", policy)
        return box, bundled

    async def _run_tests(
        self,
        state: HarborState,
        box: Box,
        tests: Path,
        metrics: JsonDict,
        *,
        bundled: bool,
        kept: TakenFiles | None = None,
    ) -> Verdict:
        """``tests/test.sh`` run in ``box`` (``tests`` staged at ``/tests`` unless the image
        holds them), its reward read as Harbor reads it. In the agent's own box ``/logs`` is
        made anew, and ``/logs/artifacts`` put back from ``kept`` (the copy taken out, links
        leaving it dropped), as Harbor's shared verifier still sees it."""
        assert state.task is not None
        config = state.task.config
        step = current_step(state)
        verifier = step.config.verifier if step is not None else config.verifier
        separate = box is not state.box
        machine_config = (verifier.environment or config.verifier.environment) if separate else None
        machine_config = machine_config or config.environment
        user = verifier_user(state.task, step) or box.image.user
        # From here, what stops the tests is what the agent left in its box: its outcome.
        try:
            if not bundled:
                await stage(box, tests, "/tests")
            if not separate:
                await make_own(box, LOGS_DIR, VERIFIER_DIR, user)
                if kept is not None:
                    await put_files(box, kept, only=ARTIFACTS_DIR)
        except BoxRefused as refused:
            return _unverified(f"{state.name}: {refused}", metrics)
        timeout = verifier.timeout_sec if step is not None else config.verifier.timeout_sec
        started = asyncio.get_running_loop().time()
        ran = await run(
            box,
            f"bash /tests/test.sh > {TEST_OUTPUT} 2>&1",
            timeout=timeout,
            user=user,
            cwd=machine_config.workdir,
            env=verifier_env(box, machine_config.env, {**config.verifier.env, **verifier.env}),
        )
        metrics["verifier_seconds"] = round(asyncio.get_running_loop().time() - started, 3)
        tried = network_attempt(read_in_box(box.root, TEST_OUTPUT))
        if tried is not None:  # on the row whatever the reward: a 0 it caused is no verdict
            metrics[TESTS_NETWORK] = tried
        if ran.status is None:
            return _unverified(
                f"{state.name}: tests/test.sh ran past verifier.timeout_sec ({timeout:g} s)",
                metrics,
            )
        try:
            reward = read_reward(
                lambda name: read_in_box(box.root, f"{VERIFIER_DIR}/{name}"),
                f"{state.name}: {VERIFIER_DIR}/reward.json",
            )
        except RewardProblem as problem:
            tail = _tail(read_in_box(box.root, TEST_OUTPUT))
            return _unverified(
                f"{state.name}: {problem} (test.sh exit status {ran.status}"
                + (f"; its output ends: {tail}" if tail else "")
                + ")",
                metrics,
            )
        for key, value in reward.components.items():
            if key not in RESERVED_METRICS:
                metrics[key] = value
        metrics["reward_file"] = reward.source
        return Verdict(reward.reward, reward_components=dict(reward.components), metrics=metrics)

    async def close(self, session: Session) -> None:  # type: ignore[override]
        await super().close(session)
        state = session.state
        if isinstance(state, HarborState):
            await stop_servers(state.mcp)
        if isinstance(state, HarborState) and state.box is not None:
            box, state.box = state.box, None
            self._boxes.discard(box)
            await box.close()

    async def aclose(self) -> None:
        """Close every box a rollout still holds (a runner stopping mid-rollout)."""
        boxes, self._boxes = list(self._boxes), set()
        for box in boxes:
            with contextlib.suppress(Exception):
                await box.close()

    # --- the oracle and the null run ---------------------------------------------------------

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
        """One ``bash`` call running ``solution/solve.sh`` (None for a task without one)."""
        _, folder = self.task_of(task)
        if not folder.has_solution:
            return None
        config = folder.config
        turns = max(len(folder.steps), 1)
        assignments = " ".join(
            f"{key}={shlex.quote(value)}" for key, value in sorted(config.solution.env.items())
        )
        budget = min(config.agent.timeout_sec or self.max_shell_timeout, self.max_shell_timeout)
        command = (
            f"{ORACLE_MARK} {self._oracle_key}\n"
            f"{'env ' + assignments + ' ' if assignments else ''}bash /solution/solve.sh"
        )
        return [[{"name": "bash", "arguments": {"command": command, "timeout": budget}}]] * turns

    def requires_action(self, task: JsonDict) -> bool | None:
        """Every Harbor task does: its untouched machine must score 0."""
        return True


def verifier_env(
    box: Box, environment: Mapping[str, str], verifier: Mapping[str, str]
) -> dict[str, str]:
    """The tests' environment: ``VERIFIER_ENV``, the task's ``[environment]`` then
    ``[verifier]`` env, and the image's PATH with ``/usr/local``'s commands (the agent's to
    install) searched last, unless ``[verifier] env`` sets PATH itself."""
    env = {**VERIFIER_ENV, **environment, **verifier}
    if "PATH" not in verifier:
        env["PATH"] = verifier_path(environment.get("PATH") or box.image.env.get("PATH"))
    return env


def _harbor(session: Session) -> HarborState:
    state = session.state
    if not isinstance(state, HarborState):
        raise ConfigError(f"a Harbor rollout's state is a HarborState, not {type(state).__name__}")
    return state


def missing_user(task: HarborTask, root: Path) -> str | None:
    """Why the image whose box's root is ``root`` cannot run ``task`` as its ``[agent]`` or
    ``[verifier] user`` (one line naming the task.toml and the user), or None. The verifier's
    user is looked for here only when some tests run in this machine (``shared``); a separate
    verifier's machine is checked when it starts."""
    config = task.config
    passes: list[StepConfig | None] = [step.config for step in task.steps] or [None]
    shared = any(not config.separate_verifier(step) for step in passes)
    checked = [("agent", config.agent.user), ("verifier", config.verifier.user if shared else None)]
    for phase, user in checked:
        if user is None:
            continue
        try:
            resolve_user(root, str(user))
        except SandboxFailure as error:
            return (
                f"{task.path / CONFIG}: {phase}.user = {str(user)!r}: the image built from "
                f"environment/ cannot run as it ({error})"
            )
    return None


def verifier_user(task: HarborTask, step: HarborStep | None) -> str | None:
    """The user the tests run as: the step's ``[verifier] user``, else the task's; None:
    the image's."""
    said = step.config.verifier.user if step is not None else None
    return _user(said if said is not None else task.config.verifier.user)


def _user(user: str | int | None) -> str | None:
    return None if user is None else str(user)


def _unverified(reason: str, metrics: JsonDict) -> Verdict:
    """The task's failure reward: what the agent left in its box kept the tests from scoring
    it, and ``reason`` says what (the row's ``unverified``)."""
    return Verdict(0.0, metrics={**metrics, UNVERIFIED: reason})


def _tail(data: bytes | None, size: int = 300) -> str:
    if not data:
        return ""
    text = " ".join(data.decode(errors="replace").split())
    return text if len(text) <= size else "..." + text[-size:]
