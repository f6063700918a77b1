"""File forensics: find the one file with a property in a generated tree, or recover a file.

Properties: a content hash, the newest modification time, a magic type hidden behind a wrong
extension, the largest size. Recovery: a file kept only inside a compressed archive in a
hidden directory. Answers are absolute paths in ``/app/answer.txt``; a recovery is checked by
the recovered file's content hash."""

from __future__ import annotations

import gzip
import hashlib
import io
import random
import tarfile
from collections.abc import Callable

from scripts.datasets.terminal.spec import TerminalTask, constants

FAMILY = "forensics"
PACKAGES = ("python3", "file", "xxd", "tree")
WORDS = [
    "amber",
    "basil",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "iris",
    "juniper",
    "kestrel",
    "lumen",
    "maple",
    "nectar",
    "onyx",
    "pepper",
    "quartz",
    "raven",
    "sable",
    "thistle",
    "umber",
    "vesper",
    "willow",
    "yarrow",
    "zephyr",
]
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
ANSWER = "/app/answer.txt"

CHECK_ANSWER = """
got = read(ANSWER)
finish(got is not None and got.strip() == EXPECTED)
"""


def _text(rng: random.Random, lines: int) -> str:
    return (
        "\n".join(" ".join(rng.choices(WORDS, k=rng.randint(3, 10))) for _ in range(lines)) + "\n"
    )


def _tree(rng: random.Random, difficulty: int) -> dict[str, str | bytes]:
    """A tree of text files under /app/data, a few levels deep."""
    dirs = ["/app/data"]
    for _ in range(2 + 2 * difficulty):
        dirs.append(f"{rng.choice(dirs)}/{rng.choice(WORDS)}{rng.randint(0, 99)}")
    files: dict[str, str | bytes] = {}
    while len(files) < 10 * difficulty + 8:
        extension = rng.choice(("txt", "log", "md", "dat"))
        name = f"{rng.choice(dirs)}/{rng.choice(WORDS)}_{rng.randint(0, 999)}.{extension}"
        files[name] = _text(rng, rng.randint(1, 30))
    return files


def generate(rng: random.Random, difficulty: int) -> TerminalTask:
    """One forensics task. (a kind drawn at random)."""
    return rng.choice(KINDS)(rng, difficulty)


def _answer_task(
    name: str,
    instruction: str,
    files: dict[str, str | bytes],
    target: str,
    solve: str,
    difficulty: int,
    setup: tuple[str, ...] = (),
) -> TerminalTask:
    return TerminalTask(
        family=FAMILY,
        name=name,
        instruction=instruction.rstrip("\n")
        + f"\n\nWrite the file's absolute path, and nothing else, to `{ANSWER}`.\n",
        files=files,
        setup=setup,
        check=constants(ANSWER=ANSWER, EXPECTED=target) + CHECK_ANSWER,
        solve=solve,
        packages=PACKAGES,
        difficulty=difficulty,
    )


def _by_hash(rng: random.Random, difficulty: int) -> TerminalTask:
    files = _tree(rng, difficulty)
    target = rng.choice(sorted(files))
    digest = hashlib.sha256(_bytes(files[target])).hexdigest()
    return _answer_task(
        "by-hash",
        f"Exactly one file under `/app/data` has the SHA-256 digest `{digest}`. Find it.",
        files,
        target,
        f"find /app/data -type f -exec sha256sum {{}} + \\\n"
        f"  | awk '$1 == \"{digest}\" {{print $2}}' > {ANSWER}",
        difficulty,
    )


