"""code_gen: the verifier on right, wrong, malformed and hostile answers, in a real sandbox."""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from palaestra import LocalEnvironmentClient, SingleTurnAgent
from palaestra.collection.tasks import read_tasks, task_problem
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.code_gen import runner
from palaestra.envs.code_gen.data import generate, humaneval_problems, humaneval_task
from palaestra.envs.code_gen.environment import CodeGen
from palaestra.envs.code_gen.extract import extract_code
from palaestra.envs.code_gen.runner import same_output, same_value
from palaestra.errors import ConfigError
from palaestra.sandbox import SandboxResult, isolation
from palaestra.sandbox.workdir import PREFIX
from palaestra.types import FailureKind, JsonDict
from tests.sandbox.conftest import RecordedUidPool, leftovers, new_leftovers
from tests.support.fake_model import FakeModel, say

RUNNING_MAX = (
    "def running_max(numbers):\n"
    "    best, out = None, []\n"
    "    for n in numbers:\n"
    "        best = n if best is None else max(best, n)\n"
    "        out.append(best)\n"
    "    return out\n"
)
REFERENCES = {  # our own solutions of the five example tasks, as a model would answer
    "palaestra/running_max": f"Here it is:\n```python\n{RUNNING_MAX}```",
    "palaestra/is_balanced": (
        "```python\ndef is_balanced(text: str) -> bool:\n    pairs = {')': '(', ']': '[', '}': '{'}"
        "\n    stack = []\n    for c in text:\n        if c in '([{':\n            stack.append(c)"
        "\n        elif c in pairs:\n            if not stack or stack.pop() != pairs[c]:"
        "\n                return False\n    return not stack\n```"
    ),
    "palaestra/roman_to_int": (
        "```py\ndef roman_to_int(numeral):\n"
        "    v = dict(I=1, V=5, X=10, L=50, C=100, D=500, M=1000)\n    total = 0\n"
        "    for a, b in zip(numeral, numeral[1:] + ' '):\n"
        "        total += -v[a] if b != ' ' and v[b] > v[a] else v[a]\n    return total\n```"
    ),
    "palaestra/sum_and_max": (
        "```python\nn = int(input())\nxs = list(map(int, input().split()))\nprint(sum(xs))\n"
        "print(max(xs))\n```"
    ),
    "palaestra/word_counts": (
        "```python\nimport re, sys\nfrom collections import Counter\n"
        "words = re.findall('[a-z]+', sys.stdin.read().lower())\ncounts = Counter(words)\n"
        "for w in sorted(counts, key=lambda w: -counts[w]):\n    print(w, counts[w])\n```"
    ),
}


@pytest.fixture(autouse=True)
def _no_leaks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(isolation, "UidPool", RecordedUidPool)
    before = set(leftovers())
    yield
    assert new_leftovers(before) == [], "the test left processes behind"
    assert list(Path(tempfile.gettempdir()).glob(f"{PREFIX}{os.getpid()}-*")) == []


@pytest.fixture
async def env() -> AsyncIterator[LocalEnvironmentClient]:
    client = LocalEnvironmentClient(CodeGen())
    yield client
    await client.aclose()


def examples() -> dict[str, JsonDict]:
    entry = find_environment("code_gen")
    assert entry.example_tasks is not None
    return {line.row["task_id"]: line.row for line in read_tasks(entry.example_tasks)}


async def score(env: LocalEnvironmentClient, task: JsonDict, answer: str) -> dict[str, Any]:
    result = await SingleTurnAgent().run(task, env, FakeModel(lambda _: say(answer)))
    assert result.failure is None and result.verdict is not None
    if result.verdict.failure is not None:
        return {"failure": result.verdict.failure.kind, "reason": result.verdict.failure.reason}
    return {"reward": result.verdict.reward, **result.verdict.metrics}


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("```python\nx = 1\n```", "x = 1\n"),
        ("Sure.\n```\ny = 2\n```\nDone.", "y = 2\n"),
        (
            "```python\ndef f():\n  return 1\n```\nUse:\n```python\nprint(f())\n```",
            "def f():\n  return 1\n",
        ),
        ("<think>```python\nbad\n```</think>```Python\nz = 3\n```", "z = 3\n"),
        ("```bash\nrm -rf /\n```\n```python\nok = 1\n```", "ok = 1\n"),
        ("```python\ndef f():\n    return 1", "def f():\n    return 1\n"),  # cut off
        ("def f(): return 1", "def f(): return 1"),
        ("  \n", None),
    ],
)
def test_extract_code(text: str, code: str | None) -> None:
    assert extract_code(text, "f") == code  # the last block, or the last one defining f


def test_code_fenced_sloppily_is_still_found() -> None:
    code = "def f():\n    return 1\n"
    assert extract_code("Here it is: ```python\n" + code + "```", "f") == code
    assert extract_code("```python\ndef f():\n    return 1```\nDone.", "f") == code
    assert extract_code("</think>\n```python\n" + code + "```", "f") == code


