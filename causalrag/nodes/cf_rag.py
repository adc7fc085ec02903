"""CF-RAG nodes (Qin et al. 2025, Algorithm 1): explore → parallel hypotheses → causal arbitration.

* :func:`explore_counterfactuals` — §4.1.1: one candidate per transformation type in one batched
  call, validated by Eq. 2 (similarity > θ_sim, not a repeat, a different quick-RAG answer),
  failed types re-asked once with sampling, the top N kept by Info (Eq. 3);
* :func:`dialectical_retrieve` — §4.1.2: retrieval for q and every q', union, dedup (Eq. 4),
  quality/relevance filter (Eq. 5);
* :func:`cluster_and_sample` — §4.2.1: spectral clusters, one Gumbel-softmax stratified sample per path;
* :func:`hypothesize` — Eq. 8: one answer + rationale per path (a ``Send`` branch);
* :func:`arbitrate` — §4.2.2: φ_coh (Eq. 9-10), φ_causal (Eq. 11), Ψ, agreement (§4.2.3);
* :func:`accept` / :func:`synthesize` — Algorithm 1 lines 15-18 (Eq. 12).

Judgments (``CFRAGContext.judge``): with "score" (the default for a model that scores its replies)
the counterfactual queries are edits chosen by score (:mod:`causalrag.nodes.cf_rag_edits`), the
next-best edit of a type stands in for the sampled retry; every path's hypothesis is a scored choice
among the answers the pool's passages give when read alone (:mod:`causalrag.nodes.evidence`), its
rationale the sample's passage that states it; φ_coh's Mention(a, e) becomes the scored support
P(a | e alone) among the hypotheses' answers; and synthesis is a scored choice among the top-3
answers, not new text. With "generate" every step writes text and parses it, as in the paper.

Relevance s(q, e): the paper uses a cross-encoder (bge-reranker-large); none ships offline here,
so s is the LLM's query likelihood gain, σ(mean log p(q | e) − mean log p(q)), per token, from
one batched ``logprob`` call (:func:`~causalrag.nodes.evidence.query_relevance`: q continues the
passage's reading prompt, so the passage's KV cache serves its readings too). The cheap
relevance filter of Eq. 5 and the sampling prior use embedding cosine instead.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from langchain_core.documents import Document
from langgraph.runtime import Runtime

from causalrag.nodes import cf_rag_math as cm
from causalrag.nodes.cf_rag_edits import edits_by_type, question_entities
from causalrag.nodes.common import (
    context,
    emit,
    emit_evidence,
    fit,
    judge_of,
    llm_of,
    question_of,
    store_of,
    stream_text,
    titled_text,
    traced,
)
from causalrag.nodes.evidence import (
    Reading,
    confirmations,
    group_readings,
    query_relevance,
    read_cached,
    read_jointly,
    reliability,
    support_matrix,
    together,
    with_candidate,
    written_answer,
)
from causalrag.prompts.cf_rag import (
    COUNTERFACTUAL_STOP,
    HYPOTHESIS_STOP,
    SYNTHESIS_STOP,
    TRANSFORMATIONS,
    counterfactual_prompt,
    hypothesis_prompt,
    parse_hypothesis,
    parse_rewrite,
    synthesis_prompt,
)
from causalrag.prompts.common import ANSWER_STOP, answer_prompt, format_passages
from causalrag.state.base import ReadingRecord, TraceEntry
from causalrag.state.cf_rag import (
    CFRAGContext,
    CFRAGState,
    CFRAGUpdate,
    Counterfactual,
    Hypothesis,
    HypothesisTask,
    Route,
    ScoredHypothesis,
)
from causalrag.text import answer_spans, clean_answer, mentions, normalize_answer, question_options, same_answer
from causalrag.tools.backends.base import LLM
from causalrag.tools.encoders import embed
from causalrag.tools.store import stored_id

REGENERATE_TEMPERATURE = 0.8
QUICK_ANSWER_TOKENS = 16


# --------------------------------------------------------------------------- §4.1.1 counterfactuals
def quick_answers(ctx: CFRAGContext, queries: list[str]) -> list[str]:
    """L(q) by a quick baseline RAG pass: top ``validation_k`` passages each, all answers in one batch."""
    store, llm = store_of(ctx), llm_of(ctx)
    prompts = [
        answer_prompt(q, together(llm, q, store.retrieve(q, ctx.validation_k, mode=ctx.retrieval, ids=ctx.ids)))
        for q in queries
    ]
    outputs = llm_of(ctx).generate(prompts, max_new_tokens=QUICK_ANSWER_TOKENS, stop=ANSWER_STOP)
    return [clean_answer(o[0] if o else "") for o in outputs]


def screen(question: str, rows: list[Counterfactual], ctx: CFRAGContext, kept: set[str]) -> None:
    """Eq. 2's similarity half plus repeat/duplicate checks; sets ``similarity`` and ``verdict`` (None = passes)."""
    sims = similarity_to(question, [r["query"] or "?" for r in rows])
    original = normalize_answer(question)
    for row, sim in zip(rows, sims, strict=True):
        norm = normalize_answer(row["query"])
        row["similarity"] = round(float(sim), 4)
        if not norm:
            row["verdict"] = "empty"
        elif norm == original or sim >= ctx.theta_repeat:
            row["verdict"] = "repeats the question"
        elif sim <= ctx.theta_sim:
            row["verdict"] = "off topic"
        elif norm in kept:
            row["verdict"] = "duplicate"
        else:
            row["verdict"] = None
            kept.add(norm)


