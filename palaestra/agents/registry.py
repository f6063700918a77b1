"""Agents by name: the built-ins and the plug-ins of the ``palaestra.agents`` entry-point group.

An agent plug-in is a class (or factory) that takes its options as keyword arguments and
builds an ``Agent`` (a ``name`` and ``async run(task, env, model)``)::

    [project.entry-points."palaestra.agents"]
    react = "my_package.agents:ReactAgent"

Then ``--agent react --agent-arg max_thoughts=4`` (or ``agent: react`` with ``options:`` in a
stack file, or ``palaestra.collect(agent="react", agent_options={...})``) runs it. Agents are
built once per run; nothing here is on the rollout path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from palaestra._util.arguments import call_with, effective_keywords
from palaestra._util.plugins import Registry, callable_plugin
from palaestra.agents.base import Agent
from palaestra.errors import ConfigError

AgentFactory = Callable[..., Agent]
"""A class or function taking the agent's options as keyword arguments."""

AGENT_GROUP = "palaestra.agents"
"""The entry-point group a package registers its agents under."""


AGENTS: Registry[AgentFactory] = Registry(
    "agent",
    AGENT_GROUP,
    {
        "tool_calling": "palaestra.agents.tool_calling:ToolCallingAgent",
        "single_turn": "palaestra.agents.single_turn:SingleTurnAgent",
        "step": "palaestra.agents.step:StepAgent",
        "oracle": "palaestra.agents.oracle:OracleAgent",
        "null": "palaestra.agents.oracle:NullAgent",
        "command": "palaestra.agents.command:CommandAgent",
        "mini_swe_agent": "palaestra.agents.mini_swe_agent:MiniSweAgent",
        "openhands": "palaestra.agents.openhands:OpenHandsAgent",
    },
    callable_plugin("an agent (a class or factory taking its options as keyword arguments)"),
)
"""Every agent by name: the built-ins (imported only when used) and the plug-ins."""


def make_agent(name: str, /, **options: Any) -> Agent:
    """The agent called ``name``, built with ``options`` (e.g. ``max_steps``,
    ``max_calls_per_turn`` for ``tool_calling``).

    An unknown agent, an option it does not take, a value it refuses or a plug-in that builds
    something that is not an ``Agent`` is a one-line ``ConfigError``.
    """
    plugin = AGENTS.load(name)
    where = f"agent '{name}'" + ("" if plugin.source == "built-in" else f" ({plugin.source})")
    agent = call_with(plugin.value, options, where)
    if not isinstance(agent, Agent):
        raise ConfigError(f"{where} built a {type(agent).__name__}, which is not an Agent")
    return agent


def agent_options(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` over the defaults agent ``name`` declares: what its rollouts depend on."""
    return effective_keywords(AGENTS.load(name).value, options)
