"""``<output>_checkpoints.jsonl``: the latest checkpoint of each unfinished durable rollout.

A rollout of an environment that exports and restores its state (``Environment.
export_state``) is checkpointed by its agent after every completed turn
(``palaestra.agents.durable``). The collector, the run's single writer, appends each
checkpoint as one line (the turn's items only, after the attempt's first: ``folded`` makes
the whole of them) and, when the rollout ends with a record, a line that ends it. The
lines of one event-loop turn go out in one ``write`` at the end of that turn (the
materialized inputs' way: a third of a checkpoint's CPU was its own ``write``), so before the
rollout's next model answer can arrive, let alone its next tool run; a ``kill -9`` in between
loses that checkpoint, and the resume redoes the turn, as it does when the kill lands between
a tool's effect and its checkpoint (``Environment.restore_state`` says what that asks of an
effect outside the state). A torn last line is cut on resume.
Only the lines of a rollout's newest attempt matter, so the file is compacted (rewritten with
one whole line per live rollout, then renamed over) when it has grown to several times what
is live, on resume, and when the run stops; a run that finishes everything leaves no file.

Stale attempts are fenced: each attempt of a rollout has a number (epoch) one above the last
the writer knew (the file's, on resume), and the writer takes a checkpoint, a result or a
failure only from the rollout's newest attempt. An attempt that was superseded (a duplicate,
or an old worker coming back) is refused and counted (``fenced``), never written.
"""

from __future__ import annotations

import contextlib
import os
from functools import partial
from pathlib import Path

import orjson

from palaestra.agents.durable import Durability, folded
from palaestra.collection.files import (
    JsonlAppender,
    OutputError,
    Pair,
    encode,
    repair_torn_tail,
    writing,
)
from palaestra.types import JsonDict
from palaestra.wire.jsonl import BadLine, read_rows

TASK, ROLLOUT, EPOCH, CHECKPOINT, END = "task", "rollout", "epoch", "checkpoint", "end"

COMPACT_FACTOR = 4
"""The file is compacted when it holds this many times the bytes of its live lines..."""
COMPACT_MIN_BYTES = 8 << 20
"""...and at least this many bytes (small files are not worth rewriting)."""


def checkpoints_path(output: Path) -> Path:
    return output.with_name(output.stem + "_checkpoints.jsonl")


