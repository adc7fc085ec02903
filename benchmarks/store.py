"""Store speed and memory at scale: ingest passages/s, query p50/p95 (dense, BM25, hybrid), the BM25
index's build, a second process's first BM25 query (it loads the shared index instead of reading the
collection), and peak memory, for each collection size.

Passages are synthetic ~60-word texts built from the bundled HotpotQA sentences (distinct by
construction), ingested into a temporary persistent Chroma folder. ``--embeddings fake`` swaps the
MiniLM encoder for a deterministic fake one (same dimension) to measure the store alone, e.g. at 100k
passages, where MiniLM encoding on 2 CPU cores would take most of an hour (``benchmarks/ingest.py``
measures the encoder against ``Store.add``).

Usage: ``python benchmarks/store.py [--sizes 1000,10000] [--queries 50] [--embeddings minilm|fake]``
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from causalrag.corpus import hotpotqa_questions
from causalrag.tools.store import Passage, Store

SECOND_PROCESS = """
import sys, time
from langchain_core.embeddings import DeterministicFakeEmbedding
from causalrag.tools.store import Store
store = Store(sys.argv[2], path=sys.argv[1], embeddings=DeterministicFakeEmbedding(size=384))
start = time.perf_counter()
store.retrieve(sys.argv[3], 5, mode="bm25")
print(time.perf_counter() - start)
"""


def synthetic(n: int, seed: int = 0) -> list[Passage]:
    rng = random.Random(seed)
    sentences = [
        s.strip() for q in hotpotqa_questions() for _, sents in q["context"] for s in sents if len(s.split()) > 5
    ]
    return [Passage(f"doc {i}", " ".join(rng.sample(sentences, 3)) + f" (record {i})") for i in range(n)]


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--embeddings", choices=("minilm", "fake"), default="minilm")
    args = parser.parse_args()
    embeddings = None
    if args.embeddings == "fake":
        from langchain_core.embeddings import DeterministicFakeEmbedding

        embeddings = DeterministicFakeEmbedding(size=384)
    questions = [q["question"] for q in hotpotqa_questions()]
    queries = [questions[i % len(questions)] for i in range(args.queries)]
    print(f"{args.embeddings} embeddings; {len(os.sched_getaffinity(0))} cores; load average {os.getloadavg()}")
    header = (
        "passages",
        "ingest/s",
        "dense p50/p95 ms",
        "bm25 p50/p95 ms",
        "hybrid p50/p95 ms",
        "bm25 build s",
        "2nd process s",
        "peak RSS MB",
    )
    print("".join(f"{h:>19}" for h in header), flush=True)
    for size in map(int, args.sizes.split(",")):
        passages = synthetic(size)
        with tempfile.TemporaryDirectory() as home:
            store = Store(f"bench-{size}", path=home, embeddings=embeddings)
            store.embeddings.embed_query("warm up")
            start = time.perf_counter()
            store.add(passages)
            ingest_rate = size / (time.perf_counter() - start)
            start = time.perf_counter()
            store.retrieve(queries[0], 5, mode="bm25")  # builds the shared BM25 index once
            build = time.perf_counter() - start
            second = "-"
            if embeddings is not None:  # the second process must embed queries alike
                done = subprocess.run([sys.executable, "-c", SECOND_PROCESS, home, f"bench-{size}", queries[1]],
                                      capture_output=True, text=True, check=True)
                second = f"{float(done.stdout.split()[-1]):.2f}"
            cells = []
            for mode in ("dense", "bm25", "hybrid"):
                times = []
                for q in queries:
                    start = time.perf_counter()
                    store.retrieve(q, 5, mode=mode)
                    times.append((time.perf_counter() - start) * 1000)
                cells.append(f"{statistics.median(times):.1f}/{percentile(times, 95):.1f}")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        row = (size, f"{ingest_rate:.0f}", *cells, f"{build:.2f}", second, f"{peak:.0f}")
        print("".join(f"{c:>19}" for c in row), flush=True)
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
