"""The reviewer's checks that need no model: tool schemas and docs, tasks, golden answers."""

from __future__ import annotations

from pathlib import Path

import orjson

from palaestra import Environment, JsonDict, Session, Verdict, output_text, tool
from palaestra.authoring import EnvironmentReport, Status, check_environment

QUESTION = {"responses_create_params": {"input": "Say yes."}}


def tasks_file(path: Path, *rows: JsonDict | str) -> Path:
    lines = [row if isinstance(row, str) else orjson.dumps(row).decode() for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def check(env: type[Environment], tasks: Path) -> EnvironmentReport:
    return check_environment(env, tasks=tasks, smoke=None)


class Tidy(Environment):
    """Counts yeses: a tool and a verifier that reads state and text."""

    def seed(self, task: JsonDict) -> JsonDict:
        return {"marks": 0}

    @tool
    def mark(self, session: Session, times: int = 1) -> int:
        """Make a mark.

        Args:
            times: How many marks to make.
        """
        session.state["marks"] += times
        return int(session.state["marks"])

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        said_yes = output_text(response).strip().lower() == "yes"
        enough = session.state["marks"] >= session.task.get("marks", 0)
        return Verdict(reward=float(said_yes and enough))


class Undocumented(Environment):
    @tool
    def mark(self, times: int) -> int:
        return times

    @tool
    def stamp(self, colour: str) -> str:
        """Stamp the page."""
        return colour

    def verify(self, session: Session, response: JsonDict) -> float:
        return 0.0


class TwoNamedAlike(Environment):
    """Two methods claim one tool name."""

    @tool(name="mark")
    def mark_once(self) -> int:
        """Mark once."""
        return 1

    @tool(name="mark")
    def mark_twice(self) -> int:
        """Mark twice."""
        return 2

    def verify(self, session: Session, response: JsonDict) -> float:
        return 0.0


class Generous(Tidy):
    """Rewards everything: a verifier that cannot tell wrong from right."""

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        return Verdict(reward=1.0)


class Crashing(Tidy):
    """A verifier that raises on text it did not expect."""

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        if output_text(response) != "yes":
            raise ValueError("unexpected answer")
        return Verdict(reward=1.0)


def test_a_documented_environment_passes_the_static_checks(tmp_path: Path) -> None:
    tasks = tasks_file(tmp_path / "t.jsonl", {**QUESTION, "golden_response": "yes"})
    report = check(Tidy, tasks)
    assert report.ok
    assert report.check("tool schemas").reason == (
        "1 tool, valid JSON Schema objects, names unique"
    )
    assert report.check("tool docs").status is Status.PASS


def test_a_tool_or_parameter_without_a_description_fails_the_docs_check(tmp_path: Path) -> None:
    report = check(Undocumented, tasks_file(tmp_path / "t.jsonl", QUESTION))
    docs = report.check("tool docs")
    assert docs.status is Status.FAIL
    assert docs.details["problems"] == [
        "class Undocumented has no docstring (its one-line description)",
        "tool mark has no docstring (the model reads it)",
        "tool mark: parameter 'times' is not described (add it under Args: in the docstring)",
        "tool stamp: parameter 'colour' is not described (add it under Args: in the docstring)",
    ]
    assert not report.ok


def test_two_methods_claiming_one_tool_name_fail_the_schema_check(tmp_path: Path) -> None:
    report = check(TwoNamedAlike, tasks_file(tmp_path / "t.jsonl", QUESTION))
    schemas = report.check("tool schemas")
    assert schemas.status is Status.FAIL
    assert "tool name 'mark' is claimed by mark_once and mark_twice" in schemas.reason


def test_a_task_line_that_does_not_parse_fails_naming_its_line_and_field(tmp_path: Path) -> None:
    tasks = tasks_file(tmp_path / "t.jsonl", QUESTION, "{not json", {"responses_create_params": {}})
    parsed = check(Tidy, tasks).check("example tasks")
    assert parsed.status is Status.FAIL
    assert parsed.details["problems"][0].startswith(f"{tasks}:2: not valid JSON")
    assert parsed.details["problems"][1] == (
        f"{tasks}:3: field 'responses_create_params.input': missing"
    )


def test_a_task_naming_a_tool_the_environment_lacks_fails(tmp_path: Path) -> None:
    listed = {"type": "function", "name": "erase", "parameters": {"type": "object"}}
    chosen = {"type": "function", "name": "scribble"}
    task = {"responses_create_params": {"input": "x", "tools": [listed], "tool_choice": chosen}}
    tools = check(Tidy, tasks_file(tmp_path / "t.jsonl", QUESTION, task)).check("task tools")
    assert tools.status is Status.FAIL
    assert tools.reason == "task 1 names unknown tools: erase, scribble (the environment has: mark)"


def test_tasks_that_bring_their_own_tools_pass_when_the_environment_has_none(
    tmp_path: Path,
) -> None:
    class Scorer(Environment):
        """Scores the calls, never runs them."""

        def verify(self, session: Session, response: JsonDict) -> float:
            return 0.0

    listed = {"type": "function", "name": "erase", "parameters": {"type": "object"}}
    task = {"responses_create_params": {"input": "x", "tools": [listed]}}
    tools = check(Scorer, tasks_file(tmp_path / "t.jsonl", task)).check("task tools")
    assert (tools.status, tools.reason) == (
        Status.PASS,
        "the tasks bring their own tools (the environment has none)",
    )


def test_no_example_tasks_fails(tmp_path: Path) -> None:
    report = check_environment(Tidy, smoke=None)  # defined here: no tasks.jsonl beside it
    parsed = report.check("example tasks")
    assert parsed.status is Status.FAIL and "no example tasks" in parsed.reason
    assert report.check("smoke run").status is Status.SKIP


def test_golden_answers_run_their_tool_calls_before_verify(tmp_path: Path) -> None:
    calls: list[JsonDict] = [
        {"type": "function_call", "name": "mark", "arguments": {"times": 2}},
        {"type": "function_call", "name": "mark", "arguments": '{"times": 1}'},
        {"type": "message", "role": "assistant", "content": "yes"},
    ]
    task = {**QUESTION, "marks": 3, "golden_response": calls, "wrong_response": "yes"}
    golden = check(Tidy, tasks_file(tmp_path / "t.jsonl", task)).check("golden answers")
    # "yes" without the three marks is wrong: only the replayed calls make the golden one right
    assert (golden.status, golden.reason) == (
        Status.PASS,
        "verify gives 1 on 1 golden answer and 0 on wrong ones",
    )


def test_a_golden_answer_that_scores_0_fails(tmp_path: Path) -> None:
    task = {**QUESTION, "marks": 3, "golden_response": "yes"}  # the marks are missing
    golden = check(Tidy, tasks_file(tmp_path / "t.jsonl", task)).check("golden answers")
    assert golden.status is Status.FAIL
    assert golden.reason == "task 0: the golden answer scored 0, not 1"


def test_a_verifier_that_rewards_a_wrong_answer_fails(tmp_path: Path) -> None:
    task = {**QUESTION, "golden_response": "yes"}
    golden = check(Generous, tasks_file(tmp_path / "t.jsonl", task)).check("golden answers")
    assert golden.status is Status.FAIL
    assert golden.reason == "task 0: a wrong answer scored 1, not 0"


def test_a_verifier_that_raises_on_a_wrong_answer_fails_with_where(tmp_path: Path) -> None:
    task = {**QUESTION, "golden_response": "yes"}
    golden = check(Crashing, tasks_file(tmp_path / "t.jsonl", task)).check("golden answers")
    assert golden.status is Status.FAIL
    assert golden.reason.startswith("task 0: a wrong answer was not scored (")
    assert "ValueError: unexpected answer" in golden.reason
    assert "test_checks.py" in golden.reason  # the failure says where it came from


def test_a_golden_tool_call_the_environment_rejects_fails(tmp_path: Path) -> None:
    calls = [{"type": "function_call", "name": "mark", "arguments": {"times": "many"}}]
    task = {**QUESTION, "golden_response": calls}
    golden = check(Tidy, tasks_file(tmp_path / "t.jsonl", task)).check("golden answers")
    assert golden.status is Status.FAIL
    assert "invalid arguments for tool 'mark'" in golden.reason


def test_a_golden_answer_of_the_wrong_shape_fails_naming_the_field(tmp_path: Path) -> None:
    task = {**QUESTION, "golden_response": 42}
    golden = check(Tidy, tasks_file(tmp_path / "t.jsonl", task)).check("golden answers")
    assert golden.reason == (
        "task 0: golden_response: must be a string, a list of output items or a Response object"
    )


def test_without_golden_answers_the_check_is_skipped_not_passed(tmp_path: Path) -> None:
    report = check(Tidy, tasks_file(tmp_path / "t.jsonl", QUESTION))
    golden = report.check("golden answers")
    assert golden.status is Status.SKIP
    assert golden.reason.startswith("no golden answers")
    assert report.ok  # a skip does not fail the report


def test_a_golden_call_of_a_tool_the_task_brings_is_scored_not_run(tmp_path: Path) -> None:
    class CallScorer(Environment):
        """Rewards a call of erase, which it has no tool for: the task brings it."""

        def verify(self, session: Session, response: JsonDict) -> float:
            names = [i.get("name") for i in response["output"] if i["type"] == "function_call"]
            return float(names == ["erase"])

    listed = {"type": "function", "name": "erase", "parameters": {"type": "object"}}
    calls = [{"type": "function_call", "name": "erase", "arguments": {}}]
    task = {"responses_create_params": {"input": "x", "tools": [listed]}, "golden_response": calls}
    golden = check(CallScorer, tasks_file(tmp_path / "t.jsonl", task)).check("golden answers")
    assert golden.status is Status.PASS, golden.reason


def test_a_sample_checks_only_the_tasks_its_seed_draws(tmp_path: Path) -> None:
    # Task 0's golden answer scores 1; the other five need marks it does not make and fail:
    # whether the golden check passes says which task the seed drew.
    good = {**QUESTION, "golden_response": "yes", "wrong_response": "no"}
    rows = [good] + [{**QUESTION, "marks": 9, "golden_response": "yes"}] * 5
    path = tasks_file(tmp_path / "t.jsonl", *rows)
    assert check(Tidy, path).check("golden answers").status is Status.FAIL
    drawn = [check_environment(Tidy, tasks=path, smoke=None, sample=1, seed=s) for s in range(8)]
    for seed, report in enumerate(drawn):
        assert report.check("example tasks").reason.endswith(f"; 1 drawn with seed {seed}")
    statuses = [report.check("golden answers").status for report in drawn]
    assert set(statuses) == {Status.PASS, Status.FAIL}  # some seeds draw task 0, others not
    again = check_environment(Tidy, tasks=path, smoke=None, sample=1, seed=3)
    assert again.check("golden answers").status is statuses[3]  # the same seed, the same task
