"""The program that runs an answer's function tests inside the sandbox (``python3 -c``).

Standard library only: it runs under the sandbox's interpreter, which cannot see palaestra.
It reads its request (one JSON object) from stdin and answers one JSON line per event on the
stdout it was started with; every line carries the request's random ``nonce``. Before the
answer runs, stdin is closed and the answer's own stdout and stderr go to ``/dev/null``, so
printing cannot forge a result line without knowing the nonce.

Request fields: ``nonce``, ``code`` (the answer), ``prefix`` (code run before the answer and
before the tests: a HumanEval prompt's imports and helpers), ``entry_point``, and either
``check`` (source defining ``check(candidate)``, HumanEval style) or ``calls`` (a list of
``{"args": [...], "kwargs": {...}}``; the host compares the returned values).

Events, in order: ``started``; ``task_error`` (the task's own code is broken: stop) or
``ready``; ``answer_error`` (the answer did not load: stop) or one ``test`` event per test
(``t``: index, ``ok`` or ``value``, ``e``: the error); ``aborted`` when the check stopped
early; ``done``. Lines from a process forked by the answer are never written.
"""

from __future__ import annotations

import ast
import builtins
import json
import os
import sys
import traceback
import types
from typing import IO, Any

# The harness's own functions look built-in names up in this copy, taken before the answer
# runs (a function keeps the builtins of its module as they were when it was defined): an
# answer that patches the builtins module (``builtins.type = ...``) does not reach them.
globals()["__builtins__"] = dict(vars(builtins))

RECORD = "__palaestra_record__"
PLAIN = (int, float, complex, str, bytes, bool, type(None))
MAX_VALUE_CHARS = 100_000


def test_statements(check: str) -> list[int]:
    """Indices of the statements of ``check``'s body that are tests (they assert something).

    ``assert True`` and other constant asserts are not tests. Raises ``ValueError`` when the
    source defines no ``check`` function (``SyntaxError`` when it does not parse).
    """
    function = _check_function(ast.parse(check))
    return [
        index
        for index, statement in enumerate(function.body)
        if any(
            isinstance(node, ast.Assert) and not isinstance(node.test, ast.Constant)
            for node in ast.walk(statement)
        )
    ]


def instrument(check: str) -> ast.Module:
    """``check`` with each test statement wrapped so its outcome is recorded by index."""
    tree = ast.parse(check)
    function = _check_function(tree)
    for number, index in enumerate(test_statements(check)):
        statement = function.body[index]
        record = ast.Name(RECORD, ast.Load())
        function.body[index] = ast.Try(
            body=[statement],
            handlers=[
                ast.ExceptHandler(
                    type=ast.Name("Exception", ast.Load()),
                    name="_palaestra_error",
                    body=[_call(record, number, ast.Name("_palaestra_error", ast.Load()))],
                )
            ],
            orelse=[_call(record, number, ast.Constant(None))],
            finalbody=[],
        )
    return ast.fix_missing_locations(tree)


def _call(function: ast.expr, number: int, error: ast.expr) -> ast.stmt:
    return ast.Expr(ast.Call(function, [ast.Constant(number), error], []))


def _check_function(tree: ast.Module) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            return node
    raise ValueError("the test code defines no function check(candidate)")


def describe(error: BaseException) -> str:
    """The last line of a traceback: ``Type: message``, bounded."""
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    lines = text.splitlines() or [type(error).__name__]
    return lines[-1][:300]


def plain(value: Any, *, sets: bool, depth: int = 0) -> Any:
    """``value`` if it is made of plain built-in values only (exact types), else TypeError.

    An answer returning an object whose ``__eq__`` always says yes must not pass a test.
    Tuples become lists unless ``sets`` (then the value is kept as it is).
    """
    kind = type(value)
    if depth > 50:
        raise TypeError("the returned value is nested too deeply")
    if kind in PLAIN:
        return value
    if kind in (list, tuple):
        items = [plain(item, sets=sets, depth=depth + 1) for item in value]
        return value if sets else items
    if kind is dict:
        pairs = {}
        for key, item in value.items():
            pairs[plain(key, sets=sets, depth=depth + 1)] = plain(item, sets=sets, depth=depth + 1)
        return value if sets else pairs
    if sets and kind in (set, frozenset):
        for item in value:
            plain(item, sets=sets, depth=depth + 1)
        return value
    raise TypeError(f"the answer returned a {kind.__name__}, not a plain built-in value")


