"""MoI nodes (Lee et al.): retrieve n → permute (§3.2) → score (Eq. 3) → solve (Eq. 4) → answer.

Baselines of Table 1 / App. C reuse the same nodes: ``bayes_saliency`` scores each passage alone
(Eq. 1; the solve then reduces to u = s), ``random`` shuffles once, ``self_consistency`` answers
over many permutations in one batched ``generate`` and takes the majority.
:func:`rerank_moi` runs permute → score → solve as one node for other graphs.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from langchain_core.documents import Document
from langgraph.runtime import Runtime

from causalrag.nodes.common import context, emit, emit_evidence, fit, llm_of, question_of, store_of, traced
from causalrag.nodes.moi_solve import (
    Permutation,
    cyclic_permutations,
    default_budget,
    prune,
    sampled_permutations,
    solve_position_bias,
    tree_permutations,
    utility_ranking,
    with_singletons,
)
from causalrag.prompts.common import ANSWER_STOP, answer_prompt
from causalrag.prompts.moi import question_continuation, saliency_prefix
from causalrag.state.base import TraceEntry
from causalrag.state.moi import MoIContext, MoIState, MoIUpdate
from causalrag.text import clean_answer, normalize_answer
from causalrag.tools.backends.base import LLM


# --------------------------------------------------------------------------- stages as functions
def propose(ctx: MoIContext, n: int) -> list[Permutation]:
    """The orderings to score: singletons (Bayes saliency), cyclic shifts, a prefix tree or a random sample, pruned."""
    if ctx.variant == "bayes_saliency":
        return [(i,) for i in range(n)]
    if ctx.variant == "self_consistency":
        return sampled_permutations(n, ctx.sc_permutations, ctx.seed)
    budget = ctx.max_permutations or default_budget(n)
    if ctx.proposal == "cyclic":
        orders = cyclic_permutations(n)
    elif ctx.proposal == "sampled":
        orders = sampled_permutations(n, budget, ctx.seed)
    else:
        orders = tree_permutations(n, budget, ctx.seed, shared=ctx.shared_prefix, width=max(ctx.prefix, 0))
    orders = prune(orders, ctx.prefix)
    return with_singletons(orders, n) if ctx.singletons else orders


def positions(ctx: MoIContext, n: int) -> int:
    """The most passages one scored or answered prompt holds."""
    if ctx.variant == "bayes_saliency":
        return 1
    if ctx.variant == "self_consistency":
        return min(n, ctx.k)
    return min(n, ctx.prefix) if ctx.prefix > 0 else n


def within_window(llm: LLM, ctx: MoIContext, question: str, candidates: list[Document]) -> list[Document]:
    """Each candidate cut to its share of the window, so that any ordering of :func:`positions` of them fits.

    Every ordering must fit one prompt; it is a share, not a ranked cut: every candidate must stay in the game
    for Eq. 4.
    """
    m = max(1, positions(ctx, len(candidates)))
    share = lambda ds: saliency_prefix(list(ds) * m) + question_continuation(question)  # noqa: E731
    return [d for doc in candidates for d in fit(llm, [doc], share, reply_tokens=ctx.max_new_tokens)]


def saliency(
    llm: LLM, question: str, candidates: list[Document], perms: list[Permutation]
) -> tuple[list[float], float]:
    """s(π) = log p(q | π's passages) − log p(q) for every π, and log p(q): ONE batched ``logprob`` call."""
    prefixes = [saliency_prefix([candidates[i] for i in p]) for p in perms] + [saliency_prefix([])]
    scores = llm.logprob(prefixes, [question_continuation(question)] * len(prefixes))
    log_p_question = scores[-1]
    return [s - log_p_question for s in scores[:-1]], log_p_question


def debias(
    ctx: MoIContext, candidates: list[Document], perms: list[Permutation], scores: list[float]
) -> MoIUpdate:
    """Solve Eq. 4 for w and u; rerank the candidates by u (the update, with its trace figures)."""
    if not perms:
        return {"documents": [], "ranking": [], "position_weights": [], "utilities": [], "trace": [{"w": [], "u": []}]}
    fit = solve_position_bias(perms, scores, len(candidates), ridge=ctx.ridge)
    order = utility_ranking(fit.utilities)
    reranked = [candidates[i] for i in order]
    figures: TraceEntry = {
        "w": [round(v, 4) for v in fit.weights],
        "u": [round(v, 4) for v in fit.utilities],
        "ranking": order,
        "fit_rmse": round(fit.residual, 4),
        "identifiable": fit.identifiable,
        "solver_fallbacks": int(fit.fallback),
    }
    return {
        "documents": reranked,
        "ranking": [d.id for d in reranked],
        "position_weights": fit.weights,
        "utilities": fit.utilities,
        "trace": [figures],
    }


# --------------------------------------------------------------------------- nodes
@traced
def retrieve_candidates(state: MoIState, runtime: Runtime[MoIContext]) -> MoIUpdate:
    """The n passages MoI reorders (n = max(candidates, k)), in the retriever's order."""
    ctx = context(runtime)
    n, question = max(ctx.candidates, ctx.k), question_of(state)
    docs = within_window(
        llm_of(ctx), ctx, question, store_of(ctx).retrieve(question, n, mode=ctx.retrieval, ids=ctx.ids)
    )
    emit_evidence(runtime, "retrieve", docs)
    return {"candidates": docs, "documents": docs, "ranking": [d.id for d in docs]}


@traced
def permute(state: MoIState, runtime: Runtime[MoIContext]) -> MoIUpdate:
    """§3.2 propose phase: the interventions (orderings) to observe."""
    ctx = context(runtime)
    perms = propose(ctx, len(state.get("candidates") or []))
    emit(runtime, "permutations", "permute", permutations=[list(p) for p in perms])
    return {
        "permutations": [list(p) for p in perms],
        "trace": [{"permutations": len(perms), "positions": max(map(len, perms), default=0)}],
    }


@traced
def score(state: MoIState, runtime: Runtime[MoIContext]) -> MoIUpdate:
    """Eq. 3: the listwise Bayes-saliency score of every permutation, batched in one call."""
    ctx = context(runtime)
    perms = [tuple(p) for p in state.get("permutations") or []]
    if not perms:
        return {"saliency": [], "trace": [{"scored": 0}]}
    values, log_p_question = saliency(llm_of(ctx), question_of(state), state["candidates"], perms)
    emit(runtime, "scores", "score", saliency=[round(v, 4) for v in values], log_p_question=round(log_p_question, 4))
    return {"saliency": values, "log_p_question": log_p_question, "trace": [{"scored": len(values)}]}


@traced
def solve(state: MoIState, runtime: Runtime[MoIContext]) -> MoIUpdate:
    """Eq. 4: separate position bias w from utility u; the documents become the candidates by u."""
    ctx = context(runtime)
    perms = [tuple(p) for p in state.get("permutations") or []]
    candidates = list(state.get("candidates") or [])
    update = debias(ctx, candidates, perms, list(state.get("saliency") or []))
    emit(runtime, "position_weights", "solve", w=[round(v, 4) for v in update["position_weights"]])
    by_utility = sorted(zip(candidates, update["utilities"], strict=True), key=lambda pair: -pair[1])
    emit(runtime, "utilities", "solve",
         utilities=[{"id": d.id, "title": d.metadata.get("title", ""), "u": round(u, 4)} for d, u in by_utility])
    emit_evidence(runtime, "solve", update["documents"])
    return update


@traced
def rerank_moi(state: MoIState, runtime: Runtime[MoIContext]) -> MoIUpdate:
    """Permute → score → solve in one node, for graphs that want MoI as a drop-in reranker.

    Reads ``candidates`` (or, when absent, ``documents``) and writes the reranked ``documents``.
    """
    ctx = context(runtime)
    candidates = within_window(
        llm_of(ctx), ctx, question_of(state), list(state.get("candidates") or state.get("documents") or [])
    )
    perms = propose(ctx, len(candidates))
    values, log_p_question = saliency(llm_of(ctx), question_of(state), candidates, perms) if perms else ([], 0.0)
    update = debias(ctx, candidates, perms, values)
    emit_evidence(runtime, "rerank_moi", update["documents"], w=[round(v, 4) for v in update["position_weights"]])
    update["trace"][0].update(permutations=len(perms), scored=len(values))
    return {"candidates": candidates, "permutations": [list(p) for p in perms], "saliency": values,
            "log_p_question": log_p_question, **update}


@traced
def shuffle(state: MoIState, runtime: Runtime[MoIContext]) -> MoIUpdate:
    """Random-order baseline (Table 1 "Random"): one seeded random ordering of the candidates."""
    ctx = context(runtime)
    candidates = list(state.get("candidates") or [])
    order = [int(i) for i in np.random.default_rng(ctx.seed).permutation(len(candidates))]
    docs = [candidates[i] for i in order]
    emit_evidence(runtime, "shuffle", docs)
    return {"documents": docs, "ranking": [d.id for d in docs], "trace": [{"ranking": order}]}


@traced
def vote(state: MoIState, runtime: Runtime[MoIContext]) -> MoIUpdate:
    """Self-consistency baseline (App. C): answer over every permutation, then take the majority.

    All permutations are answered in ONE batched ``generate`` (greedy, as the paper decodes); the majority is
    that of the normalized non-empty answers.
    """
    ctx = context(runtime)
    question = question_of(state)
    candidates = list(state.get("candidates") or [])
    perms = [tuple(p) for p in state.get("permutations") or []] or [()]
    prompts = [answer_prompt(question, [candidates[i] for i in p][: ctx.k]) for p in perms]
    outputs = llm_of(ctx).generate(prompts, max_new_tokens=ctx.max_new_tokens, stop=list(ANSWER_STOP))
    answers = [clean_answer(o[0]) for o in outputs]
    counts = Counter(normalize_answer(a) for a in answers if normalize_answer(a))
    winner = counts.most_common(1)[0][0] if counts else ""
    final = next((a for a in answers if normalize_answer(a) == winner), "") if winner else ""
    emit(runtime, "votes", "vote", votes=dict(counts))
    emit(runtime, "answer", "answer", answer=final)
    empty = sum(1 for a in answers if not normalize_answer(a))
    return {
        "answer": final,
        "documents": candidates[: ctx.k],
        "votes": dict(counts),
        "trace": [{"votes": dict(counts), "empty_answers": empty, "vote_fallbacks": int(not counts)}],
    }