def similarity_to(question: str, texts: list[str]) -> np.ndarray:
    """sim_sem(q, q') for every text: embedding cosine."""
    vectors = embed([question, *texts])
    similarity: np.ndarray = vectors[1:] @ vectors[0]
    return similarity


def validate(question: str, rows: list[Counterfactual], ctx: CFRAGContext, kept: set[str], baseline: str | None) -> str:
    """Screen ``rows``, then compare quick-RAG answers of the survivors with L(q) (Eq. 2's answer half).

    The original's quick answer is computed in the same batch the first time; it is returned.
    """
    screen(question, rows, ctx, kept)
    alive, types = [], set()
    for row in rows:  # one survivor per transformation type goes on to the (costly) quick-RAG check
        if row["verdict"] is None and row["type"] in types:
            row["verdict"] = "spare"
            kept.discard(normalize_answer(row["query"]))
        elif row["verdict"] is None:
            types.add(row["type"])
            alive.append(row)
    queries = ([] if baseline is not None else [question]) + [r["query"] for r in alive]
    answers = quick_answers(ctx, queries) if queries else []
    if baseline is None:
        baseline, answers = answers[0], answers[1:]
    for row, ans in zip(alive, answers, strict=True):
        row["quick_answer"] = ans
        if not ans:
            row["verdict"] = "no quick answer"
        elif same_answer(ans, baseline):
            row["verdict"] = "same answer"
        if row["verdict"] is not None:
            kept.discard(normalize_answer(row["query"]))
    return baseline


def rewrites(ctx: CFRAGContext, question: str, kinds: list[str], *, attempt: int) -> list[Counterfactual]:
    """Rewrites for every transformation type in one ``generate`` call.

    The first attempt is greedy; a retry draws ``regenerate_samples`` samples per type (the 270M base model
    copies the question greedily).
    """
    sampling: dict[str, Any] = (
        {"temperature": REGENERATE_TEMPERATURE, "n": ctx.regenerate_samples, "seed": ctx.seed} if attempt > 1 else {}
    )
    outputs = llm_of(ctx).generate(
        [counterfactual_prompt(question, k) for k in kinds], max_new_tokens=32, stop=COUNTERFACTUAL_STOP, **sampling
    )
    return [
        {"type": k, "query": parse_rewrite(text), "attempt": attempt}
        for k, samples in zip(kinds, outputs, strict=True)
        for text in samples or [""]
    ]