class Channel:
    """The result lines: written only by the harness's own process, each with the nonce."""

    def __init__(self, stream: IO[str], nonce: str) -> None:
        self.stream = stream
        self.nonce = nonce
        self.pid = os.getpid()

    def emit(self, **event: Any) -> None:
        if os.getpid() != self.pid:  # a process the answer forked: it says nothing
            os._exit(1)
        self.stream.write(json.dumps({"n": self.nonce, **event}) + "\n")
        self.stream.flush()


def load_answer(prefix: str, code: str, entry_point: str, namespace: dict[str, Any]) -> None:
    """Run the answer in ``namespace``.

    An answer whose first line is indented continues ``prefix`` (the body of the prompt's
    function, HumanEval's completion style). Any other answer runs after ``prefix`` (so it may
    use the prompt's imports and helpers) with the prompt's stub of the entry point removed:
    only the answer can define it.
    """
    first = next((line for line in code.splitlines() if line.strip()), "")
    if prefix and first[:1] in (" ", "\t") and _parses(prefix + code):
        exec(compile(prefix + code, "<answer>", "exec"), namespace)
        return
    exec(compile(prefix, "<prompt>", "exec"), namespace)
    namespace.pop(entry_point, None)
    exec(compile(code, "<answer>", "exec"), namespace)


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def main() -> None:
    request = json.loads(sys.stdin.read())
    results = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    channel = Channel(results, str(request["nonce"]))
    channel.emit(started=True)
    prefix, entry = str(request.get("prefix") or ""), str(request["entry_point"])
    tests: dict[str, Any] = {"__name__": "tests", "__builtins__": dict(vars(builtins))}
    try:
        exec(compile(prefix, "<prompt>", "exec"), tests)
        if "check" in request:
            exec(compile(instrument(str(request["check"])), "<tests>", "exec"), tests)
    except BaseException as error:  # the task's own code is broken: not the answer's fault
        channel.emit(task_error=describe(error))
        os._exit(0)
    channel.emit(ready=True)
    sys.modules["__main__"] = types.ModuleType("__main__")  # the harness is not the answer's
    answer: dict[str, Any] = {"__name__": "solution"}
    try:
        load_answer(prefix, str(request["code"]), entry, answer)
        candidate = answer.get(entry)
        if not callable(candidate):
            raise NameError(f"the answer defines no function {entry!r}")
    except BaseException as error:
        channel.emit(answer_error=describe(error))
        os._exit(0)
    if "check" in request:
        counted = len(test_statements(str(request["check"])))
        run_check(channel, tests, candidate, entry, counted)
    else:
        run_calls(channel, candidate, request["calls"])
    channel.emit(done=True)
    os._exit(0)  # no atexit handler or thread of the answer's runs after this


def run_check(
    channel: Channel, tests: dict[str, Any], candidate: Any, entry_point: str, counted: int
) -> None:
    def guarded(*args: Any, **kwargs: Any) -> Any:
        return plain(candidate(*args, **kwargs), sets=True)

    def record(number: int, error: BaseException | None) -> None:
        channel.emit(t=number, ok=error is None, e=None if error is None else describe(error))

    tests[RECORD] = record
    tests[entry_point] = guarded  # as in HumanEval, where the tests see the answer's function
    try:
        tests["check"](guarded)
    except BaseException as error:  # a setup statement failed, or the answer exited
        if not counted:
            record(0, error)
        channel.emit(aborted=describe(error))
    else:
        if not counted:  # a check without asserts is one test: did it run through?
            record(0, None)


def run_calls(channel: Channel, candidate: Any, calls: list[dict[str, Any]]) -> None:
    for number, call in enumerate(calls):
        try:
            value = plain(candidate(*call.get("args", []), **call.get("kwargs", {})), sets=False)
            text = json.dumps(value)
            if len(text) > MAX_VALUE_CHARS:
                raise ValueError(f"the returned value is too large ({len(text)} characters)")
        except BaseException as error:
            channel.emit(t=number, e=describe(error))
            continue
        channel.emit(t=number, value=json.loads(text))


if __name__ == "__main__":
    main()
