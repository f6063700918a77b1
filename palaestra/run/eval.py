"""``palaestra.eval``: environments + model + repeats -> collect each, then one report.

::

    import palaestra

    result = palaestra.eval(["math", "weather"], model="http://localhost:8000/v1",
                            repeats=4, output_dir="runs/eval1")
    print(result.figure("mean reward").describe())               # overall, with its interval
    for env in result.environments:
        print(env.name, env.figure("pass@1").describe())
    print(result.report.html)                                    # runs/eval1/report.html

Each environment is one ``palaestra.collect`` run, written to ``<output_dir>/<name>.jsonl``
(with its sidecars), so everything ``collect`` guarantees holds: ``resume=True`` continues
every environment's run where it stopped (an environment already finished costs a read of
its files), ``overwrite=True`` starts them all over. Then ``write_report`` reads the runs
back into ``<output_dir>/report.md`` and ``report.html``: each environment's figures with
their intervals and the overall figures, which pool every environment's tasks (each task
weighs the same, whichever environment it comes from; the report says so).

``env_args`` gives environments their constructor's arguments, keyed by the environment as
``envs`` gives it (``{"./my_env.py": {"difficulty": 3}}``; with a mapping, by its names). The
other fields of ``collect`` apply to every run alike: ``workers``, ``executor`` and
``ray_address`` spread each run's rollouts (the workers start with each run and stop at its
end), and ``metrics_port`` is served by the run under way (see ``eval``).

The environments run one after the other, not side by side: each run already keeps
``concurrency`` rollouts in flight against the model, which is what limits an evaluation;
running environments at once would multiply the load on the endpoint (the embedded model
answers one request at a time), make each environment's time-per-phase figures depend on the
others, and leave several half-finished runs behind a Ctrl-C. To go faster, raise
``concurrency``. A run that stops early (the model unreachable, the disk full) ends the
evaluation there: ``Evaluation.stopped_reason`` says why, the report covers what was written,
and ``resume=True`` continues.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from palaestra.collection.collector import Progress, RunSummary, work_to_keep
from palaestra.collection.files import RunFiles
from palaestra.collection.runtime import run_collector
from palaestra.environment.base import Environment
from palaestra.environment.running.client import has_user
from palaestra.errors import ConfigError
from palaestra.evaluate.figures import MEAN_REWARD, Figure, RunFigures
from palaestra.evaluate.report import ReportFiles, write_report
from palaestra.run.collect import RunFields, collect_async, run_spec
from palaestra.spec import EnvSpec, RunSpec
from palaestra.types import JsonDict

if TYPE_CHECKING:
    from typing_extensions import Unpack

EnvLike = str | EnvSpec | Environment | type[Environment]
"""An environment as ``collect``'s ``env`` takes it: a name, a path, a class, an instance, a
spec (``EnvSpec(url=...)`` for a served one)."""
ProgressFor = Callable[[str], "Progress | Callable[[RunSummary], object] | None"]
"""Given an environment's name, what shows its run's progress."""
NOT_PER_ENVIRONMENT = ("env", "env_url", "env_cmd", "env_cmd_timeout", "output")
"""``RunFields`` that name one run's environment or output: ``envs`` and ``output_dir`` say
these for an evaluation (``EnvSpec`` carries url, cmd and cmd_timeout; ``env_args`` is keyed by
environment)."""
REPORT_MARKDOWN = "report.md"
REPORT_HTML = "report.html"


@dataclass(frozen=True, slots=True)
class EnvironmentResult:
    """One environment of an evaluation: its run's summary and figures."""

    name: str
    output: Path
    """Its rollouts JSONL (``<output_dir>/<name>.jsonl``); the sidecars are beside it."""
    summary: RunSummary | None
    """This invocation's summary; None when the evaluation stopped before this environment."""
    figures: RunFigures | None
    """Its figures with intervals (``run_figures``); None when it has no rollouts file."""

    def figure(self, name: str = MEAN_REWARD) -> Figure:
        """The figure called ``name``; ``KeyError`` when there is none (or no figures)."""
        if self.figures is None:
            raise KeyError(f"{self.name} has no figures: its run wrote no rollouts")
        return self.figures.figure(name)


