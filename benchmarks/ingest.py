"""Ingest speed against its limit, in one run: passages/s of ``Store.add`` (embed + Chroma upsert) vs
raw sentence-transformers ``encode`` of the very same texts (the embedding model is the bound on a CPU),
and raw ``encode`` at several batch sizes (how the embedding batch size was chosen).

Passages are synthetic ~60-word texts from the bundled HotpotQA sentences (``benchmarks/store.py``'s).
The sides alternate ``--repeats`` times and the best of each is kept, so a busy machine hurts both alike.

Usage: ``python benchmarks/ingest.py [--n 2000] [--repeats 2] [--batch-sizes 16,32,64,128] [--chunks 128,1024]``
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from store import synthetic  # noqa: E402  (benchmarks/ is the script's folder)

from causalrag.tools.encoders import EMBED_BATCH, default_embeddings
from causalrag.tools.store import Store


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch-sizes", default="16,32,64,128")
    parser.add_argument(
        "--chunks", default="128,1024", help="Store.add chunk sizes (passages per embedding call and upsert)."
    )
    args = parser.parse_args()
    embeddings = default_embeddings()
    model = embeddings._client  # the SentenceTransformer that langchain-huggingface wraps
    print(f"{args.n} passages; {len(os.sched_getaffinity(0))} cores; load average {os.getloadavg()}", flush=True)
    best: dict[str, float] = {}
    for repeat in range(args.repeats):
        passages = synthetic(args.n, seed=repeat)  # new texts each time: nothing cached anywhere
        texts = [f"{p.title}\n{p.text}" for p in passages]
        sizes = [EMBED_BATCH, *(int(b) for b in args.batch_sizes.split(",") if int(b) != EMBED_BATCH)]
        for size in sizes:
            start = time.perf_counter()
            model.encode(texts, batch_size=size, normalize_embeddings=True)
            name = f"raw encode, batch {size}"
            best[name] = max(best.get(name, 0.0), args.n / (time.perf_counter() - start))
        for chunk in map(int, args.chunks.split(",")):
            with tempfile.TemporaryDirectory() as home:
                store = Store(f"ingest-{repeat}", path=home, embeddings=embeddings)
                start = time.perf_counter()
                store.add(passages, batch_size=chunk)
                name = f"Store.add, chunks of {chunk}"
                best[name] = max(best.get(name, 0.0), args.n / (time.perf_counter() - start))
    raw = best[f"raw encode, batch {EMBED_BATCH}"]
    for name, rate in best.items():
        print(f"{name:>24}: {rate:7.1f} passages/s  ({rate / raw:.2f}× raw encode at the default batch)")
    print(f"goal: Store.add ≥ 0.8× raw encode; load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
