"""Making and scoring reasoning-gym tasks. ``score`` runs in the worker pool.

reasoning-gym is imported inside the functions: ``import palaestra`` stays light, and only
worker processes that score (and the process that generates tasks) pay for it.
"""

from __future__ import annotations

import functools
import importlib
import json
import random
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

from palaestra import ConfigError, JsonDict, last_boxed, last_tagged, task_row

SYSTEM_PROMPT = (
    "Solve the problem. Think step by step, then give your final answer between <answer> and "
    "</answer> tags, with nothing else inside them. If the question shows the format of the "
    "answer, follow it exactly."
)
TASK_FIELDS = (
    "dataset",
    "question",
    "answer",
    "metadata",
    "dataset_config",
    "dataset_seed",
    "dataset_size",
    "index",
)
_REGENERATION_FIELDS = ("dataset_seed", "dataset_size", "index")
_RUN_FIELDS = ("seed", "size")
"""A generator's config fields the run sets (``--seed``, the number of tasks)."""


def _package() -> ModuleType:
    """reasoning-gym, with its generator registry loaded.

    One of its dependencies (cellpylib) holds code Python warns about when it first compiles it
    (``SyntaxWarning``, printed on the user's terminal on a first run): nothing the user can act
    on, so those warnings are silenced for this import only.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        importlib.import_module("reasoning_gym.factory")
        return importlib.import_module("reasoning_gym")


def _datasets() -> dict[str, Any]:
    datasets: dict[str, Any] = _package().factory.DATASETS
    return datasets


def dataset_names() -> list[str]:
    """Every generator reasoning-gym registers (``composite`` aside: use a mixture instead)."""
    return sorted(name for name in _datasets() if name != "composite")


def check_mixture(weights: Mapping[str, float]) -> None:
    known = set(dataset_names())
    unknown = sorted(set(weights) - known)
    if unknown:
        raise ConfigError(f"unknown reasoning-gym datasets {unknown}; known: {sorted(known)}")
    if not weights or any(not (w > 0) for w in weights.values()):
        raise ConfigError("a reasoning-gym mixture needs datasets with positive weights")


def check_configs(configs: Mapping[str, Any]) -> None:
    """``ConfigError`` (one line) unless every entry of ``configs`` names a generator and
    gives it an object of fields its config takes, with values it accepts (reasoning-gym's own
    check, as ``create_dataset`` would make it)."""
    known = dataset_names()
    what = "reasoning_gym: dataset_configs"
    for name, config in configs.items():
        if name not in known:
            raise ConfigError(f"{what}: {name!r} is not a reasoning-gym dataset; known: {known}")
        if not isinstance(config, Mapping):
            raise ConfigError(f"{what}: {name!r} takes an object of config fields, not {config!r}")
        config_cls = _datasets()[name][1]
        fields = [f for f in sorted(config_cls.__dataclass_fields__) if f not in _RUN_FIELDS]
        unknown = sorted(set(config) - set(fields))
        if unknown:
            raise ConfigError(
                f"{what}: {name!r} takes no field {unknown[0]!r} (seed and size are "
                f"the run's); its fields: {', '.join(fields)}"
            )
        try:
            made = config_cls(**config)
            if hasattr(made, "validate"):
                made.validate()
        except Exception as error:  # reasoning-gym's own refusal, whatever its type
            detail = " ".join(str(error).split()) or type(error).__name__
            raise ConfigError(f"{what}: {name!r} {dict(config)}: {detail}") from None


def dataset_seed(seed: int, name: str) -> int:
    """A per-dataset seed derived from the run's seed (stable across Python processes)."""
    return random.Random(f"{seed}:{name}").randrange(2**31)


def generate(
    weights: Mapping[str, float], configs: Mapping[str, Mapping[str, Any]], count: int, seed: int
) -> Iterator[JsonDict]:
    """``count`` task rows drawn from the weighted mixture; the same seed gives the same rows."""
    reasoning_gym = _package()
    check_mixture(weights)
    names = sorted(weights)
    picks = random.Random(seed).choices(names, [weights[n] for n in names], k=count)
    datasets: dict[str, Any] = {}
    used: Counter[str] = Counter()
    for name in picks:
        config = dict(configs.get(name, {}))
        if name not in datasets:
            datasets[name] = reasoning_gym.create_dataset(
                name, seed=dataset_seed(seed, name), size=count, **config
            )
        index = used[name]
        used[name] += 1
        entry = datasets[name][index]
        yield task_row(
            entry["question"],
            system=SYSTEM_PROMPT,
            dataset=name,
            question=entry["question"],
            answer=_jsonable(entry["answer"]),
            metadata=_jsonable(entry.get("metadata", {})),
            dataset_config=config,
            dataset_seed=dataset_seed(seed, name),
            dataset_size=count,
            index=index,
        )


def _jsonable(value: Any) -> Any:
    """``value`` as JSON data: tuples become lists, numpy scalars numbers, keys strings."""
    return json.loads(json.dumps(value, default=_fallback))


def _fallback(value: Any) -> Any:
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    return str(value)


def extract_answer(text: str) -> str | None:
    """The last ``<answer>...</answer>``; failing that, the last ``\\boxed{...}``."""
    tagged = last_tagged(text)
    return tagged if tagged is not None else last_boxed(text)


def score(task: JsonDict, answer: str) -> JsonDict:
    """reasoning-gym's own score of ``answer`` for ``task`` (run in a worker process).

    When the task says how it was generated (``dataset_seed``, ``dataset_size``, ``index``) the
    entry is made again, so the scorer sees exactly what the generator made (JSON loses tuples
    and non-string keys); if that no longer gives the same question (another reasoning-gym
    version), or the task says nothing of it, the stored ``answer``/``metadata`` are used.
    Returns ``{"score": float, "entry": "regenerated" | "stored"}``, or ``{"problem": ...}``
    when the task names an unknown dataset.
    """
    name = task["dataset"]
    if name not in dataset_names():
        return {"problem": f"unknown reasoning-gym dataset {name!r}"}
    config = json.dumps(task.get("dataset_config") or {}, sort_keys=True)
    if all(isinstance(task.get(f), int) for f in _REGENERATION_FIELDS):
        made = _dataset(name, config, task["dataset_seed"], task["dataset_size"])
        entry = made[task["index"]]
        if entry["question"] == task["question"]:
            return {"score": float(made.score_answer(answer, entry)), "entry": "regenerated"}
    stored = {
        "question": task["question"],
        "answer": task.get("answer"),
        "metadata": task.get("metadata") or {},
    }
    scorer = _dataset(name, config, 0, 1)
    return {"score": float(scorer.score_answer(answer, stored)), "entry": "stored"}


@functools.lru_cache(maxsize=64)
def _dataset(name: str, config: str, seed: int, size: int) -> Any:
    return _package().create_dataset(name, seed=seed, size=size, **json.loads(config))
