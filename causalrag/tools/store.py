"""Passage store: Chroma (through ``langchain-chroma``) for dense search, BM25 over the same passages.

* Embedded by default (``PersistentClient`` in ``$CAUSALRAG_HOME/chroma``), a Chroma server when a
  URL is given (``HttpClient``), or in memory (``Store.in_memory``) for per-question pools.
* Passage ids are content hashes, so ingesting the same text twice adds nothing; re-ingesting a
  file that changed replaces its passages, and a file deleted from an ingested folder loses its own.
* Files in any common encoding are read (detected with charset-normalizer); binary files and bad
  JSONL lines are skipped with a reason, the rest of the file kept.
* ``retrieve`` returns LangChain ``Document`` objects with ``id`` and ``metadata["score"]``.
* A Chroma server that does not answer, refuses the credentials (``CAUSALRAG_CHROMA_TOKEN`` /
  ``_HEADERS``) or lacks the tenant or database (``CAUSALRAG_CHROMA_TENANT`` / ``_DATABASE``), or a
  damaged database file, is one sentence naming the fix; a user's database is never replaced or
  repaired silently.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import json
import logging
import os
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec, TypeVar, cast

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from causalrag.config import settings
from causalrag.errors import (
    CausalRAGError,
    CollectionNotFoundError,
    EmptyCollectionError,
    StoreUnreachableError,
)
from causalrag.params import COLLECTION_NAME
from causalrag.text import readable
from causalrag.tools.chroma_files import check_database, check_vector_indexes, chroma_panic, damage_in
from causalrag.tools.lexical import LexicalIndex, SharedIndex, index_name

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import Include
    from langchain_chroma import Chroma

log = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")

Mode = Literal["dense", "bm25", "hybrid"]
TEXT_SUFFIXES = {".txt", ".md"}
PASSAGE_SUFFIXES = TEXT_SUFFIXES | {".jsonl"}
BINARY_SHARE = 0.1
"""A file whose decoded text is more than this share control or replacement characters is binary, not text."""
_RRF_K = 60  # reciprocal-rank-fusion constant (Cormack et al., 2009)
READ_PAGE = 5000  # rows per collection.get: Chroma binds SQL variables per row read, and SQLite caps them


@dataclass(frozen=True)
class Passage:
    """A passage to store: its title, its text and the file it came from."""

    title: str
    text: str
    source: str = ""

    @property
    def id(self) -> str:
        """Content hash of title and text: the same passage always gets the same id."""
        return hashlib.sha1(f"{self.title}\n{self.text}".encode()).hexdigest()[:16]

    def to_document(self, score: float | None = None) -> Document:
        """The passage as a LangChain ``Document`` (its id, title and source; ``score`` when given)."""
        meta: dict[str, str | float] = {"title": self.title, "source": self.source}
        if score is not None:
            meta["score"] = float(score)
        return Document(id=self.id, page_content=self.text, metadata=meta)


@dataclass
class IngestReport:
    """What an ingest read, added, removed and skipped."""

    files: int = 0
    passages: int = 0
    added: int = 0
    removed: int = 0
    """Stale passages removed: of files that changed, or were deleted from an ingested folder."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(file or file:line, reason) for what could not be read."""
    sources: list[str] = field(default_factory=list)
    """The files read (absolute paths, as in each passage's ``source``)."""


