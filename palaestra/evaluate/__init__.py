"""Evaluating runs: figures with n, failures and confidence intervals, and paired comparisons.

::

    from palaestra.evaluate import compare_runs, load_run, run_figures

    figures = run_figures("runs/math.jsonl")            # or run_figures(load_run(...))
    for figure in figures.figures:                       # mean reward, pass@k, pass^k, ...
        print(figure.name, figure.describe())
    comparison = compare_runs("runs/base.jsonl", "runs/new.jsonl", fail_if_worse=0.02)
    print(comparison.difference("mean reward").interval, comparison.gate)

Modules: ``runs`` (reading a run back: ``load_run`` -> ``Run`` of ``Task`` s), ``estimators``
(pass@k, pass^k, majority per task), ``stats`` (bootstrap and analytic intervals, paired
tests; numpy and scipy load when these are called, so ``import palaestra`` stays light),
``figures`` (``run_figures``), ``compare`` (``compare_runs``), ``report`` (``write_report``:
a run's report as markdown and self-contained HTML; ``markdown``, ``page`` and ``charts``
render it).
"""

from palaestra.environment.estimators import majority_vote, pass_at_k, pass_hat_k
from palaestra.evaluate.compare import Check, Comparison, Difference, Flip, Gate, compare_runs
from palaestra.evaluate.figures import (
    MEAN_REWARD,
    Figure,
    RunFigures,
    metric_names,
    per_task,
    run_figures,
)
from palaestra.evaluate.report import Report, ReportFiles, build_report, write_report
from palaestra.evaluate.runs import FailedRollout, Rollout, Run, Task, combine_runs, load_run
from palaestra.evaluate.stats import (
    Interval,
    TestResult,
    analytic_mean,
    bootstrap_mean,
    newcombe_paired,
    permutation_test,
    sign_test,
    student_t,
    wilson,
)

__all__ = [
    "MEAN_REWARD",
    "Check",
    "Comparison",
    "Difference",
    "FailedRollout",
    "Figure",
    "Flip",
    "Gate",
    "Interval",
    "Report",
    "ReportFiles",
    "Rollout",
    "Run",
    "RunFigures",
    "Task",
    "TestResult",
    "analytic_mean",
    "bootstrap_mean",
    "build_report",
    "combine_runs",
    "compare_runs",
    "load_run",
    "majority_vote",
    "metric_names",
    "newcombe_paired",
    "pass_at_k",
    "pass_hat_k",
    "per_task",
    "permutation_test",
    "run_figures",
    "sign_test",
    "student_t",
    "wilson",
    "write_report",
]
