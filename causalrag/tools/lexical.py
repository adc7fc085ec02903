"""BM25 for a whole collection that scales and that processes share: a sparse term-document matrix in
files beside the collection, memory-mapped by every process that reads it.

The scores are rank_bm25's ``BM25Okapi`` (k1 = 1.5, b = 0.75, a negative idf floored at 0.25 × the
mean idf), computed only where a query term occurs (elsewhere rank_bm25 adds exactly 0), so rankings
match it; a sub-pool (``rows``) gets its own statistics, as a ``BM25Okapi`` over those passages would.
rank_bm25 keeps a dict of counts per passage and scores every passage for every query term: at 100k
passages that is gigabytes per process and a Python loop over the collection per term.

Files: ``<folder>/<name>/{ids,lengths,indptr,terms,counts,vocab}.npy``, written into a temporary
folder and renamed under a lock, so a reader never sees half an index; any change to the collection
drops them and the next search rebuilds them once for all processes.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
from array import array
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
from scipy import sparse

K1, B, EPSILON = 1.5, 0.75, 0.25  # rank_bm25's BM25Okapi defaults
PARTS = ("ids", "lengths", "indptr", "terms", "counts", "vocab")


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens for BM25."""
    return re.findall(r"\w+", text.lower())


@dataclass(frozen=True)
class LexicalIndex:
    ids: np.ndarray
    """Passage ids, one per row."""
    lengths: np.ndarray
    """Tokens per passage."""
    matrix: sparse.csr_matrix
    """Term counts: one row per passage, one column per entry of ``vocab``."""
    vocab: np.ndarray
    """Sorted terms (a query term is found by binary search: no dictionary to build on load)."""

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str]) -> LexicalIndex:
        """Counts as flat int arrays (not a dict per passage): 100k passages build in a few hundred MB."""
        vocab: dict[str, int] = {}
        terms, values = array("i"), array("i")
        indptr, lengths = array("q", [0]), array("q")
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
        matrix = sparse.csr_matrix(
            (np.frombuffer(values, dtype=np.int32), rank[np.frombuffer(terms, dtype=np.int32)], np.frombuffer(indptr, dtype=np.int64)),
            shape=(len(lengths), len(words)),
        )
        return cls(np.array(ids, dtype=str), np.frombuffer(lengths, dtype=np.int64), matrix, words[order])

    def __len__(self) -> int:
        return len(self.ids)

    @staticmethod
    def _statistics(matrix: sparse.csr_matrix, lengths: np.ndarray) -> tuple:
        """What every query over these passages reuses: term columns, document frequencies, idf, the
        floor for negative idf, and each passage's length normalization."""
        df = np.bincount(matrix.indices, minlength=matrix.shape[1])
        idf = np.log(matrix.shape[0] - df + 0.5) - np.log(df + 0.5)
        floor = EPSILON * idf[df > 0].sum() / max(1, int((df > 0).sum()))
        lengths = lengths.astype(np.float64)
        norm = K1 * (1 - B + B * lengths / (lengths.sum() / max(1, matrix.shape[0])))
        return matrix.tocsc(), df, idf, floor, norm

    @cached_property
    def _whole(self) -> tuple:
        return self._statistics(self.matrix, self.lengths)

    def scores(self, query: str, rows: np.ndarray | None = None) -> np.ndarray:
        """BM25Okapi score of every passage (of ``rows`` only, with their own statistics, when given)."""
        columns, df, idf, floor, norm = self._whole if rows is None else self._statistics(self.matrix[rows], self.lengths[rows])
        score = np.zeros(columns.shape[0])
        for word in tokenize(query):  # repeated words count again, as in rank_bm25
            t = int(np.searchsorted(self.vocab, word))
            if t == len(self.vocab) or self.vocab[t] != word or not df[t]:
                continue
            where = columns.indices[columns.indptr[t] : columns.indptr[t + 1]]
            tf = columns.data[columns.indptr[t] : columns.indptr[t + 1]].astype(np.float64)
            weight = idf[t] if idf[t] >= 0 else floor
            score[where] += weight * (tf * (K1 + 1) / (tf + norm[where]))
        return score

    def save(self, folder: Path) -> None:
        m = self.matrix
        tmp = folder.with_name(f"{folder.name}.tmp{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        for name, array in zip(PARTS, (self.ids, self.lengths, m.indptr, m.indices, m.data, self.vocab)):
            np.save(tmp / f"{name}.npy", array)
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)

    @classmethod
    def load(cls, folder: Path) -> LexicalIndex:
        """Memory-mapped: processes on one machine share the pages."""
        ids, lengths, indptr, terms, counts, vocab = (np.load(folder / f"{n}.npy", mmap_mode="r") for n in PARTS)
        matrix = sparse.csr_matrix((counts, terms, indptr), shape=(len(ids), len(vocab)))
        return cls(ids, lengths, matrix, vocab)


class SharedIndex:
    """The lexical index of one collection: in files at ``folder`` (shared by processes), or in this process only."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._index: LexicalIndex | None = None
        self._stamp: int | None = None

    @contextmanager
    def _locked(self):
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        with open(self.folder.with_name(f"{self.folder.name}.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _on_disk(self) -> LexicalIndex | None:
        try:
            stamp = (self.folder / "ids.npy").stat().st_mtime_ns
        except FileNotFoundError:
            return None
        if stamp != self._stamp:
            self._index, self._stamp = LexicalIndex.load(self.folder), stamp
        return self._index

    def get(self, count: int, passages: Callable[[], tuple[list[str], list[str]]]) -> LexicalIndex:
        """The index of a collection of ``count`` passages, built from ``passages()`` (ids, texts) when
        missing or stale — once: another process waiting on the lock then loads what was built."""
        if self.folder is None:
            if self._index is None or len(self._index) != count:
                self._index = LexicalIndex.build(*passages())
            return self._index
        index = self._on_disk()
        if index is not None and len(index) == count:
            return index
        with self._locked():
            index = self._on_disk()
            if index is None or len(index) != count:
                LexicalIndex.build(*passages()).save(self.folder)
                index = self._on_disk()
        return index

    def drop(self) -> None:
        """The collection changed: forget the index (the next search rebuilds it)."""
        self._index = self._stamp = None
        if self.folder is not None:
            with self._locked():
                shutil.rmtree(self.folder, ignore_errors=True)
