"""The two retrieval settings of the evaluation, and the passage pools they retrieve from.

* ``distractor`` — each question retrieves only from its own pool (HotpotQA's 10 paragraphs plus
  any injected passages): ``ctx.ids`` filters one shared in-memory collection. An id filter rather
  than a throw-away collection per question because it is 2.8x faster (``research/scripts/eval_pools.py``
  compares the two: 0.61 s vs 1.71 s per pass over the 20 questions at K=8, embeddings cached); a
  method that retrieves without ``ctx.ids`` would see other questions' paragraphs, so the runner
  records evidence from outside the pool as ``leaked``.
* ``open`` — one collection of every paragraph of the dataset plus every question's injected
  passages at this K (a poisoned corpus, as in corpus-poisoning attacks), top-k over all of it.
  A dataset without pools (FlashRAG JSONL) retrieves from a named collection instead. Each distinct
  question is asked once (:func:`distinct_questions`): the suite asks a fact card's question under six
  pool conditions, which one collection makes the same question with the same evidence.

Gold evidence is known in both: the ids of the question's gold paragraphs.
"""

from __future__ import annotations

import dataclasses
import re
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
ALL_CONDITIONS = "all_conditions"
"""The condition of an open-setting question asked under several pool conditions."""


def distinct_questions(examples: Sequence[Example]) -> list[Example]:
    """The open setting's questions: one per distinct question and gold answers, in first-seen order.

    In the open setting every question retrieves from one collection, so a question asked under several
    pool conditions (the robustness suite asks each fact card's question in six) sees the same evidence
    each time; asking it once per condition would count one answer several times and narrow every
    interval. Twins merge into one example: their passages (the collection holds them all anyway), gold
    titles and planted wrong answers together, their condition when they share one (else
    :data:`ALL_CONDITIONS`), and the stem their ids share before a separator (``c001`` for
    ``c001-clean_single`` and ``c001-all_wrong``), else the first one's id.
    """
    groups: dict[tuple[str, tuple[str, ...]], list[Example]] = {}
    for ex in examples:
        groups.setdefault((ex.question, tuple(ex.answers)), []).append(ex)
    taken = {ex.id for ex in examples}
    return [_merged(twins, taken) for twins in groups.values()]


def _merged(twins: list[Example], taken: set[str]) -> Example:
    """One example standing for ``twins`` (the same question and answers); see :func:`distinct_questions`."""
    first = twins[0]
    if len(twins) == 1:
        return first
    stems = {re.split(r"[-_:]", t.id, maxsplit=1)[0] for t in twins}
    stem = stems.pop() if len(stems) == 1 else ""
    conditions = {t.condition for t in twins}
    return dataclasses.replace(
        first,
        id=stem if stem and stem not in taken else first.id,
        passages=list({p.id: p for t in twins for p in t.passages}.values()),
        gold_titles=list(dict.fromkeys(g for t in twins for g in t.gold_titles)),
        wrong_answers=list(dict.fromkeys(w for t in twins for w in t.wrong_answers)),
        condition=first.condition if len(conditions) == 1 else ALL_CONDITIONS,
    )


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
