"""Astute RAG nodes (Wang et al., 2024): elicit → build_pool → consolidate ⟲ t → propose → select.

Every judgment runs one of two ways (``AstuteContext.judge``):

* **score** (default with a model that scores its replies) — isolate, then aggregate
  (:mod:`causalrag.nodes.evidence`): consolidation reads every source alone, internal knowledge
  included, as a scored choice among the answers it offers and groups the sources that agree;
  later rounds re-read each source among the group answers it names (and stop early once no
  source moves); each group's confidence is the scored choice of its own answer given its own
  passages; the most reliable group has the most independent sources, ties broken by the scored
  choice among the group answers given all passages together. No free text is parsed.
* **generate** — the paper's prompts (Appendix A): groups, answers and the selection written as
  text and parsed tolerantly, each fallback counted in the trace.

Every node is temperature 0. Retrieved text only ever reaches prompts as data; which node runs
next depends on the iteration counter, convergence and the context alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langgraph.runtime import Runtime

from causalrag.nodes.common import context, emit, emit_evidence, judge_of, llm_of, question_of, stream_text, traced
from causalrag.nodes.evidence import (
    Reading,
    group_readings,
    passage_text,
    read_cached,
    read_jointly,
    reliability,
    together,
    with_candidate,
    written_answer,
)
from causalrag.prompts.astute import (
    BLOCK_STOP,
    EXTERNAL,
    INTERNAL,
    LINE_STOP,
    combined_prompt,
    consolidate_prompt,
    echoes_example,
    format_pool,
    internal_prompt,
    label_of,
    parse_choice,
    parse_final,
    parse_groups,
    parse_internal,
    parse_proposal,
    propose_prompt,
    select_prompt,
    words,
)
from causalrag.prompts.common import ANSWER_STOP, answer_prompt, format_passages
from causalrag.state.astute import AstuteContext, AstuteState, AstuteUpdate, Candidate, Group, SourceReading
from causalrag.state.base import RAGState, TraceEntry
from causalrag.text import clean_answer, key_sentences, mentions
from causalrag.tools.backends.base import LLM

_CLAIM_WORDS = 20


def labelled(doc: Document, label: str) -> Document:
    """A copy of ``doc`` carrying its source label (the retrieved document itself is left untouched)."""
    return Document(id=doc.id, page_content=doc.page_content, metadata={**doc.metadata, "label": label})


def one_group_per_passage(pool: Sequence[Document]) -> list[Group]:
    """Fallback grouping when a consolidation output has no usable group line: every passage alone."""
    return [{"sources": [label_of(d)], "claim": " ".join(d.page_content.split()[:_CLAIM_WORDS])} for d in pool]


def members(group: Group, pool: Sequence[Document]) -> list[Document]:
    """The pool's passages that ``group`` names as its sources, in the group's order."""
    by_label = {label_of(d): d for d in pool}
    return [by_label[s] for s in group["sources"] if s in by_label]


def passages_of(group: Group, pool: Sequence[Document]) -> str:
    """The text of ``group``'s passages, joined."""
    return " ".join(d.page_content for d in members(group, pool))


def match_candidate(final: str | None, candidates: Sequence[Candidate]) -> int:
    """Index of the candidate whose answer the final answer names (equal, or one contains the other's words).

    Returns:
        The candidate's index, an equal answer first; -1 if none.
    """
    if not final:
        return -1
    want = f" {words(final)} "
    scored = [
        (0 if have == want else 1, i)
        for i, c in enumerate(candidates)
        if (have := f" {words(c.get('answer') or '')} ").strip() and (have in want or want in have)
    ]
    return min(scored)[1] if scored else -1


def most_reliable(candidates: Sequence[Candidate]) -> int:
    """Fallback choice: highest confidence, then most sources, then both source kinds, then the first."""
    def reliability(i: int) -> tuple[float, int, int, int]:
        c = candidates[i]
        kinds = {s.split()[0] for s in c["sources"]}
        return (c.get("confidence") or 0.0, len(c["sources"]), len(kinds), -i)

    return max(range(len(candidates)), key=reliability) if candidates else -1