@dataclass(frozen=True, slots=True)
class Evaluation:
    """What ``eval`` did: per environment and overall figures, the report, how it ended."""

    environments: list[EnvironmentResult]
    overall: RunFigures | None
    """Every environment's tasks pooled, each task weighing the same (``combine_runs``); the
    reward figures only. With one environment, its own figures."""
    report: ReportFiles | None
    """Where the report went (None when no environment wrote rollouts)."""
    output_dir: Path
    failures_as_zero: bool
    stopped_reason: str | None = None
    """Why a run stopped early (the evaluation stopped there; ``resume=True`` continues)."""

    def figure(self, name: str = MEAN_REWARD) -> Figure:
        """The overall figure called ``name`` (``mean reward``, ``pass@1``, ...)."""
        if self.overall is None:
            raise KeyError("the evaluation has no figures: no environment wrote rollouts")
        return self.overall.figure(name)

    def environment(self, name: str) -> EnvironmentResult:
        for found in self.environments:
            if found.name == name:
                return found
        known = ", ".join(found.name for found in self.environments)
        raise KeyError(f"no environment {name!r} (the evaluation has: {known})")

    @property
    def nothing_scored(self) -> bool:
        """Every rollout this invocation attempted failed (and some were attempted)."""
        summaries = [env.summary for env in self.environments if env.summary is not None]
        attempted = sum(summary.done + summary.failed for summary in summaries)
        return attempted > 0 and sum(summary.done for summary in summaries) == 0

    def to_json(self) -> JsonDict:
        return {
            "output_dir": str(self.output_dir),
            "reading": "failures as 0" if self.failures_as_zero else "failures excluded",
            "overall": "tasks pooled over environments, each task weighing the same",
            "figures": None if self.overall is None else self.overall.to_json()["figures"],
            "environments": [
                {
                    "name": env.name,
                    "output": str(env.output),
                    "figures": None if env.figures is None else env.figures.to_json(),
                }
                for env in self.environments
            ],
            "report": None
            if self.report is None
            else {"markdown": str(self.report.markdown), "html": str(self.report.html)},
            "stopped_reason": self.stopped_reason,
        }


@dataclass(frozen=True, slots=True)
class Plan:
    """The runs of an evaluation, checked before any of them starts."""

    runs: list[tuple[str, RunSpec]]
    output_dir: Path
    failures_as_zero: bool


