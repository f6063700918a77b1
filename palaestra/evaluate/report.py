"""A run's report: its figures with intervals and what lies behind them, as markdown and HTML.

::

    from palaestra.evaluate import write_report

    written = write_report("runs/math.jsonl")      # runs/math_report.md, runs/math_report.html
    print(written.markdown, written.html)
    print("\\n".join(written.report.headline()))

``build_report`` reads one run or several (the environments of an evaluation) into a
``Report``: per run, the headline figures (``run_figures``: n, failures and a 95% interval
each), the reward distribution, each task's pass rate (hardest first), the failures by kind
with their most frequent reasons (from ``<out>_failures.jsonl``), the seconds per phase and
the tokens per rollout (``_palaestra.timings`` and ``response.usage`` of the rows), and a
model pool's per-endpoint counts when the aggregate file has them (``model_endpoints``). With
several runs it adds the overall figures: every run's tasks pooled (``combine_runs``), each
task weighing the same whichever run it came from. ``write_report`` renders it with
``palaestra.evaluate.markdown`` and ``palaestra.evaluate.page`` (one self-contained HTML page:
inline CSS and SVG, nothing fetched) and writes both files.

Reading a run back costs what ``load_run`` costs (about 1.1 kB of memory a rollout; 4-5 s per
100,000 rollouts of 4.75 kB, mostly parsing JSON), the report itself a few percent of that.
"""

from __future__ import annotations

import math
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import orjson

from palaestra.collection.files import RunFiles, writing
from palaestra.evaluate.figures import SCORED_ONLY, RunFigures, run_figures
from palaestra.evaluate.runs import Run, Task, combine_runs, load_run
from palaestra.types import JsonDict

REASONS_SHOWN = 3
"""Distinct reasons shown per failure kind (the most frequent)."""
REASON_LENGTH = 300
LEVELS = 12
"""At most this many distinct values get a bar each; more are binned in ``BINS`` bins."""
BINS = 10
PHASES = ("seed", "model", "tools", "verify", "total")
"""The agent's phases, in the order a rollout goes through them (others follow, sorted)."""
OVERALL = "overall"


@dataclass(frozen=True, slots=True)
class Bar:
    """One bar of a distribution: values in ``label`` (a value, or a bin ``[a, b)``)."""

    label: str
    count: int


@dataclass(frozen=True, slots=True)
class TaskLine:
    """One task: its rollouts, passes and mean reward."""

    index: int
    identity: str | None
    scored: int
    failed: int
    passed: int
    mean_reward: float | None
    """Over the scored rollouts (and the failed ones as 0 when failures are read as 0)."""
    pass_rate: float | None
    """Passes over the same rollouts; None when there are none."""


@dataclass(frozen=True, slots=True)
class FailureGroup:
    """The failures of one kind: how many, how many masked, their most frequent reasons."""

    kind: str
    count: int
    masked: int
    reasons: list[tuple[str, int]]


@dataclass(frozen=True, slots=True)
class Spread:
    """How a per-rollout quantity (seconds of a phase, tokens) spreads over the rollouts."""

    name: str
    rollouts: int
    """Scored rollouts that report it."""
    total: float
    mean: float
    median: float
    p90: float
    maximum: float


@dataclass(frozen=True, slots=True)
class RunReport:
    """Everything the report shows about one run."""

    name: str
    figures: RunFigures
    rewards: list[Bar]
    """The scored rollouts' rewards."""
    pass_rates: list[Bar]
    """The tasks' pass rates."""
    tasks: list[TaskLine]
    """Every task, hardest first (lowest pass rate, then lowest mean reward, then index)."""
    failures: list[FailureGroup]
    timings: list[Spread]
    usage: list[Spread]
    truncated: int
    """Scored rollouts that ran out of ``max_steps``."""
    endpoints: list[JsonDict]
    """A model pool's per-endpoint counts (the aggregate file's ``model_endpoints``)."""
    notes: list[str]
    """Anything the reader should know about how the run was read."""

    @property
    def output(self) -> Path:
        return self.figures.run.output


@dataclass(frozen=True, slots=True)
class Report:
    """The report of one run, or of several (an evaluation's environments) and overall."""

    title: str
    runs: list[RunReport]
    overall: RunFigures | None
    """With several runs: their tasks pooled (``combine_runs``), every task weighing the
    same whichever run it came from; the reward figures only (verifier metrics differ from
    one environment to another). None for one run."""
    failures_as_zero: bool
    notes: list[str]

    @property
    def reading(self) -> str:
        """How the reward figures read failed rollouts, in words."""
        if self.failures_as_zero:
            return "failed rollouts are read as reward 0 (and as not passing)"
        return "failed rollouts are left out of the figures (--failures-as-zero reads them as 0)"

    def headline(self) -> list[str]:
        """Plain lines of the headline figures (what a terminal shows at the end of a run)."""
        lines: list[str] = []
        for run in self.runs:
            prefix = f"{run.name}: " if len(self.runs) > 1 else ""
            for figure in run.figures.figures:
                if figure.reading != SCORED_ONLY:
                    lines.append(f"{prefix}{figure.name:12} {figure.describe()}")
        if self.overall is not None:
            for figure in self.overall.figures:
                lines.append(f"{OVERALL}: {figure.name:12} {figure.describe()}")
        return lines