def ranked_edits(ctx: CFRAGContext, question: str) -> dict[str, list[str]]:
    """Every applicable type's edits, best first by one scored choice per type (one batched call).

    Entity edits swap a question entity for one of the three spans of the question's top passages
    most similar to it (MiniLM cosine): a similar entity the corpus knows.
    """
    docs = store_of(ctx).retrieve(question, ctx.k, mode=ctx.retrieval, ids=ctx.ids)
    entities = question_entities(question)[:2]
    spans = list(dict.fromkeys(s for d in docs for s in answer_spans(titled_text(d), exclude=question, limit=20)))
    replacements: dict[str, list[str]] = {}
    if entities and spans:
        vectors = embed(entities + spans)
        for e, vector in zip(entities, vectors[: len(entities)], strict=True):
            similar = sorted(range(len(spans)), key=lambda i: -float(vectors[len(entities) + i] @ vector))
            replacements[e] = [spans[i] for i in similar if not same_answer(spans[i], e)][:3]
    options = edits_by_type(question, replacements)
    choices = (
        llm_of(ctx).choose([counterfactual_prompt(question, kind) for kind in options], list(options.values()))
        if options
        else []
    )
    return {
        kind: [c.options[i] for i in sorted(range(len(c.options)), key=lambda i: -c.scores[i])]
        for kind, c in zip(options, choices, strict=True)
    }


def proposals(
    ctx: CFRAGContext, question: str, scored: dict[str, list[str]] | None, kinds: list[str], *, attempt: int
) -> list[Counterfactual]:
    """Candidate q' per type: the ``attempt``-th best scored edit, or generated rewrites (judge="generate")."""
    if scored is None:
        return rewrites(ctx, question, kinds, attempt=attempt)
    return [
        {"type": k, "query": scored[k][attempt - 1], "attempt": attempt} for k in kinds if len(scored[k]) >= attempt
    ]


@traced
def explore_counterfactuals(state: CFRAGState, runtime: Runtime[CFRAGContext]) -> CFRAGUpdate:
    """Propose, validate (Eq. 2), retry failed types once, keep the top N by Info (Eq. 3).

    Candidates are generated, or chosen among edits by score (``judge="score"``).
    """
    ctx = context(runtime)
    question = question_of(state)
    kept: set[str] = set()
    scored = ranked_edits(ctx, question) if judge_of(ctx) == "score" else None
    rows = proposals(
        ctx, question, scored, list(scored) if scored is not None else [t[0] for t in TRANSFORMATIONS], attempt=1
    )
    baseline = validate(question, rows, ctx, kept, None)
    failed = [r["type"] for r in rows if r["verdict"] is not None]
    retried = proposals(ctx, question, scored, failed, attempt=2) if ctx.regenerate and failed else []
    if retried:
        validate(question, retried, ctx, kept, baseline)
    final = {r["type"]: r for r in rows}
    final.update({r["type"]: r for r in retried if r["verdict"] is None})  # a passing retry replaces the failure
    candidates = list(final.values())
    for row in candidates:
        if row["verdict"] is None:
            row["info"] = round(
                cm.info_score(
                    row["similarity"],
                    cm.answer_divergence(row["quick_answer"], baseline),
                    cm.domain_relevance(question, row["query"]),
                    ctx.info_alpha,
                    ctx.info_beta,
                    ctx.info_gamma,
                ),
                4,
            )
    valid = sorted((r for r in candidates if r["verdict"] is None), key=lambda r: -r["info"])
    for rank, row in enumerate(valid):
        row["selected"] = rank < ctx.n_counterfactuals
    selected = [r["query"] for r in valid[: ctx.n_counterfactuals]]
    emit(runtime, "counterfactuals", "explore", question_answer=baseline, candidates=candidates, selected=selected)
    verdicts = [r["verdict"] for r in rows + retried]
    figures: TraceEntry = {
        "generated": len(rows) + len(retried),
        "first_attempt_failed": len(failed),
        "regenerated_valid": sum(r["attempt"] == 2 and r["verdict"] is None for r in candidates),
        "rejected_repeat": verdicts.count("repeats the question"),
        "rejected_off_topic": verdicts.count("off topic"),
        "rejected_same_answer": verdicts.count("same answer"),
        "rejected_other": sum(v in ("empty", "duplicate", "no quick answer") for v in verdicts),
        "spare_samples": verdicts.count("spare"),
        "valid": len(valid),
        "selected": len(selected),
        "fallback_no_counterfactual": int(not selected),
        "question_quick_answer": baseline,
    }
    return {"counterfactuals": candidates, "cf_queries": selected, "hypotheses": None, "trace": [figures]}