def plan(
    envs: Sequence[EnvLike] | Mapping[str, EnvLike],
    *,
    output_dir: str | Path = "runs/eval",
    **fields: Unpack[RunFields],
) -> Plan:
    """The ``RunSpec`` of each environment's run, and their names; every mistake (an unknown
    environment or field, ``env_args`` of no environment or that one does not take, two
    environments of one name, an earlier evaluation's files without ``resume`` or
    ``overwrite``) is one ``ConfigError`` before anything runs."""
    from palaestra._util.arguments import check_keywords
    from palaestra.collection.assembly import find

    given = [key for key in NOT_PER_ENVIRONMENT if key in fields]
    if given:
        raise TypeError(
            f"eval takes envs= and output_dir=, not {given[0]}= (an EnvSpec carries a served "
            "environment's url, cmd and cmd_timeout)"
        )
    named = list(envs.items()) if isinstance(envs, Mapping) else [(None, env) for env in envs]
    if not named:
        raise ConfigError("eval needs at least one environment")
    keys = [label if label is not None else env for label, env in named]
    args = _args_by_environment(fields.pop("env_args", None), keys)
    if len(named) > 1 and fields.get("input") is not None:
        raise ConfigError("input= names one environment's tasks: evaluate several without it")
    directory = Path(output_dir)
    runs: list[tuple[str, RunSpec]] = []
    without_user: list[str] = []
    for key, (label, env) in zip(keys, named, strict=True):
        one: RunFields = {**fields, "env": env}
        if isinstance(key, str) and args.get(key):
            one["env_args"] = args[key]
        first = run_spec(**one)
        found = find(first.env)
        if found is not None and not found.given:  # its arguments, checked before any run
            check_keywords(found.cls, found.args, f"environment '{found.name}'")
        name = _slug(label or (found.name if found is not None else _served_name(first.env)))
        if any(name == known for known, _ in runs):
            raise ConfigError(
                f"two environments are named {name!r}: pass a mapping {{name: env}} to name them"
            )
        output = directory / f"{name}.jsonl"
        update: dict[str, Any] = {
            "collection": first.collection.model_copy(update={"output": output})
        }
        if first.user_model is not None and found is not None and not has_user(found.cls):
            without_user.append(name)  # its run goes without: nothing there would ask it
            update["user_model"] = None
        runs.append((name, first.model_copy(update=update)))
    if without_user and len(without_user) == len(runs):
        if len(runs) == 1:
            raise ConfigError(f"--user-model: environment {runs[0][0]} has no simulated user")
        listed = ", ".join(without_user)
        raise ConfigError(f"--user-model: none of the environments ({listed}) has a simulated user")
    resume, overwrite = fields.get("resume", False), fields.get("overwrite", False)
    if not (resume or overwrite):
        for name, spec in runs:
            path = spec.collection.output
            earlier = None if path is None else work_to_keep(RunFiles(path))
            if earlier is not None:
                what = "already exists" if earlier == path else "holds unfinished rollouts"
                raise ConfigError(
                    f"{earlier} {what} (environment {name}): pass --resume to continue "
                    "the evaluation or --overwrite to start over"
                )
    return Plan(runs, directory, bool(fields.get("failures_as_zero", False)))


async def run_plan(planned: Plan, progress_for: ProgressFor | None = None) -> Evaluation:
    """Collect each run of ``planned`` in turn, then write the report."""
    summaries: dict[str, RunSummary] = {}
    stopped: str | None = None
    for name, spec in planned.runs:
        shown = progress_for(name) if progress_for is not None else None
        summary = await collect_async(spec, progress=shown)
        summaries[name] = summary
        if summary.stopped_reason:
            stopped = f"{name}: {summary.stopped_reason}"
            break
    outputs = {name: spec.collection.output for name, spec in planned.runs}
    written = {name: path for name, path in outputs.items() if path is not None and path.is_file()}
    report = None
    if written:
        notes = [] if stopped is None else [f"stopped early ({stopped}); --resume continues"]
        report = write_report(
            written,
            markdown=planned.output_dir / REPORT_MARKDOWN,
            html=planned.output_dir / REPORT_HTML,
            failures_as_zero=planned.failures_as_zero,
            title=f"palaestra eval: {', '.join(outputs)}",
            notes=notes,
        )
    figures = {} if report is None else {run.name: run.figures for run in report.report.runs}
    environments = []
    for name, path in outputs.items():
        assert path is not None
        environments.append(EnvironmentResult(name, path, summaries.get(name), figures.get(name)))
    overall = None
    if report is not None:
        overall = report.report.overall or report.report.runs[0].figures
    return Evaluation(
        environments=environments,
        overall=overall,
        report=report,
        output_dir=planned.output_dir,
        failures_as_zero=planned.failures_as_zero,
        stopped_reason=stopped,
    )


