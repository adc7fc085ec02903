"""The causal inference score (CIS, paper §4.1) and its query-independent p(K) cache.

    CIS(Q → K) = log p(K | Q) − log p(K)

both terms being sums of token log-probabilities of the passage K under the causal LM
(paper §4.1, "Entailment confidence" and "Correction for self-confirmation bias").

* log p(K | Q): the prefix (see :mod:`causalrag.prompts.cis`) is the same for every candidate
  of one query, so one ``llm.logprob`` call scores all N candidates in batches, the prefix run
  once and its KV cache shared; the priors the cache lacks ride in the same call.
* log p(K): query-independent, so it is computed once per (model, passage text) and kept in a
  small SQLite side store ``$CAUSALRAG_HOME/cis_prior.sqlite`` keyed by the model name and the
  SHA-1 of the exact text scored; a later query (or process) reads it back. Missing values are
  computed lazily in one batched call; :meth:`CISScorer.precompute` fills the cache ahead of time
  (``causalrag distill-cis`` does it for a whole collection). We chose a side store over Chroma
  metadata so a store can be scored by several models and in-memory pools share the cache.
* ``use_prior=False`` is the paper's "w/o p(K)" ablation (§5.3): CIS = log p(K | Q), and p(K) is
  neither computed nor read.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from langchain_core.documents import Document

from causalrag.config import settings
from causalrag.prompts.cis import PRIOR_PREFIX, Form, passage_text, query_prefix
from causalrag.tools.backends.base import LLM


def text_key(text: str) -> str:
    """The cache key of a scored text: the SHA-1 of its UTF-8 bytes, in hex."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class PriorCache:
    """log p(K) per (model name, text hash): an in-process dict in front of a SQLite file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._memory: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE IF NOT EXISTS prior (model TEXT, key TEXT, logp REAL, PRIMARY KEY (model, key))")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def get(self, model: str, keys: Sequence[str]) -> dict[str, float]:
        """The cached log p(K) of ``model`` for those of ``keys`` it holds."""
        found = {k: self._memory[(model, k)] for k in keys if (model, k) in self._memory}
        missing = [k for k in keys if k not in found]
        for start in range(0, len(missing), 500):  # SQLite's bound-parameter limit
            chunk = missing[start : start + 500]
            marks = ",".join("?" * len(chunk))
            with self._connect() as db:
                rows = db.execute(f"SELECT key, logp FROM prior WHERE model = ? AND key IN ({marks})", [model, *chunk])
                for key, logp in rows:
                    found[key] = logp
                    self._memory[(model, key)] = logp
        return found

    def put(self, model: str, values: dict[str, float]) -> None:
        """Store ``model``'s log p(K) values by key, in memory and in the file."""
        with self._lock, self._connect() as db:
            db.executemany("INSERT OR REPLACE INTO prior VALUES (?, ?, ?)", [(model, k, v) for k, v in values.items()])
        self._memory.update({(model, k): v for k, v in values.items()})

    def __len__(self) -> int:
        with self._connect() as db:
            count: int = db.execute("SELECT COUNT(*) FROM prior").fetchone()[0]
            return count


@lru_cache(maxsize=8)
def _cache_at(path: str) -> PriorCache:
    return PriorCache(path)


def default_prior_cache() -> PriorCache:
    """The process-wide cache under the current ``CAUSALRAG_HOME``."""
    return _cache_at(str(settings().home / "cis_prior.sqlite"))


@dataclass(frozen=True)
class CISScore:
    """One candidate's CIS and the two log-probabilities it is made of."""

    cis: float
    """CIS(Q → K) = log p(K|Q) − log p(K) (or log p(K|Q) alone under the ablation)."""
    logp_k_given_q: float
    logp_k: float | None
    """None when the ablation drops the p(K) term."""


class CISScorer:
    """Scores candidate passages for a question with a causal LM (``llm.logprob``).

    ``prior_hits`` / ``prior_computed`` count cache reads and fresh p(K) computations, so
    callers can show that a second query recomputes nothing.
    """

    def __init__(self, llm: LLM, *, form: Form = "qa", use_prior: bool = True, cache: PriorCache | None = None) -> None:
        self.llm = llm
        self.form = form
        self.use_prior = use_prior
        self.cache = cache if cache is not None else default_prior_cache()
        self.prior_hits = 0
        self.prior_computed = 0

    @property
    def model_name(self) -> str:
        """The model's name as the prior cache keys it (its class name when it has none)."""
        return str(getattr(self.llm, "name", type(self.llm).__name__))

    def _cached_priors(self, texts: Sequence[str]) -> tuple[list[str], dict[str, float], dict[str, str]]:
        """Each text's cache key, the priors the cache knows, and the texts (by key) it lacks."""
        keys = [text_key(t) for t in texts]
        known = self.cache.get(self.model_name, list(dict.fromkeys(keys)))
        self.prior_hits += len(set(keys) & set(known))
        return keys, known, {k: t for k, t in zip(keys, texts, strict=True) if k not in known}

    def _store_priors(self, known: dict[str, float], todo: dict[str, str], values: Sequence[float]) -> None:
        fresh = dict(zip(todo, map(float, values), strict=True))
        self.cache.put(self.model_name, fresh)
        known.update(fresh)
        self.prior_computed += len(todo)

    def priors(self, texts: Sequence[str]) -> list[float]:
        """Log p(K) for each text: from the cache, the missing ones in one batched call (then cached)."""
        keys, known, todo = self._cached_priors(texts)
        if todo:
            self._store_priors(known, todo, self.llm.logprob([PRIOR_PREFIX] * len(todo), list(todo.values())))
        return [known[k] for k in keys]

    def precompute(self, docs: Sequence[Document]) -> int:
        """Fill the p(K) cache for ``docs`` (e.g. at ingest time); returns how many were computed."""
        before = self.prior_computed
        self.priors([passage_text(d) for d in docs])
        return self.prior_computed - before

    def conditionals(self, question: str, texts: Sequence[str]) -> list[float]:
        """Log p(K | Q) for every candidate in one batched call (one shared prefix → one KV cache)."""
        if not texts:
            return []
        prefix = query_prefix(question, self.form)
        return [float(v) for v in self.llm.logprob([prefix] * len(texts), list(texts))]

    def score(self, question: str, docs: Sequence[Document]) -> list[CISScore]:
        """CIS of every candidate: log p(K | Q) and the uncached log p(K) in ONE batched scoring call."""
        texts = [passage_text(d) for d in docs]
        if not self.use_prior:
            return [CISScore(c, c, None) for c in self.conditionals(question, texts)]
        keys, known, todo = self._cached_priors(texts)
        prefixes = [query_prefix(question, self.form)] * len(texts) + [PRIOR_PREFIX] * len(todo)
        values = [float(v) for v in self.llm.logprob(prefixes, texts + list(todo.values()))] if prefixes else []
        conditional = values[: len(texts)]
        if todo:
            self._store_priors(known, todo, values[len(texts) :])
        return [CISScore(c - known[k], c, known[k]) for c, k in zip(conditional, keys, strict=True)]
