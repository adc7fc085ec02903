"""The BM25 first stage at scale, side by side in one run, on the same synthetic passages (seeded sentences
of HotpotQA paragraphs) and HotpotQA questions:

* ``rank_bm25`` — ``BM25Okapi``, the reference scores (what every process built from the whole collection once);
* ``hand-written`` — the sparse, memory-mapped index causalrag kept before bm25s (``LexicalIndex`` up to
  commit 1e371e6, reproduced below): rank_bm25's exact scores;
* ``bm25s okapi`` — :class:`causalrag.tools.lexical.LexicalIndex` now: bm25s with BM25Okapi's term weight
  (``method="atire"``) and idf (``idf_method="robertson"``) on our tokens, loaded with ``mmap=True``;
* ``bm25s lucene`` — bm25s's default variant on the same tokens, for comparison.

For each: build seconds, memory (tracemalloc: held after the build, peak while building), query p50/p95 on
the saved and reloaded index, the share of rank_bm25's top 10 found in its top 10 (overlap; also of the top 10
of rank_bm25 with ``epsilon=0``) and the queries whose top 10 is rank_bm25's list; for the saved indexes, file
size and what a new process holds after loading and 20 queries (anonymous memory: not the shared page cache).
Last, whether the variants retrieve as well: the share of gold paragraphs in the top 2 and 5 of HotpotQA-20,
in each question's own pool of 10 paragraphs (distractor) and among all 200 (open).

Usage: ``python benchmarks/lexical.py [--n 100000] [--queries 50]``
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from array import array
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from _needs import need

need("dev", "rank_bm25")

import numpy as np  # noqa: E402
from rank_bm25 import BM25Okapi  # noqa: E402
from scipy import sparse  # noqa: E402
from store import percentile, synthetic  # noqa: E402  (benchmarks/ is the script's folder)

from causalrag.corpus import hotpotqa_questions  # noqa: E402
from causalrag.eval.datasets import load_dataset  # noqa: E402
from causalrag.eval.settings import gold_ids  # noqa: E402
from causalrag.tools.lexical import LexicalIndex, tokenize  # noqa: E402

K1, B, EPSILON = 1.5, 0.75, 0.25


class HandWritten:
    """The index causalrag wrote by hand before bm25s: term counts as a CSR matrix in .npy files, memory-mapped;
    BM25Okapi computed at query time (negative idf floored at EPSILON × the mean idf, as rank_bm25)."""

    PARTS = ("ids", "lengths", "indptr", "terms", "counts", "vocab")

    def __init__(self, ids, lengths, matrix, vocab) -> None:
        self.ids, self.lengths, self.matrix, self.vocab = ids, lengths, matrix, vocab
        df = np.bincount(matrix.indices, minlength=matrix.shape[1])
        self.idf = np.log(matrix.shape[0] - df + 0.5) - np.log(df + 0.5)
        self.floor = EPSILON * self.idf[df > 0].sum() / max(1, int((df > 0).sum()))
        lengths = np.asarray(lengths, dtype=np.float64)
        self.norm = K1 * (1 - B + B * lengths / (lengths.sum() / max(1, matrix.shape[0])))
        self.df, self.columns = df, matrix.tocsc()

    @classmethod
    def build(cls, ids, texts) -> HandWritten:
        vocab: dict[str, int] = {}
        terms, values, indptr, lengths = array("i"), array("i"), array("q", [0]), array("q")
        for text in texts:
            counts = Counter(tokenize(text))
            terms.extend(vocab.setdefault(w, len(vocab)) for w in counts)
            values.extend(counts.values())
            indptr.append(len(terms))
            lengths.append(sum(counts.values()))
        words = np.array(list(vocab) or [""], dtype=str)
        order = np.argsort(words)
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        matrix = sparse.csr_matrix((np.frombuffer(values, dtype=np.int32), rank[np.frombuffer(terms, dtype=np.int32)],
                                    np.frombuffer(indptr, dtype=np.int64)), shape=(len(lengths), len(words)))
        return cls(np.array(ids, dtype=str), np.frombuffer(lengths, dtype=np.int64), matrix, words[order])

    def scores(self, query: str) -> np.ndarray:
        score, c = np.zeros(self.columns.shape[0]), self.columns
        for word in tokenize(query):
            t = int(np.searchsorted(self.vocab, word))
            if t == len(self.vocab) or self.vocab[t] != word or not self.df[t]:
                continue
            where, tf = c.indices[c.indptr[t]:c.indptr[t + 1]], c.data[c.indptr[t]:c.indptr[t + 1]].astype(np.float64)
            weight = self.idf[t] if self.idf[t] >= 0 else self.floor
            score[where] += weight * (tf * (K1 + 1) / (tf + self.norm[where]))
        return score

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True)
        m = self.matrix
        for name, part in zip(
            self.PARTS, (self.ids, self.lengths, m.indptr, m.indices, m.data, self.vocab), strict=True
        ):
            np.save(folder / f"{name}.npy", part)

    @classmethod
    def load(cls, folder: Path) -> HandWritten:
        ids, lengths, indptr, terms, counts, vocab = (np.load(folder / f"{n}.npy", mmap_mode="r") for n in cls.PARTS)
        return cls(ids, lengths, sparse.csr_matrix((counts, terms, indptr), shape=(len(ids), len(vocab))), vocab)


class NoFloor(HandWritten):
    """rank_bm25's BM25Okapi with ``epsilon=0`` (a negative idf adds 0), exactly: bm25s okapi's target."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.floor = 0.0


class Lucene(LexicalIndex):
    """bm25s's default variant (Lucene's idf, never negative) on the same tokens."""

    METHOD = {"method": "lucene", "idf_method": "lucene"}