async def eval_async(
    envs: Sequence[EnvLike] | Mapping[str, EnvLike],
    *,
    output_dir: str | Path = "runs/eval",
    progress: Callable[[str, RunSummary], object] | None = None,
    **fields: Unpack[RunFields],
) -> Evaluation:
    """Evaluate ``envs`` (a list, or a mapping of names to environments) with one model:
    collect each in turn into ``output_dir``, then write the report (see the module).

    ``fields`` are ``collect``'s (``model``, ``repeats``, ``concurrency``, ``limit``,
    ``num_tasks``, ``sampling``, ``agent``, ``resume``, ``overwrite``, ``failures_as_zero``,
    ``workers``, ``executor``, ``ray_address``, ``metrics_port``, ...) and apply to every
    environment, but for ``env_args``: the arguments of each environment, keyed by the
    environment as ``envs`` gives it (a name or path in the list, or the mapping's name), e.g.
    ``env_args={"./my_env.py": {"difficulty": 3}}``; a key that is not one of them is a
    ``ConfigError``. The arguments are part of each run's identity: a resume with other
    arguments is refused as ``collect`` refuses it. ``metrics_port`` is served by each run in
    turn (the environments run one after the other): the port is bound while an environment
    runs, its counters start at 0 with each environment, and it is closed for a moment between
    two. ``progress`` is called with an environment's name and its run's summary as it goes.
    For code inside an event loop; ``eval`` is the same without.
    """
    planned = plan(envs, output_dir=output_dir, **fields)
    return await run_plan(planned, _per_environment(progress))


def eval(  # palaestra.eval, as inspect_ai.eval: the name a user looks for
    envs: Sequence[EnvLike] | Mapping[str, EnvLike],
    *,
    output_dir: str | Path = "runs/eval",
    progress: Callable[[str, RunSummary], object] | None = None,
    **fields: Unpack[RunFields],
) -> Evaluation:
    """Evaluate environments with one model: collect, then the report with intervals.

    ::

        result = palaestra.eval(["math", "weather"], model="http://localhost:8000/v1",
                                repeats=4, output_dir="runs/eval1", resume=True)

    ``eval_async`` (which says what ``fields`` and ``env_args`` are) on an event loop of its
    own (uvloop's when installed, SIGTERM stopping the run as Ctrl-C does, as ``collect``).
    Returns the ``Evaluation``.
    """
    planned = plan(envs, output_dir=output_dir, **fields)
    return run_collector(run_plan(planned, _per_environment(progress)))


def _per_environment(
    progress: Callable[[str, RunSummary], object] | None,
) -> ProgressFor | None:
    if progress is None:
        return None
    callback = progress

    def progress_for(name: str) -> Callable[[RunSummary], object]:
        @functools.wraps(callback)  # an error in it names the caller's function, not this one
        def one(summary: RunSummary) -> object:
            return callback(name, summary)

        return one

    return progress_for


def _args_by_environment(
    given: Mapping[str, Any] | None, keys: Sequence[object]
) -> dict[str, Mapping[str, Any]]:
    """``env_args`` checked: each key one of the environments (as ``envs`` names it), each
    value a mapping of keyword arguments; any other is one ``ConfigError`` naming it."""
    if not given:
        return {}
    if not isinstance(given, Mapping):
        raise ConfigError(f"env_args must be a mapping of environment to arguments, not {given!r}")
    named = [key for key in keys if isinstance(key, str)]
    shown = ", ".join(repr(key) for key in named) or "none given by name"
    checked: dict[str, Mapping[str, Any]] = {}
    for key, args in given.items():
        if key not in named:
            example = f"{{{(named or ['NAME'])[0]!r}: {{{key!r}: ...}}}}"
            raise ConfigError(
                f"env_args names {key!r}, which is not one of the environments ({shown}): "
                f"key the arguments by the environment as given, e.g. env_args={example}"
            )
        if not isinstance(args, Mapping):
            raise ConfigError(
                f"env_args[{key!r}] must be a mapping of the environment's arguments, not {args!r}"
            )
        checked[key] = args
    return checked


def _served_name(env: EnvSpec) -> str:
    url = env.url or env.cmd or "remote"
    host = re.sub(r"^[a-z]+://", "", url).split("/")[0]
    return host or "remote"


def _slug(name: str) -> str:
    """A file stem of ``name``: ``./envs/my_env.py:Maze`` -> ``my_env.py_Maze``."""
    stem = name.rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", stem).strip("._") or "env"
