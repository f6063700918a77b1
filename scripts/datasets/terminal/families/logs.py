"""Logs: find the first error across rotated logs, compress old logs, summarise levels per day.

Logs are generated with timestamps; rotated files (``.1``, ``.2.gz``) hold older lines, so
the first error is found only by reading all of them in time order."""

from __future__ import annotations

import gzip
import hashlib
import random
from collections import Counter
from collections.abc import Callable

from scripts.datasets.terminal.spec import TerminalTask, constants

FAMILY = "logs"
PACKAGES = ("python3", "gawk", "procps")
SERVICES = ["api", "worker", "billing", "mailer", "indexer", "gateway"]
MESSAGES = {
    "INFO": ("request served", "cache warmed", "job queued", "connection opened"),
    "WARN": ("slow response", "retrying upstream", "disk 80% full"),
    "ERROR": (
        "upstream timeout",
        "payment declined by gateway",
        "index corrupted",
        "out of memory",
    ),
    "DEBUG": ("tick", "heartbeat", "gc pause"),
}
DAY = 86_400
START = 1_790_000_000


def _stamp(seconds: int) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _lines(rng: random.Random, start: int, count: int, error_rate: float) -> list[tuple[int, str]]:
    out = []
    now = start
    for _ in range(count):
        now += rng.randint(1, 400)
        level = (
            "ERROR" if rng.random() < error_rate else rng.choice(("INFO", "INFO", "WARN", "DEBUG"))
        )
        service = rng.choice(SERVICES)
        out.append(
            (
                now,
                f"{_stamp(now)} {level} [{service}] {rng.choice(MESSAGES[level])}"
                f" id={rng.randint(1000, 99999)}",
            )
        )
    return out


def generate(rng: random.Random, difficulty: int) -> TerminalTask:
    """One logs task. (a kind drawn at random)."""
    return rng.choice(KINDS)(rng, difficulty)


