"""Token exactness of a run's rows: every sampled token trained once, at the place it was sampled.

Reads the rollouts (and, with ``--failures``, the failures sidecar) of any run whose calls
carry token ids (a model with ``return_tokens`` or ``token_mode``, e.g. behind the gateway:
``--agent mini_swe_agent --model local --model-option token_mode=true``) and, per row:

- sampled tokens: the generation ids of all its model calls added up;
- trained tokens: the mask-1 tokens of its ``training_sequences`` (one per leaf of its call
  tree), each checked equal to the id the call sampled at that position (and its log-prob to
  the one recorded), and every call trained in exactly one sequence;
- branches (leaves of the call tree), roots, the calls the gateway found no parent for
  (message level: no ``call_parent``), re-tokenised calls (``CallTree.retokenized``), and the
  gateway's calls that carry no token ids (a failed call).

The target is sampled == trained with no mismatch on every row. Prints one line per row and
a total; ``--markdown`` prints the total as a table row for ``benchmarks/results/``.

    python benchmarks/gateway_exactness.py runs/terminal.jsonl [--failures]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from palaestra.training.tokens import ContiguityError, model_calls
from palaestra.training.tree import call_tree, training_sequences
from palaestra.types import CALL_INDEX, CALL_PARENT
from palaestra.wire.jsonl import read_objects


@dataclass(slots=True)
class Count:
    rows: int = 0
    calls: int = 0
    untokened_calls: int = 0
    sampled: int = 0
    trained: int = 0
    mismatched: int = 0
    twice_or_never: int = 0
    branches: int = 0
    roots: int = 0
    gateway_roots: int = 0
    retokenized: int = 0

    def add(self, other: Count) -> None:
        for each in fields(self):
            setattr(self, each.name, getattr(self, each.name) + getattr(other, each.name))

    @property
    def exact(self) -> bool:
        return self.sampled == self.trained and not self.mismatched and not self.twice_or_never


def _differ(found: Sequence[float], expected: Sequence[float]) -> int:
    """How many positions of ``found`` are not ``expected``'s (a missing one counts)."""
    paired = zip(found, expected, strict=False)
    return abs(len(found) - len(expected)) + sum(a != b for a, b in paired)


def measure(row: dict[str, Any]) -> Count:
    """The counts of one row (see the module docstring). Raises ``ContiguityError`` for a row
    whose calls carry no token ids or malformed ones."""
    response = row["response"]
    calls = model_calls(response)
    tree = call_tree(response)
    sequences = training_sequences(response, row)
    count = Count(rows=1, calls=len(calls), branches=tree.branches, roots=len(tree.roots))
    count.retokenized = len(tree.retokenized)
    count.sampled = sum(len(call.generation_token_ids) for call in calls)
    gateway_calls = int((response.get("metadata") or {}).get("gateway_calls", len(calls)))
    count.untokened_calls = gateway_calls - len(calls)
    output = response["output"]
    count.gateway_roots = sum(
        1
        for call in calls
        if CALL_INDEX in output[call.item_index] and CALL_PARENT not in output[call.item_index]
    )
    trained_in: dict[int, int] = {}
    for sequence in sequences:
        count.trained += sum(sequence.loss_mask)
        expected = [0] * len(sequence.token_ids)
        for index in sequence.calls:
            trained_in[index] = trained_in.get(index, 0) + 1
            call = calls[index]
            start = len(call.prompt_token_ids)
            end = start + len(call.generation_token_ids)
            expected[start:end] = [1] * (end - start)
            count.mismatched += _differ(sequence.token_ids[start:end], call.generation_token_ids)
            count.mismatched += _differ(sequence.log_probs[start:end], call.generation_log_probs)
        # A mask-1 token no trained call sampled there (or a sampled one left at 0).
        count.mismatched += _differ(sequence.loss_mask, expected)
    count.twice_or_never = sum(1 for call in calls if trained_in.get(call.index) != 1)
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rollouts", type=Path, help="a run's rollouts JSONL")
    parser.add_argument(
        "--failures", action="store_true", help="also the <output>_failures.jsonl rows"
    )
    parser.add_argument("--markdown", action="store_true", help="print the total as a table row")
    args = parser.parse_args()
    paths = [args.rollouts]
    if args.failures:
        paths.append(args.rollouts.with_name(f"{args.rollouts.stem}_failures.jsonl"))
    total = Count()
    skipped = 0
    print("row  calls  sampled  trained  mismatched  branches  roots  gw-roots  retok  exact")
    for path in paths:
        if not path.exists():
            continue
        for line, row in read_objects(path):
            name = f"{path.name}:{line}"
            if not isinstance(row.get("response"), dict):
                print(f"{name}: no trajectory ({(row.get('failure') or {}).get('kind')})")
                skipped += 1
                continue
            try:
                count = measure(row)
            except ContiguityError as error:
                print(f"{name}: not trainable: {error}")
                skipped += 1
                continue
            total.add(count)
            print(
                f"{name}  {count.calls}  {count.sampled}  {count.trained}  {count.mismatched}  "
                f"{count.branches}  {count.roots}  {count.gateway_roots}  {count.retokenized}  "
                f"{count.exact}"
            )
    share = 100.0 * total.trained / total.sampled if total.sampled else 0.0
    print(
        f"total: {total.rows} rows ({skipped} without token ids), {total.calls} calls "
        f"(+{total.untokened_calls} without ids), {total.sampled} sampled, {total.trained} "
        f"trained ({share:.1f}%), {total.mismatched} mismatched, {total.twice_or_never} calls "
        f"trained twice or never, {total.branches} branches, {total.roots} roots "
        f"({total.gateway_roots} by the gateway), {total.retokenized} re-tokenised"
    )
    if args.markdown:
        print(
            f"| {total.rows} | {total.calls} | {total.sampled} | {total.trained} ({share:.1f}%) "
            f"| {total.mismatched} | {total.branches} | {total.gateway_roots} "
            f"| {total.retokenized} |"
        )
    return 0 if total.rows and total.exact else 1


if __name__ == "__main__":
    sys.exit(main())
