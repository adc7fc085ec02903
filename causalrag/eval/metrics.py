"""Answer and retrieval metrics.

Answer normalization is the official HotpotQA / SQuAD one (lower-case, drop punctuation and the
articles a/an/the, squeeze whitespace); it and the token F1 live in the leaf ``causalrag.text``,
which the methods use too, and are re-exported here for evaluation code. ``containment`` is the
papers' "Acc" / CF-RAG's "smart EM": a gold answer appears inside the prediction. With several gold
answers, each metric takes the best.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypedDict

from causalrag.text import f1_score, normalize_answer

__all__ = [
    "AnswerScores", "answer_scores", "containment", "exact_match", "f1_score", "ndcg_at_k", "normalize_answer",
    "recall_at_k",
]


class AnswerScores(TypedDict):
    """The answer metrics of one prediction, each 0 to 1 (the best over the gold answers)."""

    em: float
    """Exact match of the normalized answers (:func:`exact_match`)."""
    f1: float
    """Token F1 (:func:`causalrag.text.f1_score`)."""
    acc: float
    """Containment, the papers' "Acc" (:func:`containment`)."""


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    """1 if the normalized prediction equals a normalized gold answer, else 0."""
    return float(any(normalize_answer(prediction) == normalize_answer(g) for g in golds))


def containment(prediction: str, golds: Sequence[str]) -> float:
    """1 if a (normalized, non-empty) gold answer occurs in the normalized prediction."""
    pred = f" {normalize_answer(prediction)} "
    return float(any((g := normalize_answer(gold)) and f" {g} " in pred for gold in golds))


def _relevant(titles: Sequence[str], gold_titles: Sequence[str]) -> list[int]:
    """Binary relevance per ranked title; a gold title counts once (its first passage)."""
    seen: set[str] = set()
    rel = []
    for t in titles:
        hit = t in gold_titles and t not in seen
        seen.add(t)
        rel.append(int(hit))
    return rel


def recall_at_k(titles: Sequence[str], gold_titles: Sequence[str], k: int) -> float:
    """Share of gold titles among the first ``k`` ranked titles."""
    if not gold_titles:
        return 0.0
    return sum(_relevant(titles[:k], gold_titles)) / len(set(gold_titles))


def ndcg_at_k(titles: Sequence[str], gold_titles: Sequence[str], k: int) -> float:
    """NDCG@k with binary relevance of gold titles."""
    rel = _relevant(titles[:k], gold_titles)
    dcg = sum(r / math.log2(i + 2) for i, r in enumerate(rel))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(set(gold_titles)))))
    return dcg / ideal if ideal else 0.0


def answer_scores(prediction: str, golds: Sequence[str]) -> AnswerScores:
    """Exact match, token F1 and containment of ``prediction`` against the gold answers."""
    return {
        "em": exact_match(prediction, golds),
        "f1": f1_score(prediction, golds),
        "acc": containment(prediction, golds),
    }