# --------------------------------------------------------------------------- §3.3
@traced
def elicit(state: RAGState, runtime: Runtime[Any]) -> AstuteUpdate:
    """Adaptive internal knowledge: up to m̂ passages from the model's memory, none when it is unsure.

    Any context with ``max_internal`` and ``internal_tokens`` serves (``triage`` writes them on its knowledge
    route).
    """
    ctx = context(runtime)
    question = question_of(state)
    if ctx.max_internal <= 0:
        return {"internal": [], "trace": [{"internal_passages": 0}]}
    text = llm_of(ctx).generate(
        [internal_prompt(question, ctx.max_internal)],
        max_new_tokens=ctx.internal_tokens * ctx.max_internal,
        temperature=0.0,
        stop=BLOCK_STOP,
    )[0][0]
    internal = [
        Document(
            id=f"internal-{i}", page_content=p, metadata={"title": "", "source": "internal", "label": f"{INTERNAL} {i}"}
        )
        for i, p in enumerate(parse_internal(text, ctx.max_internal), 1)
    ]
    emit_evidence(runtime, "elicit", internal, abstained=not internal)
    return {"internal": internal, "trace": [{"internal_passages": len(internal), "abstained": not internal}]}


# --------------------------------------------------------------------------- §3.4
@traced
def build_pool(state: AstuteState, runtime: Runtime[AstuteContext]) -> AstuteUpdate:
    """D₀ = E ⊕ I with sources S₀: retrieved passages ``ext i`` (by rank, shown reversed) then memory ``int i``."""
    ctx = context(runtime)
    external = [labelled(d, f"{EXTERNAL} {i}") for i, d in enumerate(state.get("documents") or [], 1)]
    pool = (external[::-1] if ctx.reverse else external) + list(state.get("internal") or [])
    emit_evidence(runtime, "pool", pool, labels=[label_of(d) for d in pool])
    return {
        "pool": pool,
        "groups": [],
        "readings": [],
        "iteration": 0,
        "converged": False,
        "trace": [{"external": len(external), "internal": len(pool) - len(external)}],
    }


def _groups_or_fallback(
    text: str, pool: Sequence[Document], last: Sequence[Group]
) -> tuple[list[Group], TraceEntry]:
    """Parsed groups, else the last groups, else one group per passage; with the figures for the trace."""
    parsed = parse_groups(text, [label_of(d) for d in pool])
    fresh = [g for g in parsed.groups if not echoes_example(g, passages_of(g, pool))]
    groups = fresh or list(last) or one_group_per_passage(pool)
    figures: TraceEntry = {
        "groups": len(groups),
        "group_sources": [g["sources"] for g in groups],
        "unknown_labels": parsed.unknown_labels,
        "example_echoes": len(parsed.groups) - len(fresh),
        "consolidation_fallback": int(not fresh),
    }
    return groups, figures


def _consolidation_round(
    state: AstuteState,
    runtime: Runtime[Any],
    prompt: Callable[[str, Sequence[Document], Sequence[Group]], str],
    *,
    node: str,
    stage: str,
    max_new_tokens: int,
) -> tuple[str, list[Group], TraceEntry]:
    """One consolidation call over D₀ and the last groups (``prompt`` builds it): raw text, groups, trace figures."""
    pool, last = state.get("pool") or [], state.get("groups") or []
    iteration = state.get("iteration", 0) + 1
    text = stream_text(
        runtime, llm_of(context(runtime)), prompt(question_of(state), pool, last),
        stage=stage, max_new_tokens=max_new_tokens, stop=BLOCK_STOP,
    )
    groups, figures = _groups_or_fallback(text, pool, last)
    emit(runtime, "groups", node, iteration=iteration, groups=groups)
    return text, groups, {"iteration": iteration, **figures}


@traced
def consolidate(state: AstuteState, runtime: Runtime[AstuteContext]) -> AstuteUpdate:
    """One round D_{j+1} = M(p_con, q, ⟨D₀,S₀⟩, ⟨Dⱼ,Sⱼ⟩): group agreeing passages, split conflicts, drop noise."""
    ctx = context(runtime)
    iteration = state.get("iteration", 0) + 1
    if judge_of(ctx) == "score":
        return _scored_round(state, runtime, node="consolidate")
    _, groups, figures = _consolidation_round(
        state,
        runtime,
        consolidate_prompt,
        node="consolidate",
        stage=f"consolidate {iteration}",
        max_new_tokens=ctx.consolidation_tokens,
    )
    return {"groups": groups, "iteration": iteration, "trace": [figures]}