def _first_error(rng: random.Random, difficulty: int) -> TerminalTask:
    size = 60 * difficulty
    oldest = _lines(rng, START, size, 0.0)
    middle = _lines(rng, oldest[-1][0], size, 0.0)
    newest = _lines(rng, middle[-1][0], size, 0.04)
    # the first error sits in one of the rotated files, never the newest
    holder = rng.choice((oldest, middle))
    position = rng.randint(size // 3, size - 1)
    when, _ = holder[position]
    first = (
        f"{_stamp(when)} ERROR [{rng.choice(SERVICES)}] {rng.choice(MESSAGES['ERROR'])}"
        f" id={rng.randint(1000, 99999)}"
    )
    holder[position] = (when, first)
    for later in range(position + 1, size):
        if rng.random() < 0.1:
            t, line = holder[later]
            holder[later] = (t, line.replace(" INFO ", " ERROR ", 1))

    def text(lines: list[tuple[int, str]]) -> str:
        return "".join(f"{line}\n" for _, line in lines)

    answer = "/app/first_error.txt"
    instruction = f"""\
`/app/logs/` holds the logs of a service: `app.log` and its rotated older parts `app.log.1`
and `app.log.2.gz` (rotated by size; the `.2.gz` part is the oldest). Find the earliest line
whose level is `ERROR` and write that whole line, and nothing else, to `{answer}`.
"""
    solve = f"""\
{{ zcat /app/logs/app.log.2.gz; cat /app/logs/app.log.1 /app/logs/app.log; }} > /tmp/all.log
grep -m 1 ' ERROR ' /tmp/all.log > {answer}
"""
    return TerminalTask(
        family=FAMILY,
        name="first-error",
        instruction=instruction,
        files={
            "/app/logs/app.log": text(newest),
            "/app/logs/app.log.1": text(middle),
            "/app/logs/app.log.2.gz": gzip.compress(text(oldest).encode(), mtime=0),
        },
        check=constants(ANSWER=answer, EXPECTED=first)
        + "got = read(ANSWER)\nfinish(got is not None and got.strip() == EXPECTED)\n",
        solve=solve,
        packages=PACKAGES,
        difficulty=difficulty,
    )


def _compress_old(rng: random.Random, difficulty: int) -> TerminalTask:
    days = rng.randint(5, 9)
    count = 3 + 2 * difficulty
    now = 1_800_000_000
    files: dict[str, str | bytes] = {}
    ages: dict[str, int] = {}
    for idx in range(count):
        name = f"/app/logs/{rng.choice(SERVICES)}-{idx}.log"
        age = rng.choice([d for d in range(1, 20) if d != days])
        files[name] = "".join(f"{line}\n" for _, line in _lines(rng, now - age * DAY, 10, 0.05))
        ages[name] = age
    if all(a < days for a in ages.values()):
        ages[sorted(ages)[0]] = days + 3
    if all(a > days for a in ages.values()):
        ages[sorted(ages)[-1]] = 1
    digests = {name: hashlib.sha256(str(text).encode()).hexdigest() for name, text in files.items()}
    old = sorted(name for name, age in ages.items() if age > days)
    setup = (
        f"echo {now} > /etc/log-clock && "
        + " && ".join(
            f"touch -m -d @{now - age * DAY} {name}" for name, age in sorted(ages.items())
        ),
    )
    instruction = f"""\
Treat the current time as the Unix time in `/etc/log-clock` (the machine's clock may differ).
Compress with gzip every `.log` file in `/app/logs` last modified more than {days} days before
that time: each becomes `<name>.log.gz` with the same content and the original `.log` is
removed. Leave the newer `.log` files as they are.
"""
    solve = f"""\
now=$(cat /etc/log-clock)
for f in /app/logs/*.log; do
  if [ $(( now - $(stat -c %Y "$f") )) -gt $(( {days} * 86400 )) ]; then gzip "$f"; fi
done
"""
    check = (
        constants(OLD=old, DIGESTS=digests)
        + """
import gzip, hashlib
parts = {}
for name, digest in sorted(DIGESTS.items()):
    if name in OLD:
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(read(name + ".gz", "rb") or b"")) as f:
                same = hashlib.sha256(f.read(READ_CAP)).hexdigest() == digest
        except (OSError, EOFError):
            same = False
        parts["compressed " + name] = float(same and not os.path.exists(name))
    else:
        kept = read(name, "rb")
        same = kept is not None and hashlib.sha256(kept).hexdigest() == digest
        parts["kept " + name] = float(same
                                      and not os.path.exists(name + ".gz"))
# partial credit for the old files compressed, but none when a newer file was touched
compressed = [v for k, v in parts.items() if k.startswith("compressed ")]
kept = all(v == 1.0 for k, v in parts.items() if k.startswith("kept "))
parts["_reward"] = sum(compressed) / len(compressed) if kept else 0.0
finish_parts(parts)
"""
    )
    return TerminalTask(
        family=FAMILY,
        name="compress-old",
        instruction=instruction,
        files=files,
        setup=setup,
        check=check,
        solve=solve,
        packages=PACKAGES,
        difficulty=difficulty,
    )


def _summary(rng: random.Random, difficulty: int) -> TerminalTask:
    lines = _lines(rng, START, 150 * difficulty, 0.08)
    counts: Counter[tuple[str, str]] = Counter()
    for _, line in lines:
        counts[(line[:10], line.split(" ")[1])] += 1
    expected = ["day,level,count"] + [f"{d},{lv},{n}" for (d, lv), n in sorted(counts.items())]
    output = "/app/summary.csv"
    instruction = f"""\
`/app/service.log` has one event per line: an ISO-8601 UTC timestamp, a level, then the
message. Write `{output}`: a header line `day,level,count`, then one line per (day, level)
that occurs, as `YYYY-MM-DD,LEVEL,N`, sorted by day and then level.
"""
    solve = f"""\
{{ echo day,level,count
  awk '{{ print substr($1, 1, 10) "," $2 }}' /app/service.log | sort | uniq -c \\
  | awk '{{ print $2 "," $1 }}'; }} > {output}
"""
    check = (
        constants(OUTPUT=output, EXPECTED=expected)
        + """
got = read(OUTPUT)
finish(got is not None and [l.rstrip() for l in got.rstrip("\\n").split("\\n")] == EXPECTED)
"""
    )
    return TerminalTask(
        family=FAMILY,
        name="summary",
        instruction=instruction,
        files={"/app/service.log": "".join(f"{line}\n" for _, line in lines)},
        check=check,
        solve=solve,
        packages=PACKAGES,
        difficulty=difficulty,
    )


KINDS: tuple[Callable[[random.Random, int], TerminalTask], ...] = (
    _first_error,
    _compress_old,
    _summary,
)
"""The task kinds, in the order ``generate`` cycles through them."""