# --------------------------------------------------------------------------- reading files
def split_words(text: str, words: int = 100) -> list[str]:
    """~``words``-word passages (the papers' 100-word DPR-style chunks), split at paragraph/sentence ends."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(
        chunk_size=words,
        chunk_overlap=0,
        length_function=lambda s: len(s.split()),
        separators=["\n\n", "\n", ". ", "; ", " "],
    )
    return [" ".join(chunk.split()) for chunk in splitter.split_text(text) if chunk.strip()]


def decode_text(data: bytes) -> str:
    """Text in any common encoding, decoded.

    UTF-8 (a BOM dropped) comes first, else the encoding charset-normalizer detects (cp1250, cp1251,
    UTF-16 with a BOM, ...), else UTF-8 with replacement characters.

    Western European text (latin-1 / cp1252) wins a tie: on a short text charset-normalizer finds several
    encodings equally clean and took the first by name, cp1250, which reads "crème" as "crčme" and
    "£5" as "Ł5" (or a CJK one: "Für" as "F僡"). cp1252 (what browsers read latin-1 as) is taken when its
    text is no messier than the detected one's and the detector found the language no less coherent in
    it. Short Czech or Hungarian text in cp1250 is then read as cp1252 ("Dvořák" as "Dvoøák"): the bytes
    alone cannot tell them apart, and the bundled model reads English.
    """
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8) :].decode("utf-8", "replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        from charset_normalizer import from_bytes
        from charset_normalizer.md import mess_ratio

        found = from_bytes(data)
        best = found.best()
        if best is None:  # no text encoding fits (a binary file): the replacement characters mark it binary
            return data.decode("utf-8", "replace")
        try:
            western = data.decode("cp1252")
        except UnicodeDecodeError:  # a byte cp1252 leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D)
            western = None
        same = next((m for m in found if m.encoding == "cp1252"), None)
        if (
            western is not None
            and mess_ratio(western, 1.0) <= best.chaos
            and (same is None or same.coherence >= best.coherence)
        ):
            return western
        return str(best)


def is_binary(text: str) -> bool:
    """Mostly control or replacement characters (NUL bytes, an image renamed .txt): not text to ingest."""
    odd = sum(1 for ch in text if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\n\r\t") or 0x7F <= ord(ch) <= 0x9F)
    return not text.strip() or odd > BINARY_SHARE * len(text)


def _jsonl_passages(raw: str, source: str, words: int, problems: list[str]) -> list[Passage]:
    """Passages of every valid line; each bad line is named in ``problems`` and skipped, the rest kept."""
    passages = []
    for n, row_text in enumerate(raw.splitlines(), 1):
        if not row_text.strip():
            continue
        try:
            row = json.loads(row_text)
            title, text = str(row.get("title", "")), str(row["text"])
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
            problems.append(f"line {n} is not a JSON object with a 'text' field")
            continue
        passages += [Passage(readable(title), chunk, source) for chunk in split_words(readable(text), words)]
    return passages


def _read_file(path: Path, words: int, problems: list[str]) -> list[Passage]:
    """A file's passages; raises ValueError for a file that is not text, lists bad JSONL lines in ``problems``."""
    raw = decode_text(path.read_bytes())
    if is_binary(raw):
        raise ValueError("no text in it (empty, or binary such as NUL bytes)")
    source = str(path.resolve())
    if path.suffix == ".jsonl":
        passages = _jsonl_passages(raw, source, words, problems)
        if not passages:
            raise ValueError(problems[0] if problems else "no rows")
        return passages
    title = path.stem.replace("_", " ")
    return [Passage(title, chunk, source) for chunk in split_words(readable(raw), words)]


def read_passages(paths: Iterable[str | Path], words: int = 100) -> tuple[list[Passage], IngestReport]:
    """Passages from ``.txt``/``.md``/``.jsonl`` files or folders; what cannot be read is skipped with a reason."""
    report = IngestReport()
    passages: list[Passage] = []
    for root in map(Path, paths):
        if not root.exists():
            report.skipped.append((str(root), "no such file or folder"))
            continue
        files = (
            sorted(p for p in root.rglob("*") if p.suffix in PASSAGE_SUFFIXES and p.is_file())
            if root.is_dir()
            else [root]
        )
        for path in files:
            problems: list[str] = []
            try:
                found = _read_file(path, words, problems)
            except (OSError, ValueError) as exc:
                report.skipped.append((str(path), getattr(exc, "strerror", None) or str(exc) or type(exc).__name__))
                continue
            report.skipped += [(str(path), problem) for problem in problems]
            report.files += 1
            report.sources.append(found[0].source)
            passages += found
    for where, reason in report.skipped:
        log.warning("Skipped %s: %s.", where, reason)
    report.passages = len(passages)
    return passages, report


# --------------------------------------------------------------------------- the store
def _server(url: str) -> tuple[str, int, bool]:
    """(host, port, ssl) of a Chroma server URL; anything but http(s)://HOST[:PORT] is an error."""
    from urllib.parse import urlparse

    try:
        parsed = urlparse(url)
        host, port = parsed.hostname, parsed.port
    except ValueError:
        host = port = None
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https") or not host:
        raise StoreUnreachableError(url, "it is not an http:// or https:// URL")
    return host, port or 8000, parsed.scheme == "https"


class StoreRefusedError(CausalRAGError, PermissionError):
    """The Chroma server refused the credentials sent."""

    def __init__(self, url: str, status: int) -> None:
        super().__init__(
            f"The Chroma server at {url} refused the request (HTTP {status}): set CAUSALRAG_CHROMA_TOKEN (sent as "
            'Authorization: Bearer) or CAUSALRAG_CHROMA_HEADERS (a JSON object, e.g. '
            '{"x-chroma-token": "..."}) to credentials it accepts.'
        )


