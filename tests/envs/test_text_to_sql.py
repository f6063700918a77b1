from __future__ import annotations

import asyncio
import time
from pathlib import Path

import orjson
import pytest

from palaestra import LocalEnvironmentClient, ToolCallingAgent
from palaestra.collection.generated import write_generated_tasks
from palaestra.collection.tasks import read_tasks
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.text_to_sql.database import SCHEMA, database_image
from palaestra.envs.text_to_sql.environment import TextToSql
from palaestra.envs.text_to_sql.query import QueryError, ReadOnlyDatabase
from palaestra.envs.text_to_sql.questions import TEMPLATES
from palaestra.errors import ToolCallRejected
from palaestra.types import FailureKind, JsonDict, Verdict
from tests.support.fake_model import FakeModel, call, outputs_so_far, response, say


def example_tasks() -> list[JsonDict]:
    entry = find_environment("text_to_sql")
    assert entry.example_tasks is not None
    lines = list(read_tasks(entry.example_tasks))
    assert all(line.error is None for line in lines)
    return [line.row for line in lines]


def querying(*queries: str) -> FakeModel:
    """Runs the queries one per turn, then answers in text."""

    def script(params: JsonDict) -> JsonDict:
        done = len(outputs_so_far(params))
        if done < len(queries):
            arguments = orjson.dumps({"sql": queries[done]}).decode()
            return response(call("run_query", arguments, f"q{done}"))
        return say("That is the answer.")

    return FakeModel(script)


async def score(task: JsonDict, *queries: str) -> Verdict:
    env = LocalEnvironmentClient(TextToSql())
    result = await ToolCallingAgent(max_steps=len(queries) + 1).run(task, env, querying(*queries))
    assert result.failure is None and result.verdict is not None
    assert len(env.sessions) == 0  # closed
    return result.verdict


def task_for(template: str) -> JsonDict:
    return next(t for t in example_tasks() if t["template"] == template)


async def test_every_example_task_scores_one_with_its_gold_query() -> None:
    tasks = example_tasks()
    assert len(tasks) == 5
    for task in tasks:
        verdict = await score(task, task["gold_sql"])
        assert verdict.reward == 1.0, task["question"]
        assert verdict.metrics["mismatch"] == ""


async def test_equivalent_queries_score_one() -> None:
    count = task_for("products_per_category")
    swapped = "SELECT COUNT(*) AS n, category FROM products GROUP BY 2 ORDER BY n"
    assert (await score(count, swapped)).reward == 1.0  # columns and rows in another order
    top = task_for("most_expensive")
    k = int(top["gold_sql"].rsplit(" ", 1)[1])
    rounded = f"SELECT ROUND(price, 1) * 1.0 + 0, name FROM products ORDER BY price DESC LIMIT {k}"
    assert (await score(top, rounded)).reward == 0.0  # prices rounded away from the cent
    same = f"SELECT price, name FROM products ORDER BY price DESC LIMIT {k}"
    assert (await score(top, same)).reward == 1.0
    never = task_for("never_ordered")
    anti = (
        "SELECT c.name FROM customers c LEFT JOIN orders o ON o.customer_id = c.id "
        "WHERE o.id IS NULL"
    )
    assert (await score(never, anti)).reward == 1.0


async def test_wrong_answers_score_zero() -> None:
    top = task_for("most_expensive")
    k = int(top["gold_sql"].rsplit(" ", 1)[1])
    ascending = f"SELECT name, price FROM products ORDER BY price ASC LIMIT {k}"
    assert (await score(top, ascending)).reward == 0.0
    reversed_order = (
        f"SELECT * FROM (SELECT name, price FROM products ORDER BY price DESC LIMIT {k}) "
        "ORDER BY price"
    )
    assert (await score(top, reversed_order)).reward == 0.0  # ORDER BY in gold: order counts
    count = task_for("products_per_category")
    extra = "SELECT category, COUNT(*), 1 FROM products GROUP BY category"
    assert (await score(count, extra)).reward == 0.0  # an extra column
    assert (await score(count, "SELECT category FROM products GROUP BY category")).reward == 0.0
    # the right query first, a different one last: the last one is the answer
    verdict = await score(count, count["gold_sql"], "SELECT 1")
    assert verdict.reward == 0.0 and verdict.metrics["queries"] == 2