class CheckpointLog:
    """The checkpoints file of one run, and the attempt (epoch) of each rollout it started."""

    def __init__(self, path: Path, pending: dict[Pair, tuple[int, bytes]] | None = None) -> None:
        self.path = path
        self._pending = pending or {}
        """Checkpoints a stopped run left, by pair: (epoch, line), until the pair starts."""
        self._epochs: dict[Pair, int] = {}
        self._live: dict[Pair, list[bytes]] = {}
        """The lines of each started pair's newest attempt that make its latest checkpoint:
        the whole one it started from (if any), then each turn's (``encoded_checkpoint``)."""
        self._live_bytes = sum(len(line) for _, line in self._pending.values())
        self._appender: JsonlAppender | None = None
        self._written = 0
        self.saved = 0
        """Checkpoints written by this run."""
        self.fenced = 0
        """Writes refused because their attempt was stale."""
        self.error: OutputError | None = None
        """A checkpoint that could not be written (disk full): the collector stops the run."""

    @classmethod
    def load(cls, path: Path, done: set[Pair]) -> CheckpointLog:
        """The log of a run being resumed: the latest checkpoint of every pair not ``done``
        (nor ended), whole (``folded``), the file compacted to them."""
        chains: dict[Pair, tuple[int, list[JsonDict]]] = {}
        if path.exists():
            repair_torn_tail(path)
            for _, row in read_rows(path):
                pair = _pair(row)
                if pair is None or isinstance(row, BadLine):
                    continue
                epoch = int(row.get(EPOCH) or 0)
                if row.get(END):
                    chains.pop(pair, None)
                elif isinstance(row.get(CHECKPOINT), dict):
                    known = chains.get(pair)
                    if known is None or epoch > known[0]:
                        chains[pair] = (epoch, [row[CHECKPOINT]])
                    elif epoch == known[0]:  # the same attempt's next checkpoint
                        known[1].append(row[CHECKPOINT])
            for pair in done:
                chains.pop(pair, None)
        pending: dict[Pair, tuple[int, bytes]] = {}
        for pair, (epoch, parts) in chains.items():
            whole = folded(parts)
            if whole is not None:
                pending[pair] = (epoch, _line(pair, epoch, whole))
        log = cls(path, pending)
        log.compact()
        return log

    def begin(self, pair: Pair) -> Durability:
        """A new attempt of ``pair``: the newest from now on; it resumes the pair's last
        checkpoint when a stopped run left one (written again under the new epoch, so the
        attempts count and compaction keeps it)."""
        previous = self._pending.pop(pair, None)
        epoch = max(self._epochs.get(pair, 0), previous[0] if previous else 0) + 1
        self._epochs[pair] = epoch
        durability = Durability(save=partial(self.save, pair, epoch), attempt=epoch)
        durability.renew = partial(self._renew, pair, durability)
        if previous is not None:
            self._live_bytes -= len(previous[1])
            checkpoint = orjson.loads(previous[1])[CHECKPOINT]
            durability.resume = checkpoint
            self.save(pair, epoch, checkpoint)
        return durability

    def _renew(self, pair: Pair, durability: Durability) -> None:
        """A new attempt of ``pair`` in place of ``durability``'s (``Durability.renew``),
        resuming from the pair's latest checkpoint, written again under the new epoch."""
        epoch = self._epochs.get(pair, durability.attempt) + 1
        self._epochs[pair] = epoch
        durability.attempt, durability.fenced = epoch, False
        durability.sent = 0
        durability.save = partial(self.save, pair, epoch)
        lines = self._live.get(pair)
        if lines is not None:
            durability.resume = _whole(lines)
        if durability.resume is not None:
            self.save(pair, epoch, durability.resume)

    def current(self, pair: Pair, epoch: int) -> bool:
        """Whether ``epoch`` is the newest attempt of ``pair`` (else it is counted fenced)."""
        if self._epochs.get(pair) == epoch:
            return True
        self.fenced += 1
        return False

    def save(self, pair: Pair, epoch: int, checkpoint: JsonDict | bytes) -> bool:
        """Append ``checkpoint`` as the latest of ``pair``; False (nothing written) when the
        attempt ``epoch`` is stale. As bytes it is the JSON object an agent encoded
        (``encoded_checkpoint``: what the attempt's earlier ones lack; one line, as orjson
        never writes a raw newline), written as it came; as a dict it is whole and starts the
        attempt's lines afresh."""
        if self._epochs.get(pair) != epoch:
            self.fenced += 1
            return False
        if isinstance(checkpoint, bytes):
            line = _HEAD % (pair[0], pair[1], epoch, checkpoint)
            lines = self._live.get(pair)
            if lines is None:
                lines = self._live[pair] = []
        else:
            line = _line(pair, epoch, checkpoint)
            lines = self._live[pair] = self._drop(pair)
        try:
            self._append(line)
        except OutputError as error:  # the rollout goes on; the collector stops the run
            self.error = self.error or error
            return True
        lines.append(line)
        self._live_bytes += len(line)
        self.saved += 1
        if self._written > COMPACT_MIN_BYTES and self._written > COMPACT_FACTOR * self._live_bytes:
            try:
                self.compact()
            except OutputError as error:
                self.error = self.error or error
        return True

    def end(self, pair: Pair, epoch: int) -> None:
        """The attempt's rollout ended with a record: its checkpoint is no longer needed."""
        if self._epochs.get(pair) != epoch:
            return
        del self._epochs[pair]
        if pair in self._live:
            self._drop(pair)
            del self._live[pair]
            try:
                self._append(_END % (pair[0], pair[1], epoch))
            except OutputError as error:  # harmless (a resume skips done pairs) but said
                self.error = self.error or error

    def _drop(self, pair: Pair) -> list[bytes]:
        """Forget the live lines of ``pair`` (no longer what a resume needs); an empty list."""
        for line in self._live.get(pair, ()):
            self._live_bytes -= len(line)
        return []

    def release(self, pair: Pair, epoch: int) -> None:
        """The attempt stopped with no record (the run stopped under it): its checkpoint
        stays for the next resume."""
        if self._epochs.get(pair) == epoch:
            del self._epochs[pair]

    def compact(self) -> None:
        """Rewrite the file with only the live checkpoints, one whole line each (``folded``;
        a temporary file renamed over it), or remove it when nothing is live."""
        for pair, chain in self._live.items():
            if len(chain) > 1:
                chain[:] = _compacted(pair, chain)
        lines = [line for _, line in self._pending.values()]
        lines += [line for chain in self._live.values() for line in chain]
        if self._appender is not None:
            self._appender.close()
            self._appender = None
        with writing(self.path):
            if not lines:
                self.path.unlink(missing_ok=True)
            else:
                temporary = self.path.with_name(self.path.name + ".tmp")
                temporary.write_bytes(b"".join(lines))
                os.replace(temporary, self.path)
        self._written = sum(len(line) for line in lines)
        self._live_bytes = self._written

    def close(self) -> None:
        """Compact what is left (the checkpoints of rollouts a stopped run had in flight)."""
        if self._appender is None and not self.path.exists():
            return
        with contextlib.suppress(OutputError):  # a failed compaction leaves a longer file
            self.compact()

    def _append(self, line: bytes) -> None:
        if self._appender is None:
            self._appender = JsonlAppender(self.path, flush_each=False)
        self._appender.write(line)
        self._written += len(line)


_HEAD = b'{"%s":%%d,"%s":%%d,"%s":%%d,"%s":%%b}\n' % (
    TASK.encode(),
    ROLLOUT.encode(),
    EPOCH.encode(),
    CHECKPOINT.encode(),
)
_END = b'{"%s":%%d,"%s":%%d,"%s":%%d,"%s":true}\n' % (
    TASK.encode(),
    ROLLOUT.encode(),
    EPOCH.encode(),
    END.encode(),
)


def _line(pair: Pair, epoch: int, checkpoint: JsonDict) -> bytes:
    return encode({TASK: pair[0], ROLLOUT: pair[1], EPOCH: epoch, CHECKPOINT: checkpoint})


def _whole(lines: list[bytes]) -> JsonDict | None:
    """The whole checkpoint a pair's live lines make (``folded``)."""
    return folded([orjson.loads(line)[CHECKPOINT] for line in lines])


def _compacted(pair: Pair, lines: list[bytes]) -> list[bytes]:
    """A pair's live lines as one whole line, under the epoch of the newest."""
    whole = _whole(lines)
    if whole is None:  # nothing in them a resume could use
        return []
    return [_line(pair, int(orjson.loads(lines[-1])[EPOCH]), whole)]


def _pair(row: JsonDict | BadLine) -> Pair | None:
    if isinstance(row, BadLine):
        return None
    try:
        return int(row[TASK]), int(row[ROLLOUT])
    except (KeyError, TypeError, ValueError):
        return None