# --------------------------------------------------------------------------- §4.1.2 dialectical evidence
@traced
def dialectical_retrieve(state: CFRAGState, runtime: Runtime[CFRAGContext]) -> CFRAGUpdate:
    """E_total = R(q) ∪ ⋃ R(q'), then dedup (Eq. 4) and the quality/relevance filter (Eq. 5)."""
    ctx = context(runtime)
    queries = [question_of(state), *(state.get("cf_queries") or [])]
    store = store_of(ctx)
    union: dict[str, Document] = {}
    for i, query in enumerate(queries):
        for doc in store.retrieve(query, ctx.k, mode=ctx.retrieval, ids=ctx.ids):
            if (key := stored_id(doc)) not in union:
                union[key] = Document(
                    id=doc.id, page_content=doc.page_content, metadata={**doc.metadata, "query": i}
                )
    llm, question = llm_of(ctx), question_of(state)
    # each passage fits a prompt alone
    docs = [d for doc in union.values() for d in path_evidence(llm, ctx, question, [doc])]
    if not docs:
        emit_evidence(runtime, "dialectical_retrieve", [], retrieved=0)
        return {"pool": [], "trace": [{"retrieved": 0, "duplicates": 0, "filtered_out": 0, "pool": 0}]}
    vectors = embed([titled_text(d) for d in docs])
    keep = cm.dedup_keep(vectors, ctx.theta_dedup)
    relevance = (vectors @ embed(queries).T).max(axis=1)
    passes = [
        i
        for i in keep
        if cm.quality(docs[i].page_content, ctx.min_words) > ctx.theta_quality and relevance[i] > ctx.theta_rel
    ]
    fallback = not passes
    if fallback:  # never leave the paths without evidence: keep the most relevant survivors of dedup
        passes = sorted(keep, key=lambda i: -relevance[i])[: ctx.k]
    pool = [docs[i] for i in passes]
    figures: TraceEntry = {
        "retrieved": len(docs),
        "duplicates": len(docs) - len(keep),
        "filtered_out": len(keep) - len(passes),
        "pool": len(pool),
        "fallback_unfiltered_pool": int(fallback),
    }
    emit_evidence(runtime, "dialectical_retrieve", pool, **figures)
    return {"pool": pool, "trace": [figures]}


# --------------------------------------------------------------------------- §4.2.1 clusters and samples
@traced
def cluster_and_sample(state: CFRAGState, runtime: Runtime[CFRAGContext]) -> CFRAGUpdate:
    """Spectral clusters of the pool and one stratified Gumbel-softmax sample per reasoning path."""
    ctx = context(runtime)
    pool = list(state.get("pool") or [])
    if not pool:
        samples: list[list[Document]] = [[] for _ in range(ctx.hypotheses)]
        emit(runtime, "clusters", "cluster", clusters=[])
        return {"clusters": [], "samples": samples, "trace": [{"clusters": 0, "sample_sizes": [0] * ctx.hypotheses}]}
    vectors = embed([titled_text(d) for d in pool])
    relevance = vectors @ embed([question_of(state)])[0]
    labels = cm.spectral_clusters(vectors, ctx.clusters, seed=ctx.seed)
    picks = cm.stratified_samples(labels, relevance, paths=ctx.hypotheses, rho=ctx.rho, tau=ctx.tau, seed=ctx.seed)
    samples = [[pool[i] for i in idx] for idx in picks]
    emit(
        runtime,
        "clusters",
        "cluster",
        clusters=[
            {"cluster": int(m), "titles": [pool[i].metadata.get("title", "") for i in np.flatnonzero(labels == m)]}
            for m in sorted(set(labels.tolist()))
        ],
    )
    for j, docs in enumerate(samples):
        emit_evidence(runtime, "sample", docs, path=j)
    sizes = np.bincount(labels).tolist()
    read = state.get("read") or {}
    candidates, read = pool_answers(ctx, question_of(state), pool, read) if judge_of(ctx) == "score" else ([], read)
    return {
        "clusters": labels.tolist(),
        "samples": samples,
        "candidates": candidates,
        "read": read,
        "trace": [
            {
                "clusters": len(sizes),
                "cluster_sizes": sizes,
                "sample_sizes": [len(s) for s in samples],
                "candidates": candidates,
            }
        ],
    }


def path_evidence(llm: LLM, ctx: CFRAGContext, question: str, docs: list[Document]) -> list[Document]:
    """The best-ranked passages of a path that fit its hypothesis prompt with the rationale's room."""
    return fit(llm, docs, lambda ds: hypothesis_prompt(question, ds), reply_tokens=ctx.hypothesis_tokens)


