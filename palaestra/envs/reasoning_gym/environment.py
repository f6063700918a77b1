"""reasoning_gym: every reasoning-gym generator, and weighted mixtures of them, as environments.

Each task row names its generator (``dataset``) and carries reasoning-gym's entry (``question``,
``answer``, ``metadata``), so one environment scores any mix of rows. The reward is
reasoning-gym's own ``score_answer`` on the model's last ``<answer>...</answer>`` (failing
that, its last ``\\boxed{...}``), computed in the worker pool.

Which generators ``generate_tasks`` (``--num-tasks N --seed S``) draws from:

- ``--env reasoning_gym``: ``DEFAULT_MIXTURE``, quick generators with well-defined answers;
- ``--env palaestra.envs.reasoning_gym.environment:NAME``: the one generator NAME
  (e.g. ``:gsm_symbolic``), through this module's ``__getattr__``;
- your own mixture: a subclass setting ``datasets`` (and ``dataset_configs``) in a small file,
  ``--env ./my_mix.py``; or ``ReasoningGym.mixture({...})`` from Python.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from palaestra import Environment, FailureKind, JsonDict, Session, Verdict, output_text
from palaestra.answers import strip_reasoning
from palaestra.envs.reasoning_gym import scoring

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
    datasets: ClassVar[dict[str, float]] = DEFAULT_MIXTURE
    """Generator name -> weight, for ``generate_tasks``."""
    dataset_configs: ClassVar[dict[str, dict[str, Any]]] = {}
    """Generator name -> reasoning-gym config fields (e.g. ``{"chain_sum": {"max_terms": 6}}``)."""
    score_timeout: ClassVar[float] = 30.0
    """Seconds one scoring may take in the worker pool before the rollout fails as a timeout."""

    @classmethod
    def mixture(
        cls,
        datasets: str | Mapping[str, float],
        configs: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> type[ReasoningGym]:
        """A subclass drawing from one generator (a name) or a weighted mixture."""
        weights = {datasets: 1.0} if isinstance(datasets, str) else dict(datasets)
        scoring.check_mixture(weights)
        label = next(iter(weights)) if len(weights) == 1 else "mixture"
        attributes = {
            "name": f"reasoning_gym_{label}",
            "description": f"reasoning-gym: {', '.join(sorted(weights))}",
            "datasets": weights,
            "dataset_configs": {k: dict(v) for k, v in (configs or {}).items()},
            "__module__": __name__,
        }
        return type(f"ReasoningGym_{label}", (cls,), attributes)

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


def __getattr__(name: str) -> type[ReasoningGym]:
    """``module:gsm_symbolic`` -> an environment of that one reasoning-gym generator."""
    if name.startswith("_") or name not in scoring.dataset_names():
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return ReasoningGym.mixture(name)