def test_values_and_outputs_are_compared_strictly_but_not_pedantically() -> None:
    assert same_value([1, 2.0000000000001], [1, 2])
    assert same_value({"a": [True]}, {"a": [True]})
    assert not same_value(1, True) and not same_value([1], [1, 2]) and not same_value("1", 1)
    assert same_output("6  \n3\n\n", "6\n3") and same_output("a\r\nb\r\n", "a\nb\n")
    assert not same_output("6\n 3\n", "6\n3\n") and not same_output("", "0\n")


async def test_every_example_accepts_its_reference_and_rejects_a_wrong_answer(
    env: LocalEnvironmentClient,
) -> None:
    tasks = examples()
    assert sorted(tasks) == sorted(REFERENCES)
    for task_id, task in tasks.items():
        assert task_problem(task) is None
        right = await score(env, task, REFERENCES[task_id])
        assert right["reward"] == 1.0, (task_id, right)
        assert right["tests_passed"] == right["tests_total"] > 0 and right["limit_hit"] == ""
    half = await score(env, tasks["palaestra/running_max"], "def running_max(xs):\n    return xs\n")
    assert half["reward"] == 0.0 and 0 < half["tests_passed"] < half["tests_total"]
    assert half["error"].startswith("AssertionError")
    roman = await score(env, tasks["palaestra/roman_to_int"], "def roman_to_int(n):\n  return 3")
    assert (roman["reward"], roman["tests_passed"], roman["error"]) == (0.0, 1, "wrong value")
    program = await score(env, tasks["palaestra/sum_and_max"], "print(6)\nprint(3)")
    assert (program["reward"], program["tests_passed"], program["test_kind"]) == (0.0, 1, "io")
    garbled = await score(env, tasks["palaestra/sum_and_max"], "print('\ud800')")
    assert (garbled["reward"], garbled["tests_passed"]) == (0.0, 0)
    assert "SyntaxError" in garbled["error"]


async def test_humaneval_problems_pass_with_their_solutions_in_either_form(
    env: LocalEnvironmentClient,
) -> None:
    problems = {p["task_id"]: p for p in humaneval_problems()}
    assert len(problems) == 164
    sample = [*(row["task_id"] for row in generate(4, seed=3)), "HumanEval/32", "HumanEval/33"]
    for task_id in sample:  # 32's tests use a helper of the prompt; 33's call the entry point
        problem = problems[task_id]
        task = humaneval_task(problem)
        whole = f"```python\n{problem['prompt']}{problem['canonical_solution']}```"
        assert (await score(env, task, whole))["reward"] == 1.0, task_id
        body_only = await score(env, task, problem["canonical_solution"])  # completion style
        assert body_only["reward"] == 1.0, task_id
        stub = await score(env, task, f"{problem['prompt']}    return None\n")
        assert stub["reward"] == 0.0 and stub["tests_passed"] < stub["tests_total"]


def test_generate_tasks_draws_distinct_problems_deterministically() -> None:
    rows = list(CodeGen().generate_tasks(164, seed=7))
    assert len({r["task_id"] for r in rows}) == 164
    assert [r["task_id"] for r in CodeGen().generate_tasks(5, seed=7)] == [
        r["task_id"] for r in rows[:5]
    ]
    assert rows[:5] != list(CodeGen().generate_tasks(5, seed=8))
    assert all(task_problem(r) is None for r in rows)
    with pytest.raises(ConfigError, match="164 problems"):
        CodeGen().generate_tasks(165, seed=0)


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ("", "no code in the answer"),
        ("I am not sure how to do this.", "SyntaxError"),
        ("```python\ndef other(xs):\n    return xs\n```", "defines no function 'running_max'"),
        ("```python\nimport numpy\n```", "ModuleNotFoundError"),
        ("```python\nimport sys\nsys.exit(0)\n```", "SystemExit"),
        ("```python\nrunning_max = 5\n```", "defines no function"),
        ("```python\ns = '\ud800'\n```", "surrogates not allowed"),
    ],
)
async def test_malformed_answers_score_zero_and_say_why(
    env: LocalEnvironmentClient, answer: str, error: str
) -> None:
    result = await score(env, examples()["palaestra/running_max"], answer)
    assert result["reward"] == 0.0 and result["tests_passed"] == 0
    assert error in result["error"]