class StoreScopeError(CausalRAGError, LookupError):
    """The Chroma server has no such tenant or database."""

    def __init__(self, url: str, tenant: str, database: str | None) -> None:
        what = f"database {database!r} in tenant {tenant!r}" if database else f"tenant {tenant!r}"
        variable = "CAUSALRAG_CHROMA_DATABASE" if database else "CAUSALRAG_CHROMA_TENANT"
        super().__init__(
            f"The Chroma server at {url} has no {what}: create it "
            f"(chromadb.AdminClient) or set {variable} to one that exists."
        )


_REFUSED = (401, 403, 407)


def check_server(
    url: str, tenant: str = "default_tenant", database: str = "default_database", headers: dict[str, str] | None = None
) -> None:
    """Raise a one-sentence error unless the Chroma server at ``url`` answers, accepts and holds the scope.

    The server must answer, accept ``headers`` and hold ``tenant``/``database``; Chroma's v2 API is asked
    for its heartbeat, then the tenant, then the database.
    """
    from urllib.parse import quote

    import httpx

    host, port, ssl = _server(url)
    base = f"{'https' if ssl else 'http'}://{host}:{port}/api/v2"
    steps = [("heartbeat", None), (f"tenants/{quote(tenant, safe='')}", (tenant, None)),
             (f"tenants/{quote(tenant, safe='')}/databases/{quote(database, safe='')}", (tenant, database))]
    try:
        with httpx.Client(base_url=base, headers=headers or {}, timeout=10) as http:
            for path, scope in steps:
                status = http.get(path).status_code
                if status in _REFUSED:
                    raise StoreRefusedError(url, status)
                if status == 404 and scope:
                    raise StoreScopeError(url, *scope)
                if status != 200:
                    raise StoreUnreachableError(url, f"HTTP {status} from {base}/{path}: is it a Chroma server?")
    except httpx.TransportError as exc:
        raise StoreUnreachableError(url, "nothing answers there") from exc


@lru_cache(maxsize=8)
def _client(
    kind: str,
    where: str,
    tenant: str = "default_tenant",
    database: str = "default_database",
    headers: tuple[tuple[str, str], ...] = (),
) -> ClientAPI:
    import chromadb

    if kind == "http":
        host, port, ssl = _server(where)
        check_server(where, tenant, database, dict(headers))
        try:
            return chromadb.HttpClient(
                host=host, port=port, ssl=ssl, headers=dict(headers), tenant=tenant, database=database
            )
        except (ValueError, ConnectionError) as exc:  # chromadb: "Could not connect to a Chroma server"
            raise StoreUnreachableError(where, "nothing answers there") from exc
    if kind == "memory":
        return chromadb.EphemeralClient()
    check_database(where)
    check_vector_indexes(where)
    Path(where).mkdir(parents=True, exist_ok=True)
    try:
        return chromadb.PersistentClient(path=where)
    except BaseException:  # Chroma's Rust side panics with a BaseException
        # Chroma keeps the half-started system of a path that failed to open, and every later client of that
        # path would fail with an AttributeError instead of the reason: drop it (nothing on disk is touched)
        from chromadb.api.shared_system_client import SharedSystemClient

        SharedSystemClient._identifier_to_system.pop(where, None)
        raise


def _reported(method: Callable[Concatenate[Store, P], T]) -> Callable[Concatenate[Store, P], T]:
    """Chroma failures a person can act on become one sentence: a server that went away, a damaged database."""

    @functools.wraps(method)
    def wrapper(self: Store, /, *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(self, *args, **kwargs)
        except CausalRAGError:
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception) and not chroma_panic(exc):
                raise  # KeyboardInterrupt, SystemExit
            text = str(exc)
            if self.kind == "persistent" and (damage := damage_in(self.where, exc)):
                raise damage from exc
            if self.kind == "http" and (
                isinstance(exc, ConnectionError)
                or "connect" in text.lower()
                or type(exc).__name__.endswith(("ConnectError", "ConnectTimeout"))
            ):
                raise StoreUnreachableError(self.where, "it stopped answering") from exc
            if self.kind == "http" and any(
                words in text for words in ("Unauthorized", "Forbidden", "AuthError", "authorization")
            ):
                raise StoreRefusedError(self.where, 401 if "Forbidden" not in text else 403) from exc
            raise

    return wrapper