def _newest(rng: random.Random, difficulty: int) -> TerminalTask:
    files = _tree(rng, difficulty)
    names = sorted(files)
    target = rng.choice(names)
    stamps = rng.sample(range(1_600_000_000, 1_700_000_000, 3600), len(names))
    newest = max(stamps)
    stamps[stamps.index(newest)], stamps[names.index(target)] = stamps[names.index(target)], newest
    setup = (
        "cd / && "
        + " && ".join(
            f"touch -m -d @{stamp} '{name}'" for name, stamp in zip(names, stamps, strict=True)
        ),
    )
    return _answer_task(
        "newest",
        "Among the files under `/app/data`, find the one that was modified most recently "
        "(by its modification time).",
        files,
        target,
        f"find /app/data -type f -printf '%T@ %p\\n' | sort -n | tail -n 1 \\\n"
        f"  | cut -d' ' -f2- > {ANSWER}",
        difficulty,
        setup,
    )


def _magic(rng: random.Random, difficulty: int) -> TerminalTask:
    files = _tree(rng, difficulty)
    target = rng.choice(sorted(files))
    files[target] = PNG + rng.randbytes(64 + 32 * difficulty)
    return _answer_task(
        "magic-type",
        "One file under `/app/data` is really a PNG image, whatever its name says. Find it.",
        files,
        target,
        "for f in $(find /app/data -type f); do\n"
        '  if [ "$(head -c 4 "$f" | od -An -tx1 | tr -d \' \\n\')" = 89504e47 ]; then '
        f'echo "$f" > {ANSWER}; fi\ndone',
        difficulty,
    )


def _largest(rng: random.Random, difficulty: int) -> TerminalTask:
    files = _tree(rng, difficulty)
    names = sorted(files)
    target = rng.choice(names)
    biggest = max(len(_bytes(v)) for v in files.values())
    grown = _text(rng, 1)
    while len(grown) <= biggest:
        grown += _text(rng, 1)
    files[target] = grown
    return _answer_task(
        "largest",
        "Find the largest file (in bytes) under `/app/data`.",
        files,
        target,
        f"find /app/data -type f -printf '%s %p\\n' | sort -n | tail -n 1 \\\n"
        f"  | cut -d' ' -f2- > {ANSWER}",
        difficulty,
    )


def _recover(rng: random.Random, difficulty: int) -> TerminalTask:
    files = _tree(rng, difficulty)
    lost = f"{rng.choice(WORDS)}-notes.txt"
    content = _text(rng, 5 + 5 * difficulty)
    hidden = f"/app/data/.{rng.choice(WORDS)}-cache"
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for name, data in ((lost, content), (f"{rng.choice(WORDS)}.txt", _text(rng, 3))):
            raw = data.encode()
            info = tarfile.TarInfo(f"backup/{name}")
            info.size, info.mtime = len(raw), 1_650_000_000
            tar.addfile(info, io.BytesIO(raw))
    blob = gzip.compress(archive.getvalue(), mtime=0)
    files[f"{hidden}/snapshot-{rng.randint(100, 999)}.bin"] = blob
    destination = f"/app/recovered/{lost}"
    instruction = f"""\
The file `{lost}` was deleted from `/app/data`, but a copy survives somewhere under
`/app/data` (possibly hidden, possibly compressed or archived). Restore it, with exactly its
original content, as `{destination}`.
"""
    solve = f"""\
mkdir -p /app/recovered /tmp/recover
for f in $(find /app/data -type f -name '*.bin'); do
  tar -xzf "$f" -C /tmp/recover 2>/dev/null || true
done
cp "$(find /tmp/recover -name '{lost}' | head -n 1)" {destination}
"""
    check = constants(DESTINATION=destination, DIGEST=hashlib.sha256(content.encode()).hexdigest())
    check += """
import hashlib
got = read(DESTINATION, "rb")
finish(got is not None and hashlib.sha256(got).hexdigest() == DIGEST)
"""
    return TerminalTask(
        family=FAMILY,
        name="recover",
        instruction=instruction,
        files=files,
        check=check,
        solve=solve,
        packages=PACKAGES,
        difficulty=difficulty,
    )


def _bytes(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode()


KINDS: tuple[Callable[[random.Random, int], TerminalTask], ...] = (
    _by_hash,
    _newest,
    _magic,
    _largest,
    _recover,
)
"""The task kinds, in the order ``generate`` cycles through them."""
