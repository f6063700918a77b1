"""calculator's reward on a final answer left in a file: the check a Harbor folder's tests run.

``palaestra tasks calculator --format harbor`` copies this file into each task's ``tests/`` as
``check.py``; ``test.sh`` runs ``python3 check.py ANSWER_FILE TASK_JSON`` in the task's machine,
which has Debian's python3 and nothing else, so this module uses the standard library only.
The rule is ``Calculator.verify``'s: 1 when the last number the answer writes ("10,063" is
10063) equals the task's ``expected_answer`` exactly, else 0; a missing answer file is 0 (the
agent never answered). tests/envs/calculator asserts the two agree.
"""

from __future__ import annotations

import json
import re
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

_NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?")


def reward(answer: str | None, task: dict[str, Any]) -> float:
    """1.0 when ``answer``'s last number is ``task["expected_answer"]``, else 0.0."""
    if answer is None:
        return 0.0
    found = _NUMBER.findall(answer)
    given = Fraction(found[-1].replace(",", "")) if found else None
    return 1.0 if given == Fraction(str(task["expected_answer"])) else 0.0


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: check.py ANSWER_FILE TASK_JSON", file=sys.stderr)
        return 2
    answer_path, task_path = Path(argv[0]), Path(argv[1])
    answer = answer_path.read_text(encoding="utf-8") if answer_path.is_file() else None
    task = json.loads(task_path.read_text(encoding="utf-8"))
    print(reward(answer, task))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
