"""reasoning_gym: every reasoning-gym generator, and weighted mixtures of them, as environments.

Each task row names its generator (``dataset``) and carries reasoning-gym's entry (``question``,
``answer``, ``metadata``), so one environment scores any mix of rows. The reward is
reasoning-gym's own ``score_answer`` on the model's last ``<answer>...</answer>`` (failing
that, its last ``\\boxed{...}``), computed in the worker pool.

Which generators ``generate_tasks`` (``--num-tasks N --seed S``) draws from:

- ``--env reasoning_gym``: ``DEFAULT_MIXTURE``, quick generators with well-defined answers;
- ``--env reasoning_gym --env-arg datasets=NAME``: the one generator NAME (e.g.
  ``gsm_symbolic``), or a JSON object of weights (``datasets='{"gcd": 1, "lcm": 2}'``), with
  ``dataset_configs`` for reasoning-gym's config of each; ``ReasoningGym(datasets=...)`` from
  Python; or a subclass setting ``datasets`` in a small file, ``--env ./my_mix.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from palaestra import (
    ConfigError,
    Environment,
    FailureKind,
    JsonDict,
    Session,
    Verdict,
    output_text,
    strip_reasoning,
)
from palaestra.envs._shared import reasoning_gym as scoring

DEFAULT_MIXTURE: dict[str, float] = dict.fromkeys(
    [
        "basic_arithmetic",
        "base_conversion",
        "caesar_cipher",
        "calendar_arithmetic",
        "chain_sum",
        "count_bits",
        "family_relationships",
        "fraction_simplification",
        "gcd",
        "gsm_symbolic",
        "lcm",
        "leg_counting",
        "letter_counting",
        "maze",
        "number_sequence",
        "number_sorting",
        "prime_factorization",
        "simple_equations",
        "spell_backward",
        "syllogism",
        "time_intervals",
        "word_sorting",
    ],
    1.0,
)


class ReasoningGym(Environment):
    """reasoning-gym generators (by name or weighted mixture), scored by reasoning-gym itself."""

    name = "reasoning_gym"
    datasets: dict[str, float] = DEFAULT_MIXTURE
    """Generator name -> weight, for ``generate_tasks`` (the constructor's ``datasets``)."""
    dataset_configs: dict[str, dict[str, Any]] = {}
    """Generator name -> reasoning-gym config fields (e.g. ``{"chain_sum": {"max_terms": 6}}``)."""
    score_timeout: ClassVar[float] = 30.0
    """Seconds one scoring may take in the worker pool before the rollout fails as a timeout."""

    def __init__(
        self,
        datasets: str | Mapping[str, float] | None = None,
        dataset_configs: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        """Draw from one generator (``datasets="gcd"``) or a weighted mixture (``{"gcd": 1,
        "lcm": 2}``, or as text ``"gcd:1,lcm:2"`` for ``--env-arg``), each configured by
        ``dataset_configs`` (``{"chain_sum": {"max_terms": 6}}``, JSON for ``--env-arg``); by
        default the class's own. Both are checked here, before any task is made."""
        if datasets is not None:
            weights = _weights(datasets) if isinstance(datasets, str) else dict(datasets)
            scoring.check_mixture(weights)
            self.datasets = weights
        if dataset_configs is not None:
            scoring.check_configs(dataset_configs)
            self.dataset_configs = {k: dict(v) for k, v in dataset_configs.items()}

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """``count`` rows from ``datasets`` (weighted), reproducible from ``seed``."""
        return scoring.generate(self.datasets, self.dataset_configs, count, seed)

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        task = session.task
        if not isinstance(task.get("dataset"), str) or not isinstance(task.get("question"), str):
            return Verdict.failed(
                FailureKind.INVALID_INPUT, "a reasoning_gym task needs 'dataset' and 'question'"
            )
        answer = scoring.extract_answer(strip_reasoning(output_text(response)))
        metrics: dict[str, Any] = {
            "dataset": task["dataset"],
            "answer_found": answer is not None,
            "extracted_answer": (answer or "")[:500],
        }
        if answer is None:
            return Verdict(reward=0.0, metrics=metrics)
        fields = {k: task[k] for k in scoring.TASK_FIELDS if k in task}
        result = await self.run_in_pool(scoring.score, fields, answer, timeout=self.score_timeout)
        if "problem" in result:
            return Verdict.failed(FailureKind.INVALID_INPUT, result["problem"])
        return Verdict(reward=result["score"], metrics=metrics)


def _weights(text: str) -> dict[str, float]:
    """``"gcd"`` or ``"gcd:1,lcm:2"`` (a weight left out is 1) as name -> weight."""
    weights: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, weight = part.partition(":")
        try:
            weights[name.strip()] = float(weight) if weight.strip() else 1.0
        except ValueError:
            raise ConfigError(f"datasets: {part!r} is not NAME or NAME:WEIGHT") from None
    return weights