def pool_answers(
    ctx: CFRAGContext, question: str, pool: list[Document], read: dict[str, ReadingRecord]
) -> tuple[list[str], dict[str, ReadingRecord]]:
    """The answers the hypotheses choose among, with the updated readings.

    They are the question's own options, else what the pool's passages answer when each is read alone (one
    batch; passages the assessment read are not read again), agreeing answers merged, plus what the question's
    own top ``k`` passages give read together (a bridge answer no single passage gives).
    """
    own = question_options(question)
    if own:
        return own, read
    llm = llm_of(ctx)
    readings, read = read_cached(llm, question, pool, read)
    joint_docs = together(llm, question, pool[: ctx.k])
    joint = written_answer(
        llm, answer_prompt(question, joint_docs), format_passages(joint_docs), max_new_tokens=ctx.max_new_tokens
    )
    return with_candidate(
        [g.answer for g in group_readings(readings, [str(i) for i in range(len(pool))])], joint, question
    ), read


# --------------------------------------------------------------------------- Eq. 8 hypotheses
@traced
def hypothesize(state: HypothesisTask, runtime: Runtime[CFRAGContext]) -> CFRAGUpdate:
    """(a_j, r_j) = H(q, E_j): one reasoning path, run as its own ``Send`` branch.

    Scored: the path answers with the candidate its sample supports most reliably
    (:func:`~causalrag.nodes.evidence.reliability`): sources of E_j that state it when read alone confirm it,
    and the scored choice given E_j together decides among equally confirmed answers. A path that read its
    sample only jointly would follow the 270M model's blend of a conflicting sample, which mostly gives the
    answer-swapped passages' answer.
    """
    ctx = context(runtime)
    docs = list(state.get("documents") or [])
    candidates = list(state.get("candidates") or [])
    # scored: the path's answer is a choice among the pool's answers, its rationale the passage stating it
    if candidates and docs:
        choice = read_jointly(llm_of(ctx), [question_of(state)], [docs], [candidates])[0]
        read = state.get("read") or {}
        scores = reliability(confirmations(candidates, [Reading(**read[d.id]) for d in docs if d.id in read]), choice)
        best = max(range(len(candidates)), key=scores.__getitem__)
        answer = candidates[best]
        stating = [d for d in docs if mentions(answer, titled_text(d))]
        hypothesis: Hypothesis = {
            "index": state["index"],
            "answer": answer,
            "probability": round(choice.probs[best], 4),
            "rationale": titled_text(stating[0]) if stating else "",
            "raw": "",
            "evidence": [d.metadata.get("title", "") for d in docs],
        }
        emit(runtime, "hypothesis", "hypothesize", **{k: v for k, v in hypothesis.items() if k != "raw"})
        return {"hypotheses": [hypothesis], "trace": [{"path": state["index"], "choice": choice.as_dict(),
                                                       "reliability": [round(x, 4) for x in scores]}]}
    docs = path_evidence(llm_of(ctx), ctx, question_of(state), docs)
    prompt = hypothesis_prompt(question_of(state), docs)
    raw = llm_of(ctx).generate([prompt], max_new_tokens=ctx.hypothesis_tokens, stop=HYPOTHESIS_STOP)[0]
    raw_text = raw[0] if raw else ""
    answer, rationale = parse_hypothesis(raw_text)
    hypothesis = {"index": state["index"], "answer": answer, "rationale": rationale, "raw": raw_text,
                  "evidence": [d.metadata.get("title", "") for d in docs]}
    emit(runtime, "hypothesis", "hypothesize", **{k: v for k, v in hypothesis.items() if k != "raw"})
    return {"hypotheses": [hypothesis], "trace": [{"path": state["index"], "fallback_empty_answer": int(not answer)}]}


# --------------------------------------------------------------------------- §4.2.2 arbitration
def confidences(llm: LLM, question: str, hyps: list[Hypothesis], samples: list[list[Document]]) -> list[float]:
    """φ₃: geometric-mean token probability of each generated answer + rationale (one batched call)."""
    prefixes = [hypothesis_prompt(question, samples[h["index"]]) for h in hyps]
    return [float(np.exp(lp)) for lp in llm.logprob(prefixes, [h["raw"] for h in hyps], reduce="mean")]


