"""The two retrieval settings of the evaluation, and the passage pools they retrieve from.

* ``distractor`` — each question retrieves only from its own pool (HotpotQA's 10 paragraphs plus
  any injected passages): ``ctx.ids`` filters one shared in-memory collection. An id filter rather
  than a throw-away collection per question because it is 2.8x faster (``research/scripts/eval_pools.py``
  compares the two: 0.61 s vs 1.71 s per pass over the 20 questions at K=8, embeddings cached); a
  method that retrieves without ``ctx.ids`` would see other questions' paragraphs, so the runner
  records evidence from outside the pool as ``leaked``.
* ``open`` — one collection of every paragraph of the dataset plus every question's injected
  passages at this K (a poisoned corpus, as in corpus-poisoning attacks), top-k over all of it.
  A dataset without pools (FlashRAG JSONL) retrieves from a named collection instead.

Gold evidence is known in both: the ids of the question's gold paragraphs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from langchain_core.embeddings import Embeddings

from causalrag.config import DEMO_COLLECTION
from causalrag.errors import CausalRAGError
from causalrag.eval.datasets import Example
from causalrag.eval.inject import gold_paragraphs, is_injected
from causalrag.tools.store import Store

Setting = Literal["distractor", "open"]
"""A retrieval setting: each question's own pool, or one collection of every paragraph."""
SETTINGS: tuple[str, ...] = ("distractor", "open")


class CachedEmbeddings(Embeddings):
    """Embeddings memoized by text: a paragraph shared by many pools is embedded once per run."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.cache: dict[str, list[float]] = {}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """The vectors of ``texts``, embedding only those not seen before."""
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            self.cache.update(zip(missing, self.inner.embed_documents(missing), strict=True))
        return [self.cache[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """The query vector of ``text``, cached apart from document vectors."""
        key = f"\x00query\x00{text}"  # query and document encoders may differ
        if key not in self.cache:
            self.cache[key] = self.inner.embed_query(text)
        return self.cache[key]


def gold_ids(example: Example) -> list[str]:
    """Ids of the example's gold paragraphs (the relevant evidence for recall / NDCG)."""
    return [p.id for p in gold_paragraphs(example) if not is_injected(p)]


class Pools:
    """The store for one K, and which of its passages each question may retrieve from."""

    def __init__(
        self,
        setting: Setting,
        examples: Sequence[Example],
        embeddings: Embeddings,
        *,
        collection: str | None = None,
        background: Sequence[Example] = (),
    ) -> None:
        """Index the pools of the questions asked, or open the named collection when they have none.

        Args:
            setting: ``distractor`` or ``open``.
            examples: The questions asked, their pools holding their injected passages.
            embeddings: The embedding model of the store.
            collection: For a dataset without pools: the collection to retrieve from.
            background: The rest of the dataset, whose paragraphs join the collection in the open setting.
        """
        if setting not in SETTINGS:
            raise CausalRAGError(f"Unknown setting {setting!r}: use distractor or open.")
        has_pools = any(e.passages for e in examples)
        if setting == "distractor" and not has_pools:
            raise CausalRAGError(
                "This dataset has no per-question passages: use --setting open with --collection NAME."
            )
        self.setting = setting
        self.temporary = has_pools
        if has_pools:
            corpus = [*examples, *(background if setting == "open" else ())]
            self.store = Store.in_memory([p for e in corpus for p in e.passages], embeddings=embeddings)
        else:
            self.store = Store(collection or DEMO_COLLECTION, embeddings=embeddings)

    def ids_for(self, example: Example) -> list[str] | None:
        """The question's own pool (distractor setting), or None: the whole collection (open)."""
        return [p.id for p in example.passages] if self.setting == "distractor" else None

    def close(self) -> None:
        """Delete the in-memory collection (a named collection is left as it is)."""
        if self.temporary:
            self.store.client.delete_collection(self.store.collection)