def gold_recall(kind: type, k: int, setting: str) -> float:
    """Mean share of each HotpotQA-20 question's gold paragraphs in the top ``k`` (distractor: its own pool)."""
    dataset = load_dataset("hotpotqa")
    everything = list({p.id: p for e in dataset for p in e.passages}.values())
    shares = []
    for example in dataset:
        pool = example.passages if setting == "distractor" else everything
        index = kind.build([p.id for p in pool], [f"{p.title} {p.text}" for p in pool])
        top = {pool[i].id for i in np.argsort(-np.asarray(index.scores(example.question)), kind="stable")[:k]}
        shares.append(len(top & set(gold_ids(example))) / len(gold_ids(example)))
    return sum(shares) / len(shares)


def overlap(mine: list[int], reference: list[int]) -> float:
    return len(set(mine) & set(reference)) / len(reference)


def built(make: Callable[[], object]) -> tuple[object, float, float, float]:
    tracemalloc.start()
    start = time.perf_counter()
    index = make()
    seconds = time.perf_counter() - start
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return index, seconds, held / 2**20, peak / 2**20


AFTER_LOAD = """
import re, sys
sys.path.insert(0, sys.argv[3])
def anonymous():
    return int(re.search(r"Anonymous:\\s+(\\d+)", open("/proc/self/smaps_rollup").read()).group(1)) / 1024
import numpy, bm25s, lexical
from causalrag.corpus import hotpotqa_questions
kinds = {"hand-written": lexical.HandWritten, "bm25s okapi": lexical.LexicalIndex, "bm25s lucene": lexical.Lucene}
kind = kinds[sys.argv[2]]
questions = [q["question"] for q in hotpotqa_questions()]
before = anonymous()
index = kind.load(lexical.Path(sys.argv[1]))
for q in questions:
    index.scores(q)
print(f"{anonymous() - before:.0f}")
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    passages = synthetic(args.n)
    ids, texts = [p.id for p in passages], [f"{p.title} {p.text}" for p in passages]
    questions = [q["question"] for q in hotpotqa_questions()]
    queries = [questions[i % len(questions)] for i in range(args.queries)]
    cores = len(os.sched_getaffinity(0))
    print(f"{args.n} passages, {args.queries} queries; {cores} cores; load average {os.getloadavg()}", flush=True)

    reference, ref_s, ref_mb, ref_peak = built(lambda: BM25Okapi([tokenize(t) for t in texts]))
    ref_scores = [np.asarray(reference.get_scores(tokenize(q))) for q in queries]
    ref_times = []
    for q in queries:
        start = time.perf_counter()
        reference.get_scores(tokenize(q))
        ref_times.append(time.perf_counter() - start)
    del reference
    best = lambda scores: list(np.argsort(-scores, kind="stable")[:10])  # noqa: E731
    top = [best(s) for s in ref_scores]
    no_floor = NoFloor.build(ids, texts)
    top0 = [best(no_floor.scores(q)) for q in queries]
    del no_floor
    ref_shared0 = sum(map(overlap, top, top0)) / len(queries)
    rows = [("rank_bm25", ref_s, ref_mb, ref_peak, ref_times, 1.0, ref_shared0, len(queries), None, None)]
    work = Path(tempfile.mkdtemp())
    try:
        for name, kind in (("hand-written", HandWritten), ("bm25s okapi", LexicalIndex), ("bm25s lucene", Lucene)):
            index, seconds, mb, peak = built(lambda kind=kind: kind.build(ids, texts))
            folder = work / re.sub(r"\W", "_", name)
            index.save(folder)
            del index
            loaded = kind.load(folder)
            times, mine = [], []
            for q in queries:
                start = time.perf_counter()
                scores = loaded.scores(q)
                times.append(time.perf_counter() - start)
                mine.append(best(scores))
            shared, shared0 = (sum(map(overlap, mine, reference)) / len(queries) for reference in (top, top0))
            same = sum(a == b for a, b in zip(mine, top, strict=True))
            files = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20
            held = subprocess.run([sys.executable, "-c", AFTER_LOAD, str(folder), name, str(Path(__file__).parent)],
                                  capture_output=True, text=True, check=True).stdout.strip()
            rows.append((name, seconds, mb, peak, times, shared, shared0, same, files, held))
            print(f"  {name} done", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'index':<14}{'build s':>9}{'held MB':>9}{'peak MB':>9}{'p50 ms':>8}{'p95 ms':>8}{'overlap':>9}"
          f"{'ε=0 overlap':>13}{'same top 10':>13}{'files MB':>10}{'new process MB':>16}")
    for name, s, mb, peak, times, shared, shared0, same, files, held in rows:
        t = [x * 1000 for x in times]
        print(
            f"{name:<14}{s:>9.1f}{mb:>9.0f}{peak:>9.0f}{statistics.median(t):>8.1f}{percentile(t, 95):>8.1f}"
            f"{shared:>9.3f}{shared0:>13.3f}{f'{same}/{len(queries)}':>13}{'' if files is None else f'{files:.0f}':>10}"
            f"{held or '':>16}"
        )
    print(f"load average {os.getloadavg()}")
    print(f"{'HotpotQA-20 gold recall':<26}{'distractor @2':>14}{'@5':>6}{'open @2':>9}{'@5':>6}")
    for name, kind in (
        ("rank_bm25 (hand-written)", HandWritten),
        ("bm25s okapi", LexicalIndex),
        ("bm25s lucene", Lucene),
    ):
        found = [gold_recall(kind, k, setting) for setting in ("distractor", "open") for k in (2, 5)]
        print(f"{name:<26}{found[0]:>14.3f}{found[1]:>6.3f}{found[2]:>9.3f}{found[3]:>6.3f}")


if __name__ == "__main__":
    main()
