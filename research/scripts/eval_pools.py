"""Distractor-setting pools: a per-question in-memory Chroma collection vs an id filter on one shared store.

For the 20 bundled HotpotQA questions at K injected passages, each strategy builds the question's
pool and retrieves top-5 for the question (dense, then BM25), as one evaluation pass does. The
embedding model dominates a cold pass and costs the same for both, so texts are embedded once
(``CachedEmbeddings``, as the runner does) and the timed passes compare the stores themselves.
Printed: seconds per pass and the ratio to the id-filter strategy, measured side by side in one run.

Usage: ``OMP_NUM_THREADS=1 python research/scripts/eval_pools.py [--inject 8] [--repeats 2]``
"""

from __future__ import annotations

import argparse
import time

from causalrag.eval.datasets import load_dataset
from causalrag.eval.inject import with_distractors
from causalrag.eval.settings import CachedEmbeddings, Pools
from causalrag.tools.encoders import default_embeddings
from causalrag.tools.store import Store


def per_question(examples, embeddings) -> None:
    pools = Pools("distractor", examples, embeddings)
    for ex in examples:
        store = pools.store_for(ex)
        store.retrieve(ex.question, 5)
        store.retrieve(ex.question, 5, mode="bm25")
        pools.release(store)


def id_filter(examples, embeddings) -> None:
    store = Store.in_memory([p for e in examples for p in e.passages], embeddings=embeddings)
    for ex in examples:
        ids = [p.id for p in ex.passages]
        store.retrieve(ex.question, 5, ids=ids)
        store.retrieve(ex.question, 5, mode="bm25", ids=ids)
    store.client.delete_collection(store.collection)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--inject", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2, help="timed passes per strategy (after warm-up)")
    args = parser.parse_args()
    dataset = load_dataset("hotpotqa")
    examples = [with_distractors(e, args.inject, donors=dataset) for e in dataset]
    emb = CachedEmbeddings(default_embeddings())
    start = time.perf_counter()
    id_filter(examples, emb)  # embeds every passage and question once; both strategies then reuse it
    embed_seconds = time.perf_counter() - start
    strategies = {"id filter, shared store": id_filter, "per-question collection": per_question}
    timings = {}
    for name, run in strategies.items():
        start = time.perf_counter()
        for _ in range(args.repeats):
            run(examples, emb)
        timings[name] = (time.perf_counter() - start) / args.repeats
    reference = timings["id filter, shared store"]
    passages = sum(len(e.passages) for e in examples)
    print(
        f"20 HotpotQA questions, K={args.inject} ({passages} pool passages); "
        f"first pass with embedding: {embed_seconds:.1f}s"
    )
    print(f"{'strategy (embeddings cached)':<30}{'s/pass':>9}{'ratio':>8}")
    for name, seconds in timings.items():
        print(f"{name:<30}{seconds:>9.2f}{seconds / reference:>8.2f}")


if __name__ == "__main__":
    main()