@dataclass(frozen=True, slots=True)
class ReportFiles:
    """Where ``write_report`` wrote the report, and the report."""

    markdown: Path
    html: Path
    report: Report


RunLike = Run | str | os.PathLike[str]


def build_report(
    runs: RunLike | Sequence[RunLike] | Mapping[str, RunLike],
    *,
    failures_as_zero: bool = False,
    seed: int = 0,
    title: str | None = None,
    notes: Iterable[str] = (),
) -> Report:
    """The ``Report`` of a run (a ``Run`` or the path of its rollouts JSONL) or of several
    (a sequence, or a mapping of names, an environment's say, to runs).

    ``failures_as_zero`` and ``seed`` are ``run_figures``'s. A run that cannot be read is
    ``load_run``'s ``ConfigError`` or ``InputError``.
    """
    named = _named(runs)
    loaded = [(name, run if isinstance(run, Run) else load_run(run)) for name, run in named]
    reports = [
        run_report(run, name=name, failures_as_zero=failures_as_zero, seed=seed)
        for name, run in loaded
    ]
    overall = None
    if len(loaded) > 1:
        pooled = combine_runs([run for _, run in loaded])
        overall = run_figures(pooled, failures_as_zero=failures_as_zero, metrics=False, seed=seed)
        common = set.intersection(*({f.name for f in run.figures.figures} for run in reports))
        # majority@k only where every environment reports answers (else its tasks would be 0s)
        overall = replace(overall, figures=[f for f in overall.figures if f.name in common])
    if title is None:
        title = f"palaestra report: {reports[0].name}" if len(reports) == 1 else "palaestra eval"
    return Report(title, reports, overall, failures_as_zero, list(notes))


def run_report(
    run: RunLike, *, name: str | None = None, failures_as_zero: bool = False, seed: int = 0
) -> RunReport:
    """The part of the report about one run."""
    if not isinstance(run, Run):
        run = load_run(run)
    figures = run_figures(run, failures_as_zero=failures_as_zero, seed=seed)
    tasks = [_task_line(task, failures_as_zero) for task in run.tasks.values()]
    tasks.sort(key=_hardest_first)
    rewards = [rollout.reward for rollout in run.rollouts()]
    rates = [task.pass_rate for task in tasks if task.pass_rate is not None]
    timings: defaultdict[str, list[float]] = defaultdict(list)
    usage: defaultdict[str, list[float]] = defaultdict(list)
    for rollout in run.rollouts():
        for phase, seconds in rollout.timings.items():
            timings[phase].append(seconds)
        for key, count in rollout.usage.items():
            usage[key].append(float(count))
    endpoints, notes = _endpoints(RunFiles(run.output).aggregate_metrics)
    notes.extend(run.warnings)
    if run.superseded:
        notes.append(
            f"{run.superseded} failure records left out: their rollout was retried and scored "
            "(or recorded twice)"
        )
    return RunReport(
        name=name or str(run.output),
        figures=figures,
        rewards=bars(rewards),
        pass_rates=bars(rates, low=0.0, high=1.0),
        tasks=tasks,
        failures=failure_groups(run),
        timings=[spread(phase, timings[phase]) for phase in _ordered(timings, PHASES)],
        usage=[spread(key, usage[key]) for key in _ordered(usage, ())],
        truncated=sum(rollout.truncated for rollout in run.rollouts()),
        endpoints=endpoints,
        notes=notes,
    )


def write_report(
    runs: RunLike | Sequence[RunLike] | Mapping[str, RunLike],
    *,
    markdown: str | os.PathLike[str] | None = None,
    html: str | os.PathLike[str] | None = None,
    failures_as_zero: bool = False,
    seed: int = 0,
    title: str | None = None,
    notes: Iterable[str] = (),
) -> ReportFiles:
    """Write the report of ``runs`` (see ``build_report``) as markdown and as HTML.

    By default beside a single run: ``<out>_report.md`` and ``<out>_report.html``
    (``RunFiles.report_markdown``, ``report_html``); several runs need both paths. A file that
    cannot be written is an ``OutputError`` (a ``ConfigError``) naming it.
    """
    from palaestra.evaluate.markdown import to_markdown
    from palaestra.evaluate.page import to_html

    report = build_report(
        runs, failures_as_zero=failures_as_zero, seed=seed, title=title, notes=notes
    )
    if markdown is None or html is None:
        if len(report.runs) > 1:
            raise ValueError("the report of several runs needs markdown= and html= paths")
        files = RunFiles(report.runs[0].output)
        markdown = files.report_markdown if markdown is None else markdown
        html = files.report_html if html is None else html
    written = ReportFiles(Path(markdown), Path(html), report)
    for path, text in ((written.markdown, to_markdown(report)), (written.html, to_html(report))):
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(path.name + ".tmp")
            temporary.write_text(text, encoding="utf-8")
            temporary.replace(path)  # a reader never sees half a report
    return written


