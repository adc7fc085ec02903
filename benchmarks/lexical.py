"""The BM25 first stage at scale, side by side in one run: rank_bm25's ``BM25Okapi`` (what every process
built from the whole collection before) vs :class:`causalrag.tools.lexical.LexicalIndex` (a sparse
matrix kept in files beside the collection), on the same synthetic passages: build seconds, memory
(tracemalloc peak while building, and what the index holds), query p50/p95, and whether the top 10
agree.

Usage: ``python benchmarks/lexical.py [--n 100000] [--queries 50]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from causalrag.corpus import hotpotqa_questions
from causalrag.tools.lexical import LexicalIndex, tokenize

from store import percentile, synthetic  # noqa: E402  (benchmarks/ is the script's folder)


def built(make):
    tracemalloc.start()
    start = time.perf_counter()
    index = make()
    seconds = time.perf_counter() - start
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return index, seconds, held / 2**20, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    passages = synthetic(args.n)
    texts = [f"{p.title} {p.text}" for p in passages]
    questions = [q["question"] for q in hotpotqa_questions()]
    queries = [questions[i % len(questions)] for i in range(args.queries)]
    print(f"{args.n} passages, {args.queries} queries; {len(os.sched_getaffinity(0))} cores; load average {os.getloadavg()}", flush=True)
    ours, ours_s, ours_mb, ours_peak = built(lambda: LexicalIndex.build([p.id for p in passages], texts))
    folder = Path(tempfile.mkdtemp()) / "index"
    start = time.perf_counter()
    ours.save(folder)
    saved = time.perf_counter() - start
    start = time.perf_counter()
    loaded = LexicalIndex.load(folder)
    load_s = time.perf_counter() - start
    theirs, theirs_s, theirs_mb, theirs_peak = built(lambda: BM25Okapi([tokenize(t) for t in texts]))
    times: dict[str, list[float]] = {"rank_bm25": [], "LexicalIndex": []}
    agree = 0
    for q in queries:
        start = time.perf_counter()
        a = np.asarray(theirs.get_scores(tokenize(q)))
        times["rank_bm25"].append(time.perf_counter() - start)
        start = time.perf_counter()
        b = loaded.scores(q)
        times["LexicalIndex"].append(time.perf_counter() - start)
        agree += list(np.argsort(-a, kind="stable")[:10]) == list(np.argsort(-b, kind="stable")[:10])
    files = sum(f.stat().st_size for f in folder.iterdir()) / 2**20
    print(f"{'index':<14}{'build s':>9}{'held MB':>9}{'peak MB':>9}{'query p50 ms':>14}{'p95 ms':>8}")
    for name, s, mb, peak in (("rank_bm25", theirs_s, theirs_mb, theirs_peak), ("LexicalIndex", ours_s, ours_mb, ours_peak)):
        t = [x * 1000 for x in times[name]]
        print(f"{name:<14}{s:>9.1f}{mb:>9.0f}{peak:>9.0f}{statistics.median(t):>14.1f}{percentile(t, 95):>8.1f}")
    print(f"LexicalIndex files: {files:.0f} MB, saved in {saved:.2f} s, loaded (memory-mapped, as another process does) in {load_s:.3f} s")
    print(f"same top 10 for {agree}/{len(queries)} queries; load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
