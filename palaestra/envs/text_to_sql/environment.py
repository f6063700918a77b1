"""text_to_sql: answer questions over a seeded SQLite shop database with read-only SQL tools."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from palaestra import Environment, FailureKind, JsonDict, Session, ToolError, Verdict, tool
from palaestra.envs.text_to_sql.database import SCHEMA, database_image
from palaestra.envs.text_to_sql.query import (
    QueryError,
    QueryResult,
    ReadOnlyDatabase,
    is_ordered,
    same_result,
)
from palaestra.envs.text_to_sql.questions import generate


@dataclass(slots=True)
class SqlState:
    """One rollout: its private database and every query the model ran, in order."""

    db: ReadOnlyDatabase
    queries: list[JsonDict] = field(default_factory=list)


class TextToSql(Environment):
    """Text to SQL over a seeded SQLite database; reward when the last query's rows are right."""

    name = "text_to_sql"
    query_timeout: ClassVar[float] = 2.0
    """Seconds one query may run before it is stopped."""
    rows_shown: ClassVar[int] = 50
    """Rows of a result the model sees."""
    rows_compared: ClassVar[int] = 10_000
    """Results with more rows than this never match."""

    async def seed(self, task: JsonDict) -> SqlState:
        seed = task.get("database_seed")
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ValueError("the task's 'database_seed' must be an integer")
        image = await asyncio.to_thread(database_image, seed)
        return SqlState(ReadOnlyDatabase(image, timeout=self.query_timeout))

    def close(self, session: Session) -> None:
        if isinstance(session.state, SqlState):
            session.state.db.close()

    @tool
    def list_tables(self) -> list[str]:
        """List the tables of the database."""
        return list(SCHEMA)

    @tool(blocking=True)
    def describe_table(self, session: Session, table: str) -> JsonDict:
        """Describe a table: its columns, how many rows it has and a few example rows.

        Args:
            table: The table's name, as list_tables gives it.
        """
        columns = SCHEMA.get(table.strip().lower())
        if columns is None:
            raise ToolError(f"there is no table named {table[:80]!r}; tables: {', '.join(SCHEMA)}")
        db: ReadOnlyDatabase = session.state.db
        name = table.strip().lower()
        count = db.query(f"SELECT COUNT(*) FROM {name}", max_rows=1).rows[0][0]
        sample = db.query(f"SELECT * FROM {name} LIMIT 3", max_rows=3)
        return {
            "table": name,
            "columns": [
                {"name": column, "type": kind, **({"note": note} if note else {})}
                for column, kind, note in columns
            ],
            "row_count": count,
            "example_rows": [list(row) for row in sample.rows],
        }

    @tool(blocking=True)
    def run_query(self, session: Session, sql: str) -> JsonDict:
        """Run one read-only SQL query (SQLite dialect) and return its columns and rows.

        Args:
            sql: A single SELECT statement.
        """
        state: SqlState = session.state
        try:
            result = state.db.query(sql, max_rows=self.rows_compared)
        except QueryError as error:
            state.queries.append({"sql": sql[:500], "ok": False})
            raise ToolError(str(error)) from None
        state.queries.append({"sql": sql, "ok": True})
        answer: JsonDict = {
            "columns": result.columns,
            "rows": [[_shown(v) for v in row] for row in result.rows[: self.rows_shown]],
            "row_count": len(result.rows),
        }
        if len(result.rows) > self.rows_shown or result.truncated:
            more = "more than " if result.truncated else ""
            answer["note"] = (
                f"{more}{len(result.rows)} rows, only the first {self.rows_shown} shown"
            )
        return answer

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        gold = session.task.get("gold_sql")
        if not isinstance(gold, str):
            return Verdict.failed(FailureKind.INVALID_INPUT, "the task has no 'gold_sql' string")
        state: SqlState = session.state
        final = next((q["sql"] for q in reversed(state.queries) if q["ok"]), None)
        metrics: dict[str, Any] = {
            "queries": len(state.queries),
            "failed_queries": sum(not q["ok"] for q in state.queries),
            "template": str(session.task.get("template", "")),
        }
        try:
            expected = await asyncio.to_thread(state.db.query, gold, max_rows=self.rows_compared)
        except QueryError as error:
            return Verdict.failed(FailureKind.INVALID_INPUT, f"the gold query failed: {error}")
        if final is None:
            return Verdict(reward=0.0, metrics={**metrics, "mismatch": "no successful query"})
        try:
            got: QueryResult = await asyncio.to_thread(
                state.db.query, final, max_rows=self.rows_compared
            )
        except QueryError as error:
            return Verdict(reward=0.0, metrics={**metrics, "mismatch": f"final query: {error}"})
        right = same_result(expected, got, ordered=is_ordered(gold))
        metrics["mismatch"] = "" if right else "different result"
        return Verdict(reward=1.0 if right else 0.0, metrics=metrics)

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """``count`` questions from templates over databases made from ``seed``."""
        return generate(count, seed)


def _shown(value: object) -> object:
    return value.hex() if isinstance(value, bytes) else value
