"""A small local benchmark for NeMo Evaluator 0.3 (its built-in ones download data).

``nel serve -b tests/interop/peer_scripts/nel_sums_benchmark.py`` serves it; ``nel eval run``
loads it the same way. Four sums; the scorer reads the last integer of the answer.
"""

import re

from nemo_evaluator.environments.custom import benchmark, scorer


def _rows() -> list[dict]:
    return [{"a": a, "b": b, "answer": str(a + b)} for a, b in ((2, 2), (3, 4), (10, 5), (7, 8))]


@benchmark(
    name="palaestra-sums",
    dataset=_rows,
    prompt="What is {a} + {b}? Answer with the number.",
    target_field="answer",
    system_prompt="You add numbers.",
)
@scorer
def sums_scorer(sample):
    found = re.findall(r"-?\d+", sample.response)
    extracted = found[-1] if found else ""
    return {"correct": extracted == sample.target.strip(), "extracted": extracted}