HOSTILE = {
    "endless_loop": (
        "def running_max(xs):\n    while True:\n        pass\n",
        ("cpu_time", "wall_time"),
    ),
    "sleeping": ("import time\ndef running_max(xs):\n    time.sleep(60)\n", ("wall_time",)),
    "network": (
        "import socket\ndef running_max(xs):\n"
        "    socket.create_connection(('1.1.1.1', 80), timeout=2)\n",
        ("network",),
    ),
    "file_system": (
        "def running_max(xs):\n    open('/usr/lib/palaestra-owned', 'w').write('x')\n",
        ("filesystem",),
    ),
    "memory": ("def running_max(xs):\n    return bytearray(8 * 1024**3)\n", ("memory",)),
    "equal_to_everything": (
        "class Yes(list):\n    def __eq__(self, other):\n        return True\n"
        "def running_max(xs):\n    return Yes()\n",
        ("",),
    ),
    "patched_builtins": (
        "import builtins\nclass Yes(list):\n    def __eq__(self, other):\n        return True\n"
        "builtins.type = lambda value: list\ndef running_max(xs):\n    return Yes()\n",
        ("",),
    ),
    "patched_harness": (
        "import __main__\n__main__.plain = lambda value, **options: value\n"
        "class Yes(list):\n    def __eq__(self, other):\n        return True\n"
        "def running_max(xs):\n    return Yes()\n",
        ("",),
    ),
    "forged_results": (
        "import os\nfor t in range(9):\n"
        '    line = \'{"n": "0", "t": %d, "ok": true}\\n\' % t\n'
        "    print(line)\n    for fd in range(3, 20):\n"
        "        try:\n            os.write(fd, line.encode())\n        except OSError:\n"
        "            pass\nos._exit(0)\n",
        ("",),
    ),
    "fork_bomb": ("import os\ndef running_max(xs):\n    while True:\n        os.fork()\n", None),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
async def test_hostile_code_is_contained_and_scored_as_failed_tests(
    env: LocalEnvironmentClient, name: str
) -> None:
    code, limits = HOSTILE[name]
    if name == "fork_bomb" and os.geteuid() != 0:
        pytest.skip("RLIMIT_NPROC needs a uid of its own (root)")
    task = {**examples()["palaestra/running_max"], "time_limit": 1}
    result = await score(env, task, f"```python\n{code}```")
    assert result["reward"] == 0.0 and result["tests_passed"] == 0, result
    if limits is not None:
        assert result["limit_hit"] in limits, result
    assert not Path("/usr/lib/palaestra-owned").exists()


async def test_an_endless_program_stops_the_io_cases_after_its_first_limit(
    env: LocalEnvironmentClient,
) -> None:
    task = {**examples()["palaestra/sum_and_max"], "time_limit": 1}
    result = await score(env, task, "```python\nwhile True:\n    pass\n```")
    assert (result["reward"], result["tests_passed"]) == (0.0, 0)
    assert result["limit_hit"] in ("cpu_time", "wall_time")


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"tests": []}, "needs 'check_code' or a non-empty list"),
        ({"check_code": "def check(:\n"}, "'check_code'"),
        ({"check_code": "assert True\n"}, "defines no function check"),
        ({"prefix_code": "raise ValueError('broken prompt')\n"}, "the task's own code failed"),
        ({"time_limit": 0}, "time_limit"),
    ],
)
async def test_a_broken_task_is_invalid_input_not_a_zero(
    env: LocalEnvironmentClient, change: JsonDict, reason: str
) -> None:
    task = {**examples()["palaestra/running_max"], **change}
    if "tests" in change:
        del task["check_code"]
    result = await score(env, task, REFERENCES["palaestra/running_max"])
    assert result["failure"] == FailureKind.INVALID_INPUT and reason in result["reason"]


class MissingPython(CodeGen):
    python = "/nonexistent/python3"


@pytest.mark.parametrize(
    ("broken", "reason"),
    [("bwrap", "bwrap is not installed"), ("python", "cannot run a trivial program")],
)
async def test_a_sandbox_that_cannot_run_is_a_recorded_failure_never_a_zero(
    monkeypatch: pytest.MonkeyPatch, broken: str, reason: str
) -> None:
    found = isolation.tools()
    if broken == "bwrap":
        monkeypatch.setattr(isolation, "tools", lambda: {**found, "bwrap": None})
    client = LocalEnvironmentClient(MissingPython() if broken == "python" else CodeGen())
    try:
        result = await score(client, examples()["palaestra/running_max"], RUNNING_MAX)
    finally:
        await client.aclose()
    assert result["failure"] == FailureKind.VERIFIER_ERROR and reason in result["reason"]


async def test_a_run_that_does_not_start_is_retried_once_then_a_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runner, "RETRY_DELAY", 0.0)
    environment = CodeGen()
    real_run = environment.sandbox.run
    failures = {"left": 1}

    async def run(command: Any, **kwargs: Any) -> SandboxResult:
        if "-c" in command and failures["left"] > 0:  # our harness, not the start-up check
            failures["left"] -= 1
            return await real_run(["/bin/sh", "-c", "echo 'bwrap: Can't fork' >&2; exit 1"])
        return await real_run(command, **kwargs)

    monkeypatch.setattr(environment.sandbox, "run", run)
    client = LocalEnvironmentClient(environment)
    try:
        task = examples()["palaestra/running_max"]
        assert (await score(client, task, RUNNING_MAX))["reward"] == 1.0  # the retry worked
        failures["left"] = 2
        broken = await score(client, task, RUNNING_MAX)
        assert broken["failure"] == FailureKind.VERIFIER_ERROR
        assert "did not start" in broken["reason"]
        failures["left"] = 2
        io = await score(client, examples()["palaestra/sum_and_max"], "print(1)")
        assert io["failure"] == FailureKind.VERIFIER_ERROR
    finally:
        await client.aclose()
