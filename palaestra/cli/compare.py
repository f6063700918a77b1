"""``palaestra compare RUN_A RUN_B``: run B against run A, paired by task.

A thin shell over ``palaestra.evaluate.compare_runs``: the flags become its arguments; what is
left here is how a terminal shows the comparison, and the exit status that gates CI.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from palaestra.cli.errors import exit_on_user_error

if TYPE_CHECKING:
    from palaestra.evaluate import Comparison, Difference, Flip

EXIT_WORSE = 5
"""``--fail-if-worse``: B may be worse than A by more than the margin (see the command)."""
SHOWN_FLIPS = 10
TEST_LABELS = {
    "mcnemar-exact": "McNemar",
    "sign-test-exact": "sign",
    "permutation": "perm.",
    "permutation-exact": "perm.",
}
LEGEND = (
    "interval: Newcombe's for one pass/fail per task, else the paired bootstrap over tasks; "
    "p: McNemar's exact test (one pass/fail per task), the exact sign test (pass rates) or a "
    "paired permutation test (rewards, metrics)"
)


@click.command("compare")
@click.argument("run_a", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("run_b", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--fail-if-worse",
    type=click.FloatRange(min=0.0),
    metavar="MARGIN",
    help="Exit 5 unless the 95% interval of B - A (the --metric) starts at -MARGIN or above, "
    "B's failure rate is at most A's + MARGIN and B lacks at most MARGIN of A's tasks.",
)
@click.option(
    "--allow-more-failures",
    is_flag=True,
    help="Let --fail-if-worse pass B even if its failure rate exceeds A's by more than MARGIN.",
)
@click.option(
    "--allow-fewer-tasks",
    is_flag=True,
    help="Let --fail-if-worse pass B even if it lacks more than MARGIN of A's tasks.",
)
@click.option(
    "--metric",
    default="mean reward",
    show_default=True,
    help="The figure --fail-if-worse gates on (mean reward, pass@1, a verifier metric...).",
)
@click.option(
    "--failures-as-zero",
    is_flag=True,
    help="Read failed rollouts as reward 0 (default: leave them out of the figures).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the resampling.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare_command(
    run_a: Path,
    run_b: Path,
    fail_if_worse: float | None,
    allow_more_failures: bool,
    allow_fewer_tasks: bool,
    metric: str,
    failures_as_zero: bool,
    seed: int,
    as_json: bool,
) -> None:
    """Compare run B (the candidate) with run A (the baseline), paired by task.

    RUN_A and RUN_B are rollouts JSONL files (their _failures.jsonl beside them is read too).
    Tasks pair by _ng_task_index and prompt; tasks only one run has are listed. Each figure's
    difference B - A has a 95% interval (Newcombe's for one pass/fail per task, else the
    paired bootstrap over tasks) and a paired test (McNemar's exact test or the sign test for
    pass rates, a permutation test for rewards); the tasks that flipped between pass and fail
    are listed.

    With --fail-if-worse MARGIN, the gate passes when the lower bound of the 95% interval of
    B - A is at least -MARGIN (a drop of more than MARGIN is ruled out), B's failure rate is
    at most A's + MARGIN (--allow-more-failures lifts this) and B lacks at most MARGIN of A's
    tasks (--allow-fewer-tasks lifts this); one line per check says why. A run still being
    written (or killed mid-write) is read as far as it goes: a torn last line is skipped with
    a warning. Exit status: 0 done (gate passed); 1 a user error (a missing or malformed run);
    5 the gate failed.
    """
    import orjson

    from palaestra.evaluate import compare_runs

    console = Console(stderr=True)
    with exit_on_user_error(console):
        comparison = compare_runs(
            run_a,
            run_b,
            failures_as_zero=failures_as_zero,
            fail_if_worse=fail_if_worse,
            gate_on=metric,
            allow_more_failures=allow_more_failures,
            allow_fewer_tasks=allow_fewer_tasks,
            seed=seed,
        )
    warnings = dict.fromkeys([*comparison.a.run.warnings, *comparison.b.run.warnings])
    for warning in warnings:  # once each: a run compared with itself
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)
    if as_json:
        click.echo(orjson.dumps(comparison.to_json(), option=orjson.OPT_INDENT_2).decode())
    else:
        show(comparison, Console())
    if comparison.gate is not None and not comparison.gate.passed:
        raise SystemExit(EXIT_WORSE)


def show(comparison: Comparison, console: Console) -> None:
    """The comparison as a terminal shows it: figures, pairing, flips and the gate."""
    a, b = comparison.a, comparison.b
    console.print(f"A: {escape(str(a.run.output))}\nB: {escape(str(b.run.output))}")
    table = Table(
        title="B - A, paired by task", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for column in ("figure", "A", "B", "B - A", "95% interval", "n", "p (test)"):
        table.add_column(column, justify="left" if column == "figure" else "right", no_wrap=True)
    for difference in comparison.differences:
        table.add_row(*_row(difference))
    console.print(table)
    console.print(LEGEND, highlight=False, style="dim")
    paired = f"{len(comparison.paired)} tasks paired"
    for label, tasks in (
        ("only in A", comparison.only_in_a),
        ("only in B", comparison.only_in_b),
        ("same index, another prompt (not paired)", comparison.mismatched),
    ):
        if tasks:
            paired += f"; {len(tasks)} {label}: {_indices(tasks)}"
    console.print(paired, highlight=False)
    failed = f"failures: A {a.failed}, B {b.failed} ({a.reading})"
    console.print(failed, highlight=False)
    for label, flips in (
        ("pass -> fail", comparison.to_fail),
        ("fail -> pass", comparison.to_pass),
    ):
        console.print(f"{label}: {len(flips)} tasks {_flips(flips)}".rstrip(), highlight=False)
    from palaestra.evaluate.compare import FAILURES, TASKS

    allow = {FAILURES: "--allow-more-failures", TASKS: "--allow-fewer-tasks"}
    gate = comparison.gate
    if gate is not None:
        for check in gate.checks:
            verdict = "[green]gate passed[/]" if check.passed else "[red]gate failed[/]"
            hint = f" ({allow[check.name]} passes it)" if check.name in allow else ""
            line = escape(check.reason) + ("" if check.passed else hint)
            console.print(f"{verdict}: {line}", highlight=False, soft_wrap=True)


def _row(difference: Difference) -> list[str]:
    def number(value: float | None, sign: str = "") -> str:
        return "-" if value is None else f"{value:{sign}.3f}"

    interval = difference.interval
    bounds = "-" if interval is None else f"[{interval.low:+.3f}, {interval.high:+.3f}]"
    test = difference.test
    tested = "-" if test is None else f"{test.p_value:.3g} ({TEST_LABELS[test.method]})"
    return [
        escape(difference.name),
        number(difference.a),
        number(difference.b),
        number(difference.difference, "+"),
        bounds,
        str(difference.tasks),
        tested,
    ]


def _indices(tasks: list[int]) -> str:
    shown = ", ".join(str(task) for task in tasks[:SHOWN_FLIPS])
    return shown + (f", ... ({len(tasks) - SHOWN_FLIPS} more)" if len(tasks) > SHOWN_FLIPS else "")


def _flips(flips: list[Flip]) -> str:
    if not flips:
        return ""
    shown = ", ".join(f"{flip.task} ({flip.a:.2g}->{flip.b:.2g})" for flip in flips[:SHOWN_FLIPS])
    more = f", ... ({len(flips) - SHOWN_FLIPS} more)" if len(flips) > SHOWN_FLIPS else ""
    return f"(task (pass rate A->B)): {shown}{more}"
