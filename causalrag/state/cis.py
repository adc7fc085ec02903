"""State and parameters of CIS retrieval (Causal Knowledge Retrieval, §4).

retrieve top-N candidates (BM25 by default, as the paper reranks BM25's top 100, §5.2.1)
→ ``rerank_cis``: keep the top-k by CIS(Q → K) = log p(K|Q) − log p(K) (§4.1), or by the
distilled cross-encoder's estimate of it (§4.2) → answer from those k passages, on every question
(routing by the shape of the evidence is the separate method :mod:`causalrag.graphs.triage`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypedDict

from causalrag.state.base import OutputState, RAGContext, RAGState, RAGUpdate


class CISRow(TypedDict):
    """One candidate's scores (a row of ``cis_scores``), as its reranked passage's metadata holds them."""

    title: str | None
    cis: float
    """CIS(Q → K) = log p(K|Q) − log p(K) (§4.1), or the distilled reranker's estimate of it (§4.2)."""
    logp_k_given_q: float | None
    """log p(K|Q); None from the distilled reranker, which has no separate terms."""
    logp_k: float | None
    """log p(K); None without the prior (``use_prior=False``) or from the distilled reranker."""
    first_stage_rank: int
    """The candidate's rank (1-based) in the first-stage retrieval."""
    id: str | None


class CISState(RAGState, total=False):
    """CIS retrieval's state: every candidate's scores beside the answer and its top-k evidence."""

    cis_scores: list[CISRow]
    """Every candidate's scores, best first: id, title, cis, logp_k_given_q, logp_k, first_stage_rank."""


class CISUpdate(RAGUpdate, total=False):
    """What a CIS node writes: any keys of :class:`CISState`."""

    cis_scores: list[CISRow]


class CISOutput(OutputState, total=False):
    """What a run returns: the answer and its evidence, plus every candidate's scores."""

    cis_scores: list[CISRow]


@dataclass(kw_only=True)
class CISContext(RAGContext):
    """CIS parameters; ``k`` (inherited) is the paper's top-k kept for generation (§5.1.4)."""

    retrieval: Literal["dense", "bm25", "hybrid"] = "bm25"
    """First-stage retriever whose candidates are reranked (the paper reranks BM25, §5.2.1)."""
    n_candidates: int = 100
    """N: candidates retrieved and scored per question (top 100 in §5.2.1; use 10-20 on a CPU)."""
    form: Literal["qa", "plain"] = "qa"
    """How Q prefixes K in p(K|Q): the QA prompt ("Q: … A: K", §4.1) or the bare question ("w/o prompt", §5.3)."""
    use_prior: bool = True
    """Divide by p(K) (§4.1 'self-confirmation bias'); False is the "w/o p(K)" ablation (§5.3)."""
    reranker: Literal["cis", "cis-distilled"] = "cis"
    """``cis``: the causal LM scores every candidate; ``cis-distilled``: the BERT-style cross-encoder
    distilled from it (§4.2), trained with ``causalrag distill-cis``."""
    distilled_path: str | None = None
    """Folder of the distilled reranker; None → ``$CAUSALRAG_HOME/cis-distilled``."""
