"""The tasks a served benchmark holds, read from the server itself (NeMo Evaluator's protocol).

A ``nel serve`` benchmark (or a ``palaestra serve env --tasks FILE`` server) says how many tasks
it has (``GET /dataset_size``) and gives task ``idx`` on ``POST /seed_session {"idx": idx}`` as
``{prompt, expected_answer, metadata, messages?, system?}``. ``served_tasks`` turns each into a
NeMo Gym task row and writes them, in index order, to a tasks file beside the run's output:
resume and the run identity then work on it exactly as on an ``--input`` file (its content is
hashed), and a benchmark whose data changed between two runs is refused on resume.

Each seed asks for the whole row too (``x-palaestra-task: 1``, which NeMo Evaluator never
sends): a palaestra server (``palaestra serve env``) answers it as ``task``, and that row is
written as the server holds it, its task fields and its params' tools included, so its
rollouts run exactly as with ``--input``. From a server that answers the evaluator's view
alone (``nel serve``) a row is made of it, keeping what that server's ``/verify`` reads in
NeMo Gym's form: ``expected_answer`` and ``metadata``. Fetching costs one request per task,
16 in flight, once per run. A seed
that opened a session (a palaestra server answers a session token) is closed at once, so
fetching never fills the server's session cap.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import orjson

from palaestra.collection.files import writing
from palaestra.environment.running.boundary import describe
from palaestra.errors import ConfigError
from palaestra.remote.env import body_excerpt
from palaestra.transport import HttpAnswer, HttpClient, TransportError, shown_url
from palaestra.types import JsonDict
from palaestra.wire.protocol import (
    CLOSE_SESSION,
    DATASET_SIZE,
    SEED_SESSION,
    SESSION_HEADER,
    TASK_HEADER,
)
from palaestra.wire.rows import PARAMS

IN_FLIGHT = 16
_SECONDS = 60.0


def task_from_seed(seed: JsonDict) -> JsonDict:
    """A NeMo Gym task row from an evaluator seed answer (``idx`` is only for messages)."""
    messages = seed.get("messages")
    if not isinstance(messages, list) or not messages:
        messages = [{"role": "user", "content": str(seed.get("prompt") or "")}]
        system = seed.get("system")
        if isinstance(system, str) and system:
            messages.insert(0, {"role": "system", "content": system})
    row: JsonDict = {
        PARAMS: {
            "input": [
                {"role": str(m.get("role", "user")), "content": m.get("content", "")}
                for m in messages
                if isinstance(m, dict)
            ]
        },
        "expected_answer": seed.get("expected_answer"),
    }
    metadata = seed.get("metadata")
    if isinstance(metadata, dict):
        row["metadata"] = metadata
    return row


async def served_tasks(
    base_url: str,
    path: Path,
    *,
    token: str | None = None,
    http: HttpClient | None = None,
    in_flight: int = IN_FLIGHT,
) -> Path:
    """Write every task the server at ``base_url`` serves to ``path`` (renamed into place),
    ``in_flight`` seeds at a time; ``path``. A server that cannot say its size, or answers a
    seed badly, is a ``ConfigError`` naming the route (nothing runs on a benchmark read
    halfway)."""
    base = base_url.rstrip("/")
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    client = http or HttpClient()
    try:
        size = await _size(client, base, auth)
        rows = await _rows(client, base, auth, size, in_flight)
    except (TransportError, TimeoutError) as error:
        raise ConfigError(
            f"cannot read the tasks of {shown_url(base)}: {describe(error)}"
        ) from None
    finally:
        if http is None:
            await client.aclose()
    if not rows:
        raise ConfigError(
            f"{shown_url(base + DATASET_SIZE)} says the server holds no tasks: pass --input"
        )
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(
                b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in rows)
            )
            os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path


async def _size(client: HttpClient, base: str, auth: dict[str, str]) -> int:
    answer = await client.request(
        "GET", f"{base}{DATASET_SIZE}", headers=auth, connect_timeout=10.0, read_timeout=_SECONDS
    )
    if answer.status == 404:
        raise ConfigError(
            f"{shown_url(base)} serves no {DATASET_SIZE} (not a NeMo Evaluator benchmark server): "
            f"pass --input with its tasks"
        )
    size = _json(answer, shown_url(base + DATASET_SIZE)).get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        excerpt = body_excerpt(answer.body)
        raise ConfigError(f"{shown_url(base + DATASET_SIZE)} answered no usable 'size': {excerpt}")
    return size


async def _rows(
    client: HttpClient, base: str, auth: dict[str, str], size: int, in_flight: int
) -> list[JsonDict]:
    rows: list[JsonDict] = [{} for _ in range(size)]
    indices = iter(range(size))

    async def fetch() -> None:
        for idx in indices:  # one shared iterator: in_flight workers, each task fetched once
            rows[idx] = await _seed(client, base, auth, idx)

    await asyncio.gather(*(fetch() for _ in range(max(1, min(in_flight, size)))))
    return rows


async def _seed(client: HttpClient, base: str, auth: dict[str, str], idx: int) -> JsonDict:
    answer = await client.request(
        "POST",
        f"{base}{SEED_SESSION}",
        body=orjson.dumps({"idx": idx}),
        headers={**auth, "Content-Type": "application/json", TASK_HEADER: "1"},
        connect_timeout=10.0,
        read_timeout=_SECONDS,
    )
    what = f"{shown_url(base + SEED_SESSION)} {{idx: {idx}}}"
    seed = _json(answer, what)
    session = answer.headers.get(SESSION_HEADER.lower())
    if session:
        await client.request(
            "POST",
            f"{base}{CLOSE_SESSION}",
            body=b"{}",
            headers={**auth, "Content-Type": "application/json", SESSION_HEADER: session},
            connect_timeout=10.0,
            read_timeout=_SECONDS,
        )
    task = seed.get("task")
    if task is not None:  # a palaestra server's own row
        if not isinstance(task, dict) or not isinstance(task.get(PARAMS), dict):
            raise ConfigError(
                f"{what} answered a 'task' that is not a task row: {body_excerpt(answer.body)}"
            )
        return task
    if not isinstance(seed.get("prompt"), str) and not seed.get("messages"):
        raise ConfigError(f"{what} answered no 'prompt' or 'messages': {body_excerpt(answer.body)}")
    return task_from_seed(seed)


def _json(answer: HttpAnswer, what: str) -> JsonDict:
    if answer.status != 200:
        raise ConfigError(f"{what} answered {answer.status}: {body_excerpt(answer.body)}")
    try:
        value = orjson.loads(answer.body)
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise ConfigError(f"{what} answered no JSON object: {body_excerpt(answer.body)}")
    return value