def bars(
    values: Sequence[float], *, low: float | None = None, high: float | None = None
) -> list[Bar]:
    """The distribution of ``values``: a bar per value when there are at most ``LEVELS``
    distinct ones, else ``BINS`` equal bins over ``[low, high]`` (default: the values' range,
    widened to hold 0 and 1), the last bin closed."""
    if not values:
        return []
    levels = Counter(values)
    if len(levels) <= LEVELS:
        return [Bar(_number(value), count) for value, count in sorted(levels.items())]
    start = min(min(values), 0.0) if low is None else low
    stop = max(max(values), 1.0) if high is None else high
    width = (stop - start) / BINS
    counts = [0] * BINS
    for value in values:
        counts[min(BINS - 1, max(0, int((value - start) / width)))] += 1
    edges = [start + width * i for i in range(BINS + 1)]
    return [
        Bar(f"[{_number(edges[i])}, {_number(edges[i + 1])}{']' if i == BINS - 1 else ')'}", n)
        for i, n in enumerate(counts)
    ]


def spread(name: str, values: Sequence[float]) -> Spread:
    """``values``' total, mean, median, 90th percentile (nearest rank) and maximum."""
    ordered = sorted(values)
    count = len(ordered)
    total = math.fsum(ordered)
    return Spread(
        name=name,
        rollouts=count,
        total=total,
        mean=total / count,
        median=_rank(ordered, 0.5),
        p90=_rank(ordered, 0.9),
        maximum=ordered[-1],
    )


def failure_groups(run: Run) -> list[FailureGroup]:
    """The run's failures by kind, most frequent first, with their most frequent reasons."""
    counts: Counter[str] = Counter()
    masked: Counter[str] = Counter()
    reasons: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for failure in run.failures():
        counts[failure.kind] += 1
        masked[failure.kind] += failure.masked
        reason = " ".join(failure.reason.split()) or "(no reason given)"
        if len(reason) > REASON_LENGTH:
            reason = reason[: REASON_LENGTH - 3] + "..."
        reasons[failure.kind][reason] += 1
    return [
        FailureGroup(kind, count, masked[kind], reasons[kind].most_common(REASONS_SHOWN))
        for kind, count in counts.most_common()
    ]


def _named(runs: RunLike | Sequence[RunLike] | Mapping[str, RunLike]) -> list[tuple[str, RunLike]]:
    if isinstance(runs, Run | str | os.PathLike):
        return [(_name_of(runs), runs)]
    if isinstance(runs, Mapping):
        named = [(str(name), run) for name, run in runs.items()]
    else:
        named = [(_name_of(run), run) for run in runs]
    if not named:
        raise ValueError("a report needs at least one run")
    return named


def _name_of(run: RunLike) -> str:
    return str(run.output if isinstance(run, Run) else Path(run))


def _task_line(task: Task, failures_as_zero: bool) -> TaskLine:
    n = task.attempted if failures_as_zero else len(task.rollouts)
    return TaskLine(
        index=task.index,
        identity=task.identity,
        scored=len(task.rollouts),
        failed=len(task.failures),
        passed=task.passed,
        mean_reward=sum(task.rewards) / n if n else None,
        pass_rate=task.passed / n if n else None,
    )


def _hardest_first(task: TaskLine) -> tuple[float, float, int]:
    rate = math.inf if task.pass_rate is None else task.pass_rate  # nothing scored: last
    reward = math.inf if task.mean_reward is None else task.mean_reward
    return rate, reward, task.index


def _ordered(found: Mapping[str, object], first: Sequence[str]) -> list[str]:
    return [name for name in first if name in found] + sorted(set(found) - set(first))


def _rank(ordered: Sequence[float], share: float) -> float:
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _number(value: float) -> str:
    return f"{value:.4g}"


def _endpoints(path: Path) -> tuple[list[JsonDict], list[str]]:
    """The aggregate file's ``model_endpoints`` (a model pool's), and a note if unreadable."""
    if not path.is_file():
        return [], []
    try:
        entries = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as error:
        return [], [f"{path} could not be read ({error}): no per-endpoint counts"]
    found: list[JsonDict] = []
    for entry in entries if isinstance(entries, list) else []:
        listed = entry.get("model_endpoints") if isinstance(entry, dict) else None
        for endpoint in listed if isinstance(listed, list) else []:
            if isinstance(endpoint, dict) and endpoint not in found:
                found.append(endpoint)
    return found, []


def headline_names(figures: RunFigures) -> list[str]:
    """The reward figures (mean reward, pass@k, pass^k, majority@k): not verifier metrics."""
    return [figure.name for figure in figures.figures if figure.reading != SCORED_ONLY]
