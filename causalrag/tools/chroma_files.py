"""Is a persistent Chroma folder damaged? The checks that turn a damaged file into one sentence.

A Chroma folder holds ``chroma.sqlite3`` (passages, metadata and the write log) and, per collection, an
HNSW segment folder (``header.bin``, ``data_level0.bin``, ``link_lists.bin``, ...). Chroma meets most
damage with an exception (:func:`damage_in`, and :func:`sqlite_check` for what its message does not
say), but two kinds it does not survive, so they are checked before Chroma opens the folder:

* a ``chroma.sqlite3`` that is empty or not SQLite: Chroma would start a new, empty database over it
  (:func:`check_database`);
* an HNSW graph whose links point outside the index: hnswlib follows them and the process dies of a
  segmentation fault (:func:`vector_index_damage`, which reads the graph's links: about a tenth of the
  index file, once per process).

Nothing here writes to the folder.
"""

from __future__ import annotations

import math
import sqlite3
import struct
from pathlib import Path

import numpy as np

from causalrag.errors import DamagedStoreError

SQLITE_HEADER = b"SQLite format 3\x00"
SQLITE_WORDS = ("database disk image is malformed", "file is not a database")
"""SQLite's own words for SQLITE_CORRUPT / SQLITE_NOTADB, as they reach us inside Chroma's errors."""
CHROMA_WORDS = {
    "Failed to pull logs from the log store": "Chroma cannot read its write log",
    "Failed to apply logs to the metadata segment": "Chroma cannot apply its write log to the passages",
    "Failed to apply logs to the hnsw segment writer": "Chroma cannot apply its write log to the vector index",
    "Error loading hnsw index": "Chroma cannot load the vector index",
    "Error deserializing pickle file": "Chroma cannot read the vector index's id map",
    "Error reading from metadata segment reader": "Chroma cannot read its metadata segment",
    "error occurred while decoding column": "Chroma cannot decode a stored value",
    # the thread that applies the write log panicked on a row it cannot decode (later calls: "Failed to send request")
    "backfill request to compactor: Failed to": "Chroma stopped reading its write log at a row it cannot decode",
}
"""Chroma's words (1.5) when what it reads back is not what it wrote (the write log and rows in ``chroma.sqlite3``,
the HNSW segment's files), most specific first, and what they mean."""

# hnswlib's index header as Chroma persists it (header.bin, version 1): version, offsetLevel0,
# max_elements, cur_element_count, size_data_per_element, label_offset, offsetData, maxlevel,
# enterpoint_node, maxM, maxM0, M, mult, ef_construction.
_HEADER = struct.Struct("<iQQQQQQiIQQQdQ")
_LIST = 4
"""Bytes of a link list's header (its count in the low 16 bits) and of one neighbour id."""


def check_database(folder: str | Path) -> None:
    """Raise DamagedStoreError when ``folder``'s ``chroma.sqlite3`` exists but is empty or not SQLite.

    Chroma would silently start a new, empty database over such a file.
    """
    db = Path(folder) / "chroma.sqlite3"
    if not db.exists():
        return
    with db.open("rb") as fh:
        header = fh.read(len(SQLITE_HEADER))
    if not header:
        raise DamagedStoreError(str(db), "it is empty (0 bytes), so every collection in it is gone")
    if header != SQLITE_HEADER:
        raise DamagedStoreError(str(db), "it is not an SQLite database")


def _bad_links(lists: np.ndarray, most: int, nodes: int) -> bool:
    """Whether any link list counts more than ``most`` neighbours or names a node outside ``0..nodes-1``.

    ``lists`` holds one link list per row, as u32: a count, then ``most`` neighbour ids.
    """
    counts = lists[:, 0] & 0xFFFF  # the upper bytes hold hnswlib's deleted mark
    used = np.arange(most) < counts[:, None]
    return bool((counts > most).any() or (used & (lists[:, 1 : most + 1] >= nodes)).any())