async def test_malformed_and_failing_queries_score_zero_and_are_told_to_the_model() -> None:
    task = task_for("customers_in_city")
    verdict = await score(task, "SELEC COUNT(*) FROM customers")
    assert verdict.reward == 0.0 and verdict.metrics["mismatch"] == "no successful query"
    assert verdict.metrics["failed_queries"] == 1
    # a failing query after a right one leaves the right one as the answer
    assert (await score(task, task["gold_sql"], "SELECT nope FROM nowhere")).reward == 1.0
    silent = await ToolCallingAgent().run(
        task, LocalEnvironmentClient(TextToSql()), FakeModel(lambda p: say("3"))
    )
    assert silent.verdict is not None and silent.verdict.reward == 0.0


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("DELETE FROM customers", "only read-only"),
        ("UPDATE products SET price = 0", "only read-only"),
        ("DROP TABLE orders", "only read-only"),
        ("CREATE TEMP TABLE t AS SELECT 1", "only read-only"),
        ("ATTACH DATABASE '/tmp/palaestra_sql_attack.db' AS x", "only read-only"),
        ("PRAGMA query_only = OFF", "only read-only"),
        ("VACUUM INTO '/tmp/palaestra_sql_attack.db'", "only read-only"),
        ("SELECT load_extension('/tmp/x')", "only read-only"),
        ("SELECT 1; DELETE FROM customers", "one statement"),
        ("SELECT randomblob(1000000000)", "too big"),
        ("SELECT " + "1+" * 20_000 + "1", "too large"),
        ("SELECT '\x00'", "null character"),
        ("", "empty"),
    ],
)
async def test_hostile_queries_are_refused_and_change_nothing(sql: str, message: str) -> None:
    env = LocalEnvironmentClient(TextToSql())
    task = task_for("customers_in_city")
    session = await env.seed(task)
    with pytest.raises(ToolCallRejected, match=message):
        await env.call_tool(session, "run_query", {"sql": sql})
    output = await env.call_tool(session, "run_query", {"sql": "SELECT COUNT(*) FROM orders"})
    assert orjson.loads(output)["rows"] == [[200]]
    await env.close(session)
    assert not Path("/tmp/palaestra_sql_attack.db").exists()


async def test_a_runaway_query_is_stopped_without_blocking_the_loop() -> None:
    class Quick(TextToSql):
        query_timeout = 0.3

    env = LocalEnvironmentClient(Quick())
    session = await env.seed(task_for("customers_in_city"))
    endless = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT max(x) FROM r"
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.02)
            ticks += 1

    ticker = asyncio.create_task(tick())
    started = time.perf_counter()
    with pytest.raises(ToolCallRejected, match=r"longer than 0\.3s"):
        await env.call_tool(session, "run_query", {"sql": endless})
    ticker.cancel()
    assert time.perf_counter() - started < 3
    assert ticks >= 5  # the event loop kept running while the query ran
    await env.close(session)


async def test_tools_describe_the_schema_and_cap_rows() -> None:
    env = LocalEnvironmentClient(TextToSql())
    session = await env.seed(task_for("customers_in_city"))
    assert orjson.loads(await env.call_tool(session, "list_tables", {})) == list(SCHEMA)
    described = orjson.loads(await env.call_tool(session, "describe_table", {"table": "Orders"}))
    assert described["row_count"] == 200 and len(described["example_rows"]) == 3
    assert [c["name"] for c in described["columns"]] == [
        "id",
        "customer_id",
        "order_date",
        "status",
    ]
    with pytest.raises(ToolCallRejected, match="no table named 'orders; drop table x'"):
        await env.call_tool(session, "describe_table", {"table": "orders; drop table x"})
    many = orjson.loads(
        await env.call_tool(session, "run_query", {"sql": "SELECT * FROM order_items"})
    )
    assert (
        len(many["rows"]) == 50 and many["row_count"] > 50 and "only the first 50" in many["note"]
    )
    await env.close(session)


async def test_sessions_have_private_databases_and_close_them() -> None:
    env = LocalEnvironmentClient(TextToSql())
    task = task_for("customers_in_city")
    first, second = await env.seed(task), await env.seed(task)
    db_first = env.sessions.get(first).state.db
    assert db_first is not env.sessions.get(second).state.db
    await env.close(first)
    with pytest.raises(QueryError, match="closed"):
        db_first.query("SELECT 1", max_rows=1)
    await env.call_tool(second, "run_query", {"sql": "SELECT 1"})  # the other is untouched
    await env.close(second)


async def test_a_task_with_a_broken_gold_query_is_a_failure_not_zero() -> None:
    task = {**task_for("customers_in_city"), "gold_sql": "SELECT nothing FROM nowhere"}
    env = LocalEnvironmentClient(TextToSql())
    result = await ToolCallingAgent().run(task, env, querying("SELECT 1"))
    assert result.verdict is not None and result.verdict.failure is not None
    assert result.verdict.failure.kind == FailureKind.INVALID_INPUT


def test_generated_tasks_are_seeded_and_every_gold_query_has_an_answer(tmp_path: Path) -> None:
    env = TextToSql()
    written = write_generated_tasks(env, count=60, seed=1, path=tmp_path / "t.jsonl")
    assert len(written.read_bytes().splitlines()) == 60
    tasks = list(env.generate_tasks(len(TEMPLATES) * 2, seed=11))
    assert tasks == list(env.generate_tasks(len(TEMPLATES) * 2, seed=11))
    assert tasks != list(env.generate_tasks(len(TEMPLATES) * 2, seed=12))
    assert {t["template"] for t in tasks} == set(TEMPLATES)
    for task in tasks:
        db = ReadOnlyDatabase(database_image(task["database_seed"]))
        rows = db.query(task["gold_sql"], max_rows=1000).rows
        db.close()
        assert rows and rows[0][0] not in (0, None), task["question"]
    assert database_image(5) == database_image(5)