def stored_id(doc: Document) -> str:
    """The id of a passage read from a :class:`Store` (each carries the id it is stored under)."""
    return cast(str, doc.id)


class Store:
    """One Chroma collection of passages, with dense, BM25 and hybrid retrieval."""

    def __init__(
        self,
        collection: str,
        *,
        path: str | Path | None = None,
        url: str | None = None,
        embeddings: Embeddings | None = None,
        memory: bool = False,
        tenant: str | None = None,
        database: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Open ``collection``: embedded, on a Chroma server, or in memory.

        ``url`` (else ``CAUSALRAG_CHROMA_URL``) is a Chroma server; ``tenant``, ``database`` and ``headers``
        apply to it (else ``CAUSALRAG_CHROMA_TENANT`` / ``_DATABASE`` / ``_TOKEN`` and ``_HEADERS``).
        """
        if not COLLECTION_NAME.fullmatch(str(collection)):
            raise CausalRAGError(
                f"Collection name {collection!r} is not valid: use 3-512 letters, digits, dots, dashes or "
                "underscores, starting and ending with a letter or digit."
            )
        s = settings()
        url = url or (None if path or memory else s.chroma_url)
        if memory:
            self.kind, self.where = "memory", "memory"
        elif url:
            self.kind, self.where = "http", url
        else:
            self.kind, self.where = "persistent", str(Path(path or s.chroma_dir).expanduser())
        self.tenant = tenant or s.chroma_tenant
        self.database = database or s.chroma_database
        self.headers = dict(s.chroma_headers if headers is None and self.kind == "http" else headers or {})
        self.collection = collection
        self._embeddings = embeddings
        self._vectorstore: Chroma | None = None
        folder = self._lexical_folder()
        self._lexical = SharedIndex(folder and folder / index_name(collection), legacy=folder and folder / collection)

    @classmethod
    def in_memory(cls, passages: Sequence[Passage] = (), *, embeddings: Embeddings | None = None) -> Store:
        """A throw-away collection (e.g. one question's own paragraphs in the distractor setting)."""
        store = cls(f"tmp-{uuid.uuid4().hex[:12]}", memory=True, embeddings=embeddings)
        if passages:
            store.add(passages)
        return store

    # ---- plumbing
    @property
    def embeddings(self) -> Embeddings:
        """The embedding model (the process-wide default unless one was given)."""
        if self._embeddings is None:
            from causalrag.tools.encoders import default_embeddings

            self._embeddings = default_embeddings()
        return self._embeddings

    @property
    def client(self) -> ClientAPI:
        """The Chroma client of this store's kind and place, shared by stores that name the same one."""
        if self.kind == "http":
            return _client(self.kind, self.where, self.tenant, self.database, tuple(sorted(self.headers.items())))
        return _client(self.kind, self.where)

    @_reported
    def exists(self) -> bool:
        """Whether the collection exists."""
        return self.collection in {c if isinstance(c, str) else c.name for c in self.client.list_collections()}

    @property
    def vectorstore(self) -> Chroma:
        """The ``langchain_chroma.Chroma`` vector store (e.g. ``store.vectorstore.as_retriever()``)."""
        if self._vectorstore is None:
            from langchain_chroma import Chroma

            self._vectorstore = Chroma(
                collection_name=self.collection,
                embedding_function=self.embeddings,
                client=self.client,
                collection_metadata={"hnsw:space": "cosine"},
            )
        return self._vectorstore

    def _collection(self, *, create: bool = False) -> Collection:
        if not create and not self.exists():
            where = self.where if self.kind != "persistent" else f"{self.where} (CAUSALRAG_HOME)"
            raise CollectionNotFoundError(self.collection, where)
        # langchain-chroma has no public call for precomputed embeddings or id-filtered queries
        return self.vectorstore._collection

    def _for_writing(self, *, create: bool = False) -> Collection:
        """The collection, once Chroma has applied its write log (``count`` does).

        A damaged log fails here, before rows are written into a log that cannot be read back.
        """
        collection = self._collection(create=create)
        collection.count()
        return collection

    @_reported
    def count(self) -> int:
        """How many passages the collection holds (0 when it does not exist)."""
        return self._collection().count() if self.exists() else 0

    # ---- writing
    @_reported
    def add(self, passages: Sequence[Passage], *, progress: bool = False, batch_size: int = 128) -> int:
        """Upsert passages not already present (by content id); returns how many were new."""
        collection = self._for_writing(create=True)
        unique = list({p.id: p for p in passages}.values())
        new: list[Passage] = []
        for start in range(0, len(unique), 1000):
            chunk = unique[start : start + 1000]
            have = set(collection.get(ids=[p.id for p in chunk], include=[])["ids"])
            new += [p for p in chunk if p.id not in have]
        batches: Iterable[int] = range(0, len(new), batch_size)
        if progress and new:
            from tqdm.auto import tqdm

            batches = tqdm(batches, desc=f"ingest → {self.collection}", unit="batch")
        for start in batches:
            batch = new[start : start + batch_size]
            vectors = self.embeddings.embed_documents([f"{p.title}\n{p.text}" if p.title else p.text for p in batch])
            collection.upsert(
                ids=[p.id for p in batch],
                embeddings=vectors,  # type: ignore[arg-type]  # chromadb's list[Sequence[float]] is invariant
                documents=[p.text for p in batch],
                metadatas=[{"title": p.title, "source": p.source} for p in batch],
            )
        if new:
            self._lexical.drop()
        return len(new)

    @_reported
    def ingest(
        self, paths: Iterable[str | Path], *, words: int = 100, progress: bool = True, keep_history: bool = False
    ) -> IngestReport:
        """Read files/folders, split into ~``words``-word passages, add the new ones, drop the stale ones.

        Stale passages are those of files read again and of files gone from the folders read; they stay
        with ``keep_history``.

        New passages go in before stale ones go out, so an interrupted ingest loses nothing and a
        rerun finishes it. Nothing read → nothing written (no empty collection is created).
        """
        roots = [Path(p) for p in paths]
        passages, report = read_passages(roots, words)
        if not passages:
            return report
        report.added = self.add(passages, progress=progress)
        if not keep_history:
            report.removed = self.remove(self._stale(passages, report.sources, roots))
        return report

    def _stale(self, passages: Sequence[Passage], sources: Sequence[str], roots: Sequence[Path]) -> list[str]:
        """Ids of passages that a file read now no longer has, or whose file left a folder read now."""
        current = {p.id for p in passages}
        read = set(sources)
        folders = tuple(str(r.resolve()) + os.sep for r in roots if r.is_dir())
        got = self._read(["metadatas"])
        stale = []
        for pid, meta in zip(got["ids"], got["metadatas"], strict=True):
            source = str((meta or {}).get("source", ""))
            if pid in current or not source:
                continue
            if source in read or (source.startswith(folders) and folders and not Path(source).exists()):
                stale.append(pid)
        return stale

    @_reported
    def remove(self, ids: Sequence[str]) -> int:
        """Delete passages by id; returns how many were asked to go."""
        if ids:
            collection = self._for_writing()
            for start in range(0, len(ids), 1000):
                collection.delete(ids=list(ids[start : start + 1000]))
            self._lexical.drop()
        return len(ids)

    # ---- reading
    def _require_passages(self) -> None:
        if self.count() == 0:
            self._collection()  # a missing collection raises CollectionNotFoundError first
            raise EmptyCollectionError(self.collection)

    def _read(self, include: Include, ids: Sequence[str] | None = None) -> dict[str, list[Any]]:
        """``collection.get`` of every passage (or of ``ids``) in pages of ``READ_PAGE`` rows.

        One get of a 100k-passage collection fails in Chroma's SQLite with "too many SQL variables".
        """
        collection = self._collection()
        got: dict[str, list[Any]] = {"ids": [], **{field: [] for field in include}}
        pages: Iterable[Mapping[str, Any]] = (  # a list under every key asked for in ``include``
            (
                collection.get(ids=list(ids[start : start + READ_PAGE]), include=include)
                for start in range(0, len(ids), READ_PAGE)
            )
            if ids is not None
            else (
                collection.get(include=include, limit=READ_PAGE, offset=start)
                for start in range(0, collection.count(), READ_PAGE)
            )
        )
        for page in pages:
            for key in got:
                got[key] += page[key]
        return got

    @_reported
    def get(self, ids: Sequence[str]) -> list[Document]:
        """The stored passages of ``ids``, in that order (ids not stored are left out)."""
        if not ids:  # Chroma rejects an empty id list; an empty pool simply has no passages
            return []
        got = self._read(["documents", "metadatas"], ids)
        by_id = {
            i: Document(id=i, page_content=d, metadata=dict(m or {}))
            for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        }
        return [by_id[i] for i in ids if i in by_id]

    @_reported
    def passages(self) -> list[Passage]:
        """Every passage of the collection."""
        got = self._read(["documents", "metadatas"])
        return [
            Passage((m or {}).get("title", ""), d, (m or {}).get("source", ""))
            for d, m in zip(got["documents"], got["metadatas"], strict=True)
        ]

    def _dense(self, query: str, k: int, ids: Sequence[str] | None) -> list[Document]:
        collection = self._collection()
        n = min(k, len(ids) if ids is not None else collection.count())
        if n <= 0:
            return []
        res: Mapping[str, Any] = collection.query(  # a list under every key asked for in ``include``
            query_embeddings=[self.embeddings.embed_query(query)],  # type: ignore[arg-type]  # as upsert's embeddings
            n_results=n,
            ids=list(ids) if ids is not None else None,
            include=["documents", "metadatas", "distances"],
        )
        return [
            Document(id=i, page_content=d, metadata={**(m or {}), "score": 1.0 - float(dist)})
            for i, d, m, dist in zip(
                res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0], strict=True
            )
        ]

    def _lexical_folder(self) -> Path | None:
        """The folder of the collections' BM25 indexes, for every process to share.

        It lies beside a persistent collection, under ``CAUSALRAG_HOME`` for a server's; an in-memory store
        keeps its index in memory (None).
        """
        if self.kind == "memory":
            return None
        server = f"{self.where}/{self.tenant}/{self.database}"  # a collection name is unique per tenant and database
        base = (
            Path(self.where) if self.kind == "persistent" else settings().home / "lexical" / re.sub(r"\W+", "_", server)
        )
        return base / "causalrag-lexical"

    def _lexical_texts(self) -> tuple[list[str], list[str]]:
        """Every passage's id and BM25 text (title and text), read from the collection once per index build."""
        got = self._read(["documents", "metadatas"])
        return got["ids"], [
            f"{(m or {}).get('title', '')} {d}" for d, m in zip(got["documents"], got["metadatas"], strict=True)
        ]

    def _bm25_search(self, query: str, k: int, ids: Sequence[str] | None) -> list[Document]:
        """BM25 over the whole collection (its shared index), or over a sub-pool with the pool's own statistics."""
        if ids is not None:  # a sub-pool (e.g. one question's paragraphs) is small: indexed on the spot
            pool = self.get(ids)
            scores = LexicalIndex.build(
                [stored_id(d) for d in pool], [f"{d.metadata.get('title', '')} {d.page_content}" for d in pool]
            ).scores(query)
            top = np.argsort(-scores, kind="stable")[:k]
            found = [(pool[i], scores[i]) for i in top]
        else:
            index = self._lexical.get(self.count(), self._lexical_texts)
            scores = index.scores(query)
            top = np.argsort(-scores, kind="stable")[:k]
            by_id = {d.id: d for d in self.get([str(index.ids[i]) for i in top])}
            found = [(by_id[str(index.ids[i])], scores[i]) for i in top if str(index.ids[i]) in by_id]
        return [
            Document(id=d.id, page_content=d.page_content, metadata={**d.metadata, "score": float(s)}) for d, s in found
        ]

    @_reported
    def retrieve(
        self, query: str, k: int = 5, *, mode: Mode = "dense", ids: Sequence[str] | None = None
    ) -> list[Document]:
        """Top-``k`` passages for ``query``, best first; ``ids`` restricts the search to those passages.

        ``hybrid`` fuses the dense and BM25 rankings (top 4k of each) by reciprocal rank. The query
        is cleaned first (undecodable bytes and control characters would break the embedding tokenizer).
        """
        query = readable(query)
        self._require_passages()
        if mode == "dense":
            docs = self._dense(query, k, ids)
        elif mode == "bm25":
            docs = self._bm25_search(query, k, ids)
        elif mode == "hybrid":
            fused: dict[str, float] = {}
            first: dict[str, Document] = {}
            for ranking in (self._dense(query, 4 * k, ids), self._bm25_search(query, 4 * k, ids)):
                for rank, doc in enumerate(ranking):
                    key = stored_id(doc)
                    fused[key] = fused.get(key, 0.0) + 1.0 / (_RRF_K + rank + 1)
                    first.setdefault(key, doc)
            best = sorted(fused, key=fused.__getitem__, reverse=True)[:k]
            docs = [
                Document(id=i, page_content=first[i].page_content, metadata={**first[i].metadata, "score": fused[i]})
                for i in best
            ]
        else:
            raise ValueError(f"Unknown retrieval mode {mode!r}: use dense, bm25 or hybrid.")
        for d in docs:
            d.metadata["retrieval"] = mode
        return docs