def vector_index_damage(segment: Path) -> str | None:
    """What is wrong with an HNSW segment folder's graph, or None.

    The graph is ``header.bin``, ``data_level0.bin`` and ``link_lists.bin``; None means its links are
    sound or its format is not the one we know.
    """
    data = (segment / "header.bin").read_bytes()
    if len(data) != _HEADER.size or _HEADER.unpack(data)[0] != 1:
        return None if len(data) == _HEADER.size else "header.bin has the wrong size"
    _, level0_at, _, nodes, row, label_at, vector_at, top, entry, most, most0, m, mult, ef = _HEADER.unpack(data)
    # hnswlib's relations: maxM = M, maxM0 = 2M, mult = 1/ln(M), ef_construction >= M; a row is links, vector, label
    if not (
        level0_at == 0 and 2 <= m == most < 2**15 and most0 == 2 * m and math.isclose(mult, 1 / math.log(m))
        and m <= ef < 2**31 and vector_at == _LIST * (most0 + 1) and vector_at < label_at == row - 8
    ):
        return "header.bin does not describe an index hnswlib wrote"
    if nodes and (entry >= nodes or not 0 <= top < 64):
        return "header.bin names an entry point outside the index"
    level0, upper = segment / "data_level0.bin", segment / "link_lists.bin"
    if level0.stat().st_size < nodes * row or not upper.exists():
        return "data_level0.bin is shorter than its header says" if upper.exists() else "link_lists.bin is missing"
    rows = np.memmap(level0, dtype=np.uint8, mode="r", shape=(nodes, row)) if nodes else np.zeros((0, row), np.uint8)
    if _bad_links(np.ascontiguousarray(rows[:, :vector_at]).view("<u4"), most0, nodes):
        return "data_level0.bin links to nodes that do not exist"
    raw, at, block = upper.read_bytes(), 0, _LIST * (most + 1)
    for _ in range(nodes):  # per node: its upper levels' size in bytes, then one link list per level
        if at + 4 > len(raw):
            return "link_lists.bin is shorter than the index"
        (size,) = struct.unpack_from("<I", raw, at)
        at += 4
        if size % block or size // block > top or at + size > len(raw):
            return "link_lists.bin has a link list of an impossible size"
        if size and _bad_links(np.frombuffer(raw, "<u4", size // 4, at).reshape(-1, most + 1), most, nodes):
            return "link_lists.bin links to nodes that do not exist"
        at += size
    return None if at == len(raw) else "link_lists.bin is longer than the index"


def check_vector_indexes(folder: str | Path) -> None:
    """Raise DamagedStoreError when an HNSW segment in ``folder`` links outside itself (hnswlib would crash)."""
    for header in sorted(Path(folder).glob("*/header.bin")):
        reason = vector_index_damage(header.parent)
        if reason:
            raise DamagedStoreError(str(folder), f"its vector index {header.parent.name}: {reason}")


def sqlite_check(folder: str | Path) -> str | None:
    """SQLite's ``quick_check`` of ``folder``'s ``chroma.sqlite3`` (read-only): its first complaint, or None."""
    db = Path(folder) / "chroma.sqlite3"
    try:
        with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True) as conn:
            said = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        said = str(exc)
    lines = [line for line in said.splitlines() if not line.startswith("***")]  # "*** in database main ***"
    return None if said == "ok" else (lines or [said])[0]


def chroma_panic(exc: BaseException) -> bool:
    """Whether ``exc`` is a panic of Chroma's Rust core.

    That is pyo3's PanicException, a BaseException (e.g. on a database Chroma cannot read while it starts).
    """
    return type(exc).__module__ == "pyo3_runtime" and type(exc).__name__ == "PanicException"


def damage_in(folder: str | Path, exc: BaseException) -> DamagedStoreError | None:
    """The one-sentence error for ``exc`` when it comes from a damaged file, else None.

    ``exc`` was raised by Chroma on the persistent store in ``folder``; on None the caller re-raises it.
    """
    text, db = str(exc), str(Path(folder) / "chroma.sqlite3")
    said = next((words for words in SQLITE_WORDS if words in text), None)
    if said:
        return DamagedStoreError(db, f"SQLite says: {said}")
    said = next((words for words in CHROMA_WORDS if words in text), None)
    if said:
        return DamagedStoreError(str(folder), CHROMA_WORDS[said])
    if type(exc).__module__.partition(".")[0] not in ("chromadb", "sqlite3", "pyo3_runtime"):
        return None  # not Chroma's failure (a bad argument of ours, a network error): nothing to diagnose
    said = sqlite_check(folder)
    return DamagedStoreError(db, f"SQLite's check says: {said}") if said else None
