"""The flags ``collect`` and ``eval`` share come from one place (``run_flags``)."""

from __future__ import annotations

from typing import Any

import click

from palaestra.cli.collect import collect_command
from palaestra.cli.eval import eval_command
from palaestra.cli.options import run_fields, run_flags, sampling_of


@click.command()
@run_flags
def bare(**options: Any) -> None:
    """Only the shared flags."""


def described(command: click.Command, names: set[str]) -> dict[str, tuple[object, ...]]:
    return {
        param.name: (tuple(param.opts), repr(param.type), param.default, getattr(param, "help", ""))
        for param in command.params
        if param.name in names
    }


def test_collect_and_eval_take_every_run_flag_alike() -> None:
    shared = {param.name for param in bare.params if param.name is not None}
    assert {"repeats", "resume", "model_spec", "agent_name", "temperature", "workers"} <= shared
    assert described(collect_command, shared) == described(bare, shared)
    assert described(eval_command, shared) == described(bare, shared)


def test_the_run_flags_values_become_the_run_s_fields_and_sampling() -> None:
    context = bare.make_context("bare", ["--repeats", "3", "--top-p", "0.5", "--resume"])
    options = {**context.params, "metrics_port": None}
    assert sampling_of(options) == {"top_p": 0.5}
    fields = run_fields(options)
    assert (fields["repeats"], fields["resume"], fields["seed"]) == (3, True, 0)
    assert fields["executor"] == "local" and fields["metrics_port"] is None