# --------------------------------------------------------------------------- §3.5
@traced
def propose(state: AstuteState, runtime: Runtime[AstuteContext]) -> AstuteUpdate:
    """One answer per consolidated group with a 0-10 confidence: all groups in one batched call.

    A missing confidence falls back to the group's share of the pool (its source support) and is counted;
    an empty answer, or the prompt example's answer echoed, drops the group (``dropped_answers``).
    """
    ctx = context(runtime)
    question, pool = question_of(state), state.get("pool") or []
    groups = state.get("groups") or []
    if judge_of(ctx) == "score":
        candidates: list[Candidate] = _scored_confidences(llm_of(ctx), question, groups, pool)
        emit(runtime, "candidates", "propose", candidates=candidates)
        return {"candidates": candidates, "trace": [{"answers": [c["answer"] for c in candidates],
                                                      "confidences": [c["confidence"] for c in candidates]}]}
    prompts = [propose_prompt(question, g, members(g, pool)) for g in groups]
    outputs = (
        llm_of(ctx).generate(prompts, max_new_tokens=ctx.max_new_tokens + 8, temperature=0.0, stop=BLOCK_STOP)
        if prompts
        else []
    )
    candidates, missing = [], 0
    for group, out in zip(groups, outputs, strict=True):
        answer, confidence = parse_proposal(out[0] if out else "")
        if not answer or echoes_example({"answer": answer}, passages_of(group, pool)):
            continue
        if confidence is None:
            missing += 1
            confidence = round(len(group["sources"]) / max(1, len(pool)), 3)
        candidates.append({**group, "answer": answer, "confidence": confidence})
    emit(runtime, "candidates", "propose", candidates=candidates)
    figures = {
        "answers": [c["answer"] for c in candidates],
        "confidences": [c["confidence"] for c in candidates],
        "confidence_fallbacks": missing,
        "dropped_answers": len(groups) - len(candidates),
    }
    return {"candidates": candidates, "trace": [figures]}


def _finish(
    runtime: Runtime[Any], state: AstuteState, candidates: list[Candidate], final: str | None, *, scored: bool = False
) -> tuple[AstuteUpdate, TraceEntry]:
    """The final answer: the candidate the marked answer names, else the most reliable candidate.

    When groups carry answers, the final answer is one of them, so a few-shot example copied into
    the markers (or any text a passage planted there) cannot outvote the groups. With no candidate
    (the single-call shortcut's group lines often carry no answer field) the marked answer is the
    answer, as in the paper (§4.1), unless it echoes the prompt's example; with neither (empty
    pool, every group dropped, no marker) the standard RAG answer stands in.
    """
    ctx = context(runtime)
    pool = state.get("pool") or []
    chosen = match_candidate(final, candidates)
    select_fallback = int(chosen < 0 and bool(candidates) and not (scored and final))
    if select_fallback:
        chosen = most_reliable(candidates)
    # a scored choice may pick the passages' joint answer, which no group holds; text is checked for echoes
    marked = (
        chosen < 0
        and bool(final)
        and (scored or (not candidates and not echoes_example({"answer": final}, format_pool(pool))))
    )
    if chosen >= 0:
        answer, used = candidates[chosen]["answer"], members(candidates[chosen], pool)
    elif marked:
        answer, used = final or "", list(state.get("documents") or pool) if scored else list(pool)
    else:  # no group proposed an answer and no usable marker (e.g. an empty pool): plain RAG's answer
        used = list(state.get("documents") or [])[: ctx.k]
        answer = clean_answer(
            llm_of(ctx).generate(
                [answer_prompt(question_of(state), used)], max_new_tokens=ctx.max_new_tokens, stop=ANSWER_STOP
            )[0][0]
        )
    emit(runtime, "answer", "select", answer=answer, chosen=chosen)
    update: AstuteUpdate = {"answer": answer, "documents": used, "candidates": candidates, "chosen": chosen}
    figures: TraceEntry = {
        "chosen_group": chosen,
        "group_confidences": [c.get("confidence") for c in candidates],
        "select_fallback": select_fallback,
        "marked_answer": int(marked),
        "plain_answer_fallback": int(not candidates and not marked),
    }
    return update, figures


