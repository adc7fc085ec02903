r"""BM25 for a whole collection that scales and that processes share.

The index is bm25s's sparse one (every passage's term scores, precomputed), kept in files beside the
collection and memory-mapped by every process that reads it.

The scores are BM25Okapi's (k1 = 1.5, b = 0.75) on our tokens (lower-cased ``\w+`` words): bm25s's
``method="atire"`` is Okapi's term weight tf·(k1+1) / (tf + k1·(1 − b + b·|d|/avgdl)) and
``idf_method="robertson"`` its idf, log((N − df + 0.5) / (df + 0.5)). Where they differ from rank_bm25's
``BM25Okapi``: a term in more than half the passages (a negative idf) adds 0 here, where rank_bm25 adds
0.25 × the mean idf, i.e. rank_bm25 with ``epsilon=0``; measured at 100k passages in benchmarks/lexical.py
(the share of rank_bm25's top 10 found, query and build times, memory). A sub-pool (one question's own
paragraphs) is indexed on the spot, with its own statistics, as a BM25 over those passages alone.

Files: ``<folder>/<SHA-256 of the collection name>/`` (bm25s's ``.npy`` arrays and JSON vocabulary, and
``ids.npy``), written into a temporary folder and renamed under a lock, so a reader never sees half an index
and a collection name (up to 512 characters) never becomes a file name; any change to the collection drops
them and the next search rebuilds them once for all processes. Indexes of the earlier format (a folder named
after the collection) are not read: the first search rebuilds the index, and the old folder is removed.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import bm25s
import numpy as np

K1, B = 1.5, 0.75  # rank_bm25's BM25Okapi defaults


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens for BM25."""
    return re.findall(r"\w+", text.lower())


def index_name(collection: str) -> str:
    """The file name of a collection's index: a hash, whatever the collection is called."""
    return hashlib.sha256(collection.encode("utf-8")).hexdigest()


class LexicalIndex:
    """bm25s's BM25 over passages, with their ids (one row per passage)."""

    METHOD = {"method": "atire", "idf_method": "robertson"}
    """bm25s's variant: BM25Okapi's term weight and idf (module docstring)."""

    def __init__(self, ids: np.ndarray, bm25: bm25s.BM25 | None) -> None:
        self.ids = ids
        self.bm25 = bm25
        """None when no passage has a word: every score is 0 (bm25s cannot index that)."""

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str]) -> LexicalIndex:
        """Index ``texts`` (one passage each) under their ``ids``, in memory."""
        tokens = [tokenize(t) for t in texts]
        bm25 = None
        if any(tokens):
            bm25 = bm25s.BM25(k1=K1, b=B, **cls.METHOD)
            bm25.index(tokens, show_progress=False)
        return cls(np.array(ids, dtype=str), bm25)

    def __len__(self) -> int:
        return len(self.ids)

    def scores(self, query: str) -> np.ndarray:
        """The BM25 score of every passage for ``query`` (repeated words count again, as in rank_bm25)."""
        if self.bm25 is None:
            return np.zeros(len(self.ids))
        scores: np.ndarray = self.bm25.get_scores_from_ids(self.bm25.get_tokens_ids(tokenize(query)))
        return scores

    def save(self, folder: Path) -> None:
        """Write the index to ``folder``, replacing it whole (a reader never sees half an index)."""
        tmp = folder.with_name(f"{folder.name}.tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        if self.bm25 is not None:
            self.bm25.save(tmp, show_progress=False)
        np.save(tmp / "ids.npy", self.ids)
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)

    @classmethod
    def load(cls, folder: Path) -> LexicalIndex:
        """Memory-mapped: processes on one machine share the pages (the vocabulary is read into each)."""
        bm25 = None
        if (folder / "params.index.json").exists():  # absent: no passage had a word
            bm25 = bm25s.BM25.load(folder, mmap=True, show_progress=False)
        return cls(np.load(folder / "ids.npy", mmap_mode="r"), bm25)


class SharedIndex:
    """The lexical index of one collection: in files at ``folder`` (shared by processes), or in this process only."""

    def __init__(self, folder: Path | None, *, legacy: Path | None = None) -> None:
        self.folder = folder
        self.legacy = legacy
        """Where an index of the earlier format may lie (removed when the new one is built)."""
        self._index: LexicalIndex | None = None
        self._stamp: int | None = None

    @staticmethod
    @contextmanager
    def _locked(folder: Path) -> Iterator[None]:
        folder.parent.mkdir(parents=True, exist_ok=True)
        with open(folder.with_name(f"{folder.name}.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _on_disk(self, folder: Path) -> LexicalIndex | None:
        try:
            stamp = (folder / "ids.npy").stat().st_mtime_ns
        except FileNotFoundError:
            return None
        if stamp != self._stamp:
            self._index, self._stamp = LexicalIndex.load(folder), stamp
        return self._index

    def get(self, count: int, passages: Callable[[], tuple[list[str], list[str]]]) -> LexicalIndex:
        """The index of a collection of ``count`` passages, built from ``passages()`` when missing or stale.

        ``passages()`` gives (ids, texts). The index is built once: another process waiting on the lock then
        loads what was built.
        """
        folder = self.folder
        if folder is None:
            if self._index is None or len(self._index) != count:
                self._index = LexicalIndex.build(*passages())
            return self._index
        index = self._on_disk(folder)
        if index is not None and len(index) == count:
            return index
        with self._locked(folder):
            index = self._on_disk(folder)
            if index is None or len(index) != count:
                LexicalIndex.build(*passages()).save(folder)
                if self.legacy is not None:
                    shutil.rmtree(self.legacy, ignore_errors=True)
                index = self._on_disk(folder)
        assert index is not None, "the index was saved under the lock just now"
        return index

    def drop(self) -> None:
        """The collection changed: forget the index (the next search rebuilds it)."""
        self._index = self._stamp = None
        if self.folder is not None:
            with self._locked(self.folder):
                shutil.rmtree(self.folder, ignore_errors=True)
