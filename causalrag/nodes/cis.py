"""Nodes of CIS retrieval (paper §4): first-stage candidates, then rerank by causal inference score.

``rerank_cis`` is reusable by any graph: it reads the candidates in ``state["documents"]`` and
the CIS fields of the context (any context that extends :class:`CISContext`), and writes back
the top-k by CIS with each passage's log p(K|Q), log p(K) and CIS in its metadata.
"""

from __future__ import annotations

import math

from langchain_core.documents import Document
from langgraph.runtime import Runtime

from causalrag.nodes.common import context, emit_evidence, fit, llm_of, question_of, store_of, traced
from causalrag.prompts.cis import passage_text, query_prefix
from causalrag.state.base import TraceEntry
from causalrag.state.cis import CISContext, CISRow, CISState, CISUpdate
from causalrag.tools.cis import CISScore, CISScorer
from causalrag.tools.cross_encoder import default_distilled_path, load_distilled


@traced
def retrieve_candidates(state: CISState, runtime: Runtime[CISContext]) -> CISUpdate:
    """Top-N first-stage candidates (BM25 by default, the paper's §5.2.1 setting)."""
    ctx = context(runtime)
    docs = store_of(ctx).retrieve(question_of(state), ctx.n_candidates, mode=ctx.retrieval, ids=ctx.ids)
    emit_evidence(runtime, "retrieve_candidates", docs, retrieval=ctx.retrieval)
    return {"documents": docs}


def scorable(ctx: CISContext, question: str, docs: list[Document]) -> list[Document]:
    """Each candidate as it fits the log p(K | Q) prompt alone (an overlong passage trimmed to its leading words)."""
    prefix, llm = query_prefix(question, ctx.form), llm_of(ctx)
    return [
        d for doc in docs for d in fit(llm, [doc], lambda ds: prefix + "".join(map(passage_text, ds)), reply_tokens=0)
    ]


def lm_scores(ctx: CISContext, question: str, docs: list[Document]) -> tuple[list[CISScore], TraceEntry]:
    """CIS from the causal LM, plus the p(K) cache figures for the trace."""
    scorer = CISScorer(llm_of(ctx), form=ctx.form, use_prior=ctx.use_prior)
    scores = scorer.score(question, docs)
    return scores, {"prior_cached": scorer.prior_hits, "prior_computed": scorer.prior_computed}


def distilled_scores(
    ctx: CISContext, question: str, docs: list[Document]
) -> tuple[list[CISScore], TraceEntry]:
    """The distilled cross-encoder's CIS estimate (§4.2); it has no separate p(K|Q) / p(K) terms."""
    model = load_distilled(str(ctx.distilled_path or default_distilled_path()))
    return [CISScore(s, math.nan, None) for s in model.score(question, docs)], {}


def annotated(doc: Document, score: CISScore, first_rank: int) -> Document:
    """A copy of ``doc`` whose score is its CIS, keeping the first-stage score for comparison."""
    meta = {
        **doc.metadata,
        "first_stage_score": doc.metadata.get("score"),
        "first_stage_rank": first_rank,
        "score": score.cis,
        "cis": score.cis,
    }
    if math.isfinite(score.logp_k_given_q):
        meta["logp_k_given_q"] = score.logp_k_given_q
    if score.logp_k is not None:
        meta["logp_k"] = score.logp_k
    return Document(id=doc.id, page_content=doc.page_content, metadata=meta)


def row_of(doc: Document) -> CISRow:
    """A reranked passage's row of ``cis_scores``: its scores as :func:`annotated` wrote them (None where absent)."""
    meta = doc.metadata
    return {
        "title": meta.get("title"),
        "cis": meta["cis"],
        "logp_k_given_q": meta.get("logp_k_given_q"),
        "logp_k": meta.get("logp_k"),
        "first_stage_rank": meta["first_stage_rank"],
        "id": doc.id,
    }


@traced
def rerank_cis(state: CISState, runtime: Runtime[CISContext]) -> CISUpdate:
    """Score every candidate by CIS(Q → K) and keep the top-k (§4.1: "keep top-k documents with the highest CIS")."""
    ctx = context(runtime)
    question = question_of(state)
    docs = list(state.get("documents") or [])
    if not docs:
        emit_evidence(runtime, "rerank_cis", [], reranker=ctx.reranker)
        return {"documents": [], "cis_scores": [], "trace": [{"reranker": ctx.reranker, "candidates": 0}]}
    if ctx.reranker == "cis-distilled":
        scores, figures = distilled_scores(ctx, question, docs)
    else:
        docs = scorable(ctx, question, docs)
        scores, figures = lm_scores(ctx, question, docs)
    # a non-finite score (numerical failure) ranks last instead of breaking the order
    nonfinite = sum(not math.isfinite(s.cis) for s in scores)
    keys = [s.cis if math.isfinite(s.cis) else -math.inf for s in scores]
    order = sorted(range(len(docs)), key=lambda i: keys[i], reverse=True)
    ranked = [annotated(docs[i], scores[i], i + 1) for i in order]
    kept = ranked[: ctx.k]
    emit_evidence(runtime, "rerank_cis", kept, reranker=ctx.reranker, form=ctx.form, use_prior=ctx.use_prior)
    table = [row_of(d) for d in ranked]
    figures |= {
        "reranker": ctx.reranker,
        "candidates": len(docs),
        "kept": len(kept),
        "nonfinite_scores": nonfinite,
        "top_cis": round(ranked[0].metadata["cis"], 3),
        "moved_into_top_k": sum(d.metadata["first_stage_rank"] > ctx.k for d in kept),
    }
    return {"documents": kept, "cis_scores": table, "trace": [figures]}