@traced
def select(state: AstuteState, runtime: Runtime[AstuteContext]) -> AstuteUpdate:
    """Compare the groups' answers (sources, agreement, confidence) and keep the most reliable one.

    The model writes its choice between ``<answer>`` markers, streamed. With a single candidate there
    is nothing to compare and no call is made.
    """
    ctx = context(runtime)
    candidates = list(state.get("candidates") or [])
    if judge_of(ctx) == "score":
        final, figures = _most_reliable_scored(state, runtime, candidates)
        update, finish_figures = _finish(runtime, state, candidates, final, scored=True)
        return {**update, "trace": [{**figures, **finish_figures}]}
    final = None
    if len(candidates) > 1:
        text = stream_text(
            runtime, llm_of(ctx), select_prompt(question_of(state), candidates),
            stage="select", max_new_tokens=ctx.max_new_tokens + 8, stop=LINE_STOP,
        )
        final = parse_choice(text)
    elif candidates:
        final = candidates[0]["answer"]
    update, figures = _finish(runtime, state, candidates, final)
    return {**update, "trace": [{"marker_missing": int(len(candidates) > 1 and final is None), **figures}]}


@traced
def answer_combined(state: AstuteState, runtime: Runtime[AstuteContext]) -> AstuteUpdate:
    """The paper's merged last step in one call: consolidate (over D₀ and the last groups), answer, select."""
    ctx = context(runtime)
    # scored: the last round's groups are the candidates; their support and the joint reading decide
    if judge_of(ctx) == "score":
        update = _scored_round(state, runtime, node="answer_combined")
        groups = update["groups"]
        final, figures = _most_reliable_scored({**state, **update}, runtime, groups)
        finished, finish_figures = _finish(runtime, {**state, **update}, groups, final, scored=True)
        return {**update, **finished, "trace": [{**update["trace"][0], **figures, **finish_figures}]}
    text, groups, figures = _consolidation_round(
        state,
        runtime,
        combined_prompt,
        node="answer_combined",
        stage="answer_combined",
        max_new_tokens=ctx.consolidation_tokens + ctx.max_new_tokens,
    )
    candidates = [g for g in groups if g.get("answer")]
    final = parse_final(text)
    update, finish_figures = _finish(runtime, state, candidates, final)
    trace = {**figures, "marker_missing": int(final is None), **finish_figures}
    return {**update, "groups": groups, "iteration": figures["iteration"], "trace": [trace]}


# --------------------------------------------------------------------------- scored judgments (judge="score")
def _scored_round(state: AstuteState, runtime: Runtime[Any], *, node: str) -> AstuteUpdate:
    """One consolidation round as scored choices (§3.4: group consistent sources, separate conflicts, drop noise).

    Round 1 reads every source of D₀ alone (internal knowledge is one source) and groups those whose
    answers agree; a source that offers no answer is left out. Later rounds re-read each source
    among the group answers it names, so a source moves to the group it supports; when no source
    moves, the groups have converged and the remaining rounds are skipped (``converged``).
    """
    ctx = context(runtime)
    llm, question = llm_of(ctx), question_of(state)
    pool, last = state.get("pool") or [], state.get("groups") or []
    iteration = state.get("iteration", 0) + 1
    read = state.get("read") or {}
    if last:
        readings = _reread(llm, question, pool, last, state.get("readings") or [])
    else:  # every source alone; the assessment read the retrieved ones already
        readings, read = read_cached(llm, question, pool, read)
    found = group_readings(readings, [label_of(d) for d in pool])
    groups: list[Group] = [
        {
            "answer": g.answer,
            "sources": g.sources,
            "claim": key_sentences(question, passage_text(pool[g.members[0]]), 1),
        }
        for g in found
    ]
    converged = bool(last) and [g["sources"] for g in groups] == [g["sources"] for g in last]
    emit(runtime, "groups", node, iteration=iteration, groups=groups, converged=converged)
    figures: TraceEntry = {
        "iteration": iteration,
        "groups": len(groups),
        "group_sources": [g["sources"] for g in groups],
        "abstained_sources": sum(not r.votes for r in readings),
        "converged": converged,
    }
    return {
        "groups": groups,
        "iteration": iteration,
        "converged": converged,
        "read": read,
        "readings": [
            {"source": label_of(d), **r.as_dict()} for d, r in zip(pool, readings, strict=True)
        ],
        "trace": [figures],
    }


