"""Store speed: ingest passages/s and retrieval p50 latency for 1k and 10k passages, dense vs BM25.

Passages are synthetic ~60-word texts built from the bundled HotpotQA sentences (distinct by
construction), ingested into a temporary persistent Chroma folder.

Usage: ``python benchmarks/store.py [--sizes 1000,10000] [--queries 50]``
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time

from causalrag.corpus import hotpotqa_questions
from causalrag.tools.store import Passage, Store


def synthetic(n: int, seed: int = 0) -> list[Passage]:
    rng = random.Random(seed)
    sentences = [s.strip() for q in hotpotqa_questions() for _, sents in q["context"] for s in sents if len(s.split()) > 5]
    return [Passage(f"doc {i}", " ".join(rng.sample(sentences, 3)) + f" (record {i})") for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    questions = [q["question"] for q in hotpotqa_questions()]
    queries = [questions[i % len(questions)] for i in range(args.queries)]
    print(f"{'passages':>9}{'ingest/s':>10}{'dense p50 ms':>14}{'bm25 p50 ms':>13}{'bm25 build s':>14}{'hybrid p50 ms':>15}")
    for size in map(int, args.sizes.split(",")):
        passages = synthetic(size)
        with tempfile.TemporaryDirectory() as home:
            store = Store(f"bench-{size}", path=home)
            store.embeddings.embed_query("warm up")
            start = time.perf_counter()
            store.add(passages)
            ingest_rate = size / (time.perf_counter() - start)
            start = time.perf_counter()
            store.retrieve(queries[0], 5, mode="bm25")  # builds the BM25 index once
            build = time.perf_counter() - start
            p50 = {}
            for mode in ("dense", "bm25", "hybrid"):
                times = []
                for q in queries:
                    start = time.perf_counter()
                    store.retrieve(q, 5, mode=mode)
                    times.append((time.perf_counter() - start) * 1000)
                p50[mode] = statistics.median(times)
        print(f"{size:>9}{ingest_rate:>10.0f}{p50['dense']:>14.1f}{p50['bm25']:>13.1f}{build:>14.2f}{p50['hybrid']:>15.1f}")


if __name__ == "__main__":
    main()
