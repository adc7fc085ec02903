"""Retrieval quality of rerankers: recall@k and NDCG@k of gold passages, per question pool.

Every example carries its own passage pool (HotpotQA's 10 paragraphs, the demo passages written
for a question). Each reranker scores the pool's candidates for the question; ranking by the
score, a gold passage is one whose title is among the example's gold titles
(:func:`causalrag.eval.metrics.recall_at_k` / :func:`ndcg_at_k`). So reranking quality is
measured on its own, not only through end answers.

Rerankers are functions ``(question, candidates) -> scores`` (higher = better):
``similarity`` (the dense first stage's cosine), ``bm25``, and from one LM pass
:func:`lm_rerankers` gives both ``cis`` and ``cis-no-prior`` (the "w/o p(K)" ablation);
``cis-distilled`` is :meth:`DistilledReranker.score`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from langchain_core.documents import Document
from scipy.stats import spearmanr

from causalrag.eval.datasets import Example
from causalrag.eval.metrics import ndcg_at_k, recall_at_k
from causalrag.tools.cis import CISScore, CISScorer
from causalrag.tools.store import Mode, Store, stored_id

Reranker = Callable[[str, Sequence[Document]], list[float]]
"""Scores of candidate documents for a question, one per candidate (higher = better)."""


@dataclass
class ScoredPool:
    """One question's pool and every reranker's scores of its candidates."""

    example: Example
    candidates: list[Document]
    """The pool in first-stage (dense similarity) order."""
    scores: dict[str, list[float]] = field(default_factory=dict)
    """Reranker name → one score per candidate."""

    def ranking(self, reranker: str) -> list[str]:
        """Candidate titles, best first (ties keep first-stage order)."""
        order = np.argsort(-np.asarray(self.scores[reranker], dtype=float), kind="stable")
        return [self.candidates[i].metadata.get("title", "") for i in order]


def similarity(question: str, docs: Sequence[Document]) -> list[float]:
    """The first stage's own score (cosine for dense retrieval)."""
    return [float(d.metadata.get("score") or 0.0) for d in docs]


def bm25_reranker(store: Store) -> Reranker:
    """A reranker scoring the candidates by BM25 over ``store`` (a candidate it does not return scores 0)."""

    def score(question: str, docs: Sequence[Document]) -> list[float]:
        by_id = {
            d.id: d.metadata["score"]
            for d in store.retrieve(question, len(docs), mode="bm25", ids=[stored_id(d) for d in docs])
        }
        return [float(by_id.get(d.id, 0.0)) for d in docs]

    return score


def lm_rerankers(scorer: CISScorer) -> dict[str, Reranker]:
    """``cis`` and ``cis-no-prior`` from one pass of the LM per pool (the ablation is log p(K|Q) alone)."""
    memo: dict[tuple[str, tuple[str | None, ...]], list[CISScore]] = {}

    def scores(question: str, docs: Sequence[Document]) -> list[CISScore]:
        key = (question, tuple(d.id for d in docs))
        if key not in memo:
            memo[key] = scorer.score(question, docs)
        return memo[key]

    return {
        "cis": lambda q, docs: [s.cis for s in scores(q, docs)],
        "cis-no-prior": lambda q, docs: [s.logp_k_given_q for s in scores(q, docs)],
    }


def candidate_pool(example: Example, store: Store, *, retrieval: Mode = "dense") -> list[Document]:
    """The example's own passages, ordered by the first-stage retriever (all of them: N = pool size)."""
    ids = list(dict.fromkeys(p.id for p in example.passages))
    return store.retrieve(example.question, len(ids), mode=retrieval, ids=ids) if ids else []


def score_pools(
    examples: Sequence[Example], store: Store, rerankers: Mapping[str, Reranker], *, progress: bool = False
) -> list[ScoredPool]:
    """Score every example's pool with every reranker (examples without a pool are skipped)."""
    items: Iterable[Example] = examples
    if progress:
        from tqdm.auto import tqdm

        items = tqdm(items, desc="rerank pools", unit="question")
    pools = []
    for ex in items:
        docs = candidate_pool(ex, store)
        if docs:
            pools.append(
                ScoredPool(ex, docs, {name: list(map(float, fn(ex.question, docs))) for name, fn in rerankers.items()})
            )
    return pools


def retrieval_metrics(pools: Sequence[ScoredPool], reranker: str, ks: Sequence[int] = (5,)) -> dict[str, float]:
    """Mean recall@k and NDCG@k of gold passages over the pools with gold titles."""
    judged = [p for p in pools if p.example.gold_titles and reranker in p.scores]
    out: dict[str, float] = {"questions": float(len(judged))}
    for k in ks:
        out[f"recall@{k}"] = (
            float(np.mean([recall_at_k(p.ranking(reranker), p.example.gold_titles, k) for p in judged]))
            if judged
            else 0.0
        )
        out[f"ndcg@{k}"] = (
            float(np.mean([ndcg_at_k(p.ranking(reranker), p.example.gold_titles, k) for p in judged]))
            if judged
            else 0.0
        )
    return out


def compare(
    pools: Sequence[ScoredPool], rerankers: Sequence[str] | None = None, ks: Sequence[int] = (5,)
) -> dict[str, dict[str, float]]:
    """``{reranker: {"recall@5": …, "ndcg@5": …}}`` for every reranker scored on the pools."""
    names = rerankers or list(dict.fromkeys(n for p in pools for n in p.scores))
    return {name: retrieval_metrics(pools, name, ks) for name in names}


def score_agreement(pools: Sequence[ScoredPool], a: str, b: str) -> dict[str, float]:
    """Spearman correlation of two rerankers' scores: pooled over all candidates, and the mean per question."""
    both = [p for p in pools if a in p.scores and b in p.scores]
    xs = [x for p in both for x in p.scores[a]]
    ys = [y for p in both for y in p.scores[b]]
    per_question = [spearmanr(p.scores[a], p.scores[b]).statistic for p in both if len(p.candidates) > 2]
    per_question = [r for r in per_question if np.isfinite(r)]
    return {
        "pooled": float(spearmanr(xs, ys).statistic) if len(xs) > 2 else float("nan"),
        "per_question": float(np.mean(per_question)) if per_question else float("nan"),
    }


def markdown_table(results: Mapping[str, Mapping[str, float]], metrics: Sequence[str] = ("recall@5", "ndcg@5")) -> str:
    """:func:`compare`'s figures as a Markdown table, one row per reranker."""
    rows = ["| reranker | " + " | ".join(metrics) + " |", "|---" * (len(metrics) + 1) + "|"]
    rows += [f"| {name} | " + " | ".join(f"{r[m]:.3f}" for m in metrics) + " |" for name, r in results.items()]
    return "\n".join(rows)