def _reread(
    llm: LLM, question: str, pool: Sequence[Document], groups: Sequence[Group], previous: Sequence[SourceReading]
) -> list[Reading]:
    """Each source re-read among the group answers it names (one batched call for those naming several)."""
    answers = [g["answer"] for g in groups]
    named = [[a for a in answers if mentions(a, passage_text(d))] for d in pool]
    before = {r["source"]: r for r in previous}
    several = [i for i, n in enumerate(named) if len(n) > 1]
    chosen = dict(
        zip(
            several,
            read_jointly(llm, [question] * len(several), [[pool[i]] for i in several], [named[i] for i in several]),
            strict=True,
        )
    )
    readings = []
    for i, d in enumerate(pool):
        old: Mapping[str, Any] = before.get(label_of(d)) or {}
        if old.get("relevance", 0.0) <= 0:  # a source that did not answer the question stays out
            readings.append(
                Reading(old.get("answer"), old.get("probability", 0.0), old.get("relevance", 0.0), old.get("how", ""))
            )
        elif i in chosen:
            readings.append(Reading(chosen[i].answer, chosen[i].probs[chosen[i].best], old["relevance"], "regroup"))
        elif named[i]:
            readings.append(Reading(named[i][0], 1.0, old["relevance"], "regroup"))
        else:  # names no group answer: keeps what it read before
            readings.append(
                Reading(old.get("answer"), old.get("probability", 0.0), old["relevance"], old.get("how", ""))
            )
    return readings


def _scored_confidences(
    llm: LLM, question: str, groups: Sequence[Group], pool: Sequence[Document]
) -> list[Candidate]:
    """Each group's confidence: the scored choice of its own answer among all group answers, given its own passages."""
    answers = [g["answer"] for g in groups]
    if len(groups) < 2:
        return [{**g, "confidence": 1.0} for g in groups]
    choices = read_jointly(llm, [question] * len(groups), [members(g, pool) for g in groups], [answers] * len(groups))
    return [{**g, "confidence": round(c.probs[i], 4)} for i, (g, c) in enumerate(zip(groups, choices, strict=True))]


def _most_reliable_scored(
    state: AstuteState, runtime: Runtime[Any], candidates: Sequence[Candidate]
) -> tuple[str | None, TraceEntry]:
    """§3.5's comparison of reliability as explicit scores.

    Cross-source confirmation first: a group's sources beyond the first (retrieved or from memory)
    confirm its answer; then the scored choice among the candidate answers given every passage
    together, which also decides whenever no answer is confirmed. The model's own reading of all
    passages together (standard RAG's answer) joins the candidates without a source of its own, so
    a question that no single passage answers (a bridge) keeps the answer only the whole set gives.
    """
    ctx = context(runtime)
    llm, question = llm_of(ctx), question_of(state)
    everything = together(llm, question, list(state.get("documents") or []) + list(state.get("internal") or []))
    prompt = answer_prompt(question, everything)
    joint_answer = written_answer(llm, prompt, format_passages(everything), max_new_tokens=ctx.max_new_tokens)
    answers = with_candidate([c["answer"] for c in candidates], joint_answer, question)
    if not answers:
        return None, {"reliability": [], "joint_answer": joint_answer}
    joint = llm.choose([prompt], [answers])[0]
    confirmed = [max(0, len(c["sources"]) - 1) for c in candidates] + [0] * (len(answers) - len(candidates))
    scores = reliability(confirmed, joint)
    best = max(range(len(answers)), key=scores.__getitem__)
    emit(runtime, "reliability", "select", answers=answers, reliability=[round(r, 4) for r in scores])
    return answers[best], {
        "reliability": [round(r, 4) for r in scores],
        "joint_answer": joint_answer,
        "joint_choice": joint.as_dict(),
    }