@traced
def arbitrate(state: CFRAGState, runtime: Runtime[CFRAGContext]) -> CFRAGUpdate:
    """Ψ_j for every hypothesis, ranked; HighConsensus decides the route (Algorithm 1, lines 10-15)."""
    ctx = context(runtime)
    llm = llm_of(ctx)
    question = question_of(state)
    samples = state.get("samples") or []
    hyps = sorted(state.get("hypotheses") or [], key=lambda h: h["index"])
    evidence = {d.id: d for h in hyps for d in samples[h["index"]]}
    if ctx.coherence == "pool":  # every path's answer is judged against all the dialectical evidence
        evidence |= {d.id: d for d in state.get("pool") or []}
    ids = list(evidence)
    rel = query_relevance(llm, list(evidence.values()), [question, *(state.get("cf_queries") or [])])
    answers = [h["answer"] or "unknown" for h in hyps]
    vectors = embed(answers + [titled_text(evidence[i]) for i in ids])
    answer_vecs, evidence_vecs = vectors[: len(hyps)], vectors[len(hyps) :]
    scored_judgment = judge_of(ctx) == "score"
    if ctx.extended:
        conf = (
            [h.get("probability", 0.0) for h in hyps] if scored_judgment else confidences(llm, question, hyps, samples)
        )
    else:
        conf = [0.0] * len(hyps)
    distinct = list(dict.fromkeys(answers))
    # Mention(a, e): the string test of Eq. 10, or the scored support P(a | e alone) among the hypotheses' answers
    support = (
        support_matrix(llm, question, list(evidence.values()), distinct)
        if scored_judgment and len(distinct) > 1
        else None
    )
    scored: list[dict[str, Any]] = []  # each a ScoredHypothesis once its agreement is set below
    for j, h in enumerate(hyps):
        rows = [ids.index(d.id) for d in samples[h["index"]]]
        judged = list(range(len(ids))) if ctx.coherence == "pool" else rows
        if support is not None:
            mention = np.array([support[r][distinct.index(answers[j])] for r in judged], dtype=float)
        else:
            mention = np.array([mentions(h["answer"], titled_text(evidence[ids[r]])) for r in judged], dtype=float)
        coh = cm.phi_coherence(
            evidence_vecs[judged] @ answer_vecs[j], rel[judged, 0], mention, ctx.lambda1, ctx.lambda2
        )
        causal = cm.phi_causal(rel[rows, 0], rel[rows, 1:])
        spec = cm.specificity(f"{h['answer']} {h['rationale']}")
        score = (
            cm.psi_extended(coh, causal, conf[j], spec, lam=ctx.lam, w_confidence=ctx.w_confidence,
                            w_specificity=ctx.w_specificity)
            if ctx.extended
            else cm.psi(coh, causal, ctx.lam)
        )
        parts = {"phi_coh": coh, "phi_causal": causal, "psi": score}
        if ctx.extended:
            parts |= {"confidence": conf[j], "specificity": spec}
        scored.append({**{k: v for k, v in h.items() if k != "raw"}, **{k: round(v, 4) for k, v in parts.items()}})
    agree = cm.agreement(cm.answer_similarity(answers, answer_vecs @ answer_vecs.T), ctx.theta_agree)
    for row, a in zip(scored, agree, strict=True):
        row["agreement"] = round(float(a), 4)
    by_psi = sorted(scored, key=lambda row: (bool(row["answer"]), row["psi"]), reverse=True)
    ranked = cast(list[ScoredHypothesis], by_psi)
    consensus = bool(ranked) and bool(ranked[0]["answer"]) and ranked[0]["agreement"] > ctx.consensus_share
    for best_first in ranked:
        emit(runtime, "score", "arbitrate", **best_first)
    route: Route = "accept" if consensus else "synthesize"
    emit(runtime, "route", "arbitrate", route=route, agreement=ranked[0]["agreement"] if ranked else 0.0)
    figures: TraceEntry = {
        "mention": "scored support" if support is not None else "string",
        "psi": [h["psi"] for h in scored],
        "phi_coh": [h["phi_coh"] for h in scored],
        "phi_causal": [h["phi_causal"] for h in scored],
        "agreement": [h["agreement"] for h in scored],
        "relevance_source": "llm-query-likelihood",
        "consensus": consensus,
        "route": route,
    }
    return {"arbitration": ranked, "consensus": consensus, "trace": [figures]}


# --------------------------------------------------------------------------- §4.2.3 final answer
def synthesis_order(docs: list[Document], best: set[str | None], *, scored: bool) -> list[Document]:
    """The synthesis's passages in reading order: the best path's (ids ``best``) first, then the other paths'.

    Each block is laid out as a hypothesis prompt shows its passages (a scored reading lists them reversed, the
    best next to the question; a written hypothesis in rank order). So the synthesis prompt
    starts with the best path's passage block and its KV comes from the cache.
    """
    own, rest = [d for d in docs if d.id in best], [d for d in docs if d.id not in best]
    return own[::-1] + rest[::-1] if scored else own + rest


@traced
def accept(state: CFRAGState, runtime: Runtime[CFRAGContext]) -> CFRAGUpdate:
    """High consensus: a_final = a_{j*}, with its own evidence sample (Algorithm 1, line 16)."""
    best = state["arbitration"][0]
    docs = (state.get("samples") or [])[best["index"]]
    emit(runtime, "answer", "accept", answer=best["answer"], rationale=best["rationale"])
    return {"answer": best["answer"], "documents": docs}


@traced
def synthesize(state: CFRAGState, runtime: Runtime[CFRAGContext]) -> CFRAGUpdate:
    """Divergent hypotheses: combine the top-3 (answer, Ψ, rationale) with their evidence (Eq. 12), streamed.

    Eq. 12 shows E_filtered; a 270M model reads few passages well, so the synthesis sees the top
    hypotheses' own samples, best first, capped at ``synthesis_k``, laid out as the best path's
    hypothesis showed them (:func:`synthesis_order`): the prompt starts with that path's passage block,
    which the cache holds. An empty synthesis falls back to a_{j*}. With ``judge="score"`` the synthesis
    is a scored choice among the top answers (the same prompt, the candidates' answers as the options),
    so it cannot write a new, unsupported one; and, as each path chose (:func:`hypothesize`), the sources
    among those passages that state an answer when read alone confirm it first, the scored choice deciding
    among equally confirmed ones. Each path saw only its sample: a sample that leaves out one of three
    agreeing sources leaves a tie of two against two, which the joint reading of a 270M model breaks for the
    swapped passages' blend, and the synthesis, reading every path's passages, restores the count.
    """
    ctx = context(runtime)
    top = (state.get("arbitration") or [])[:3]
    samples = state.get("samples") or []
    scored = judge_of(ctx) == "score"
    docs = list({d.id: d for h in top for d in samples[h["index"]]}.values())[: ctx.synthesis_k]
    best = {d.id for d in samples[top[0]["index"]]} if top else set()

    def prompt_for(ds: list[Document]) -> str:
        return synthesis_prompt(question_of(state), top, synthesis_order(ds, best, scored=scored), scored=scored)

    docs = fit(llm_of(ctx), docs, prompt_for, reply_tokens=ctx.max_new_tokens)
    prompt = prompt_for(docs)
    options = list(dict.fromkeys(h["answer"] for h in top if h["answer"]))
    if scored and options:
        choice = llm_of(ctx).choose([prompt], [options])[0]
        read = state.get("read") or {}
        scores = reliability(confirmations(options, [Reading(**read[d.id]) for d in docs if d.id in read]), choice)
        final = options[max(range(len(options)), key=scores.__getitem__)]
        emit(runtime, "answer", "synthesize", answer=final, choice=choice.as_dict())
        return {"answer": final, "documents": docs, "trace": [{"synthesis_choice": choice.as_dict(),
                                                                "reliability": [round(x, 4) for x in scores]}]}
    text = stream_text(runtime, llm_of(ctx), prompt, stage="synthesize", max_new_tokens=ctx.max_new_tokens,
                       stop=SYNTHESIS_STOP)
    final = clean_answer(text)
    fallback = not final and bool(top)
    if fallback:
        final = top[0]["answer"]
    emit(runtime, "answer", "synthesize", answer=final)
    return {"answer": final, "documents": docs, "trace": [{"fallback_empty_synthesis": int(fallback)}]}
