"""RetroRAG nodes: collate → discover → answer → check ⟲ requery (one iteration L per pass).

With ``judge="score"`` (the default for a model that scores its replies) every judgment is scored,
no free text is parsed for a decision:

* the discovery gates are likelihood gains (calibrated against "N/A"): s_ra — how much the source
  passage raises the inference's likelihood ("is it stated there?"), s_qr — how much the inference
  raises the likelihood of the question ("does it help answer it?"); s = σ(gain), kept iff both > 0.5;
* the answer a is chosen among the answers the source passages give when read alone
  (:mod:`causalrag.nodes.evidence`) — no chain of thought to hallucinate in — the most confirmed
  first (sources of E_s beyond the first that state it), then the scored choice under the direct
  prompt M_D with E_s and E_i among equally confirmed ones (:func:`~causalrag.nodes.evidence.reliability`,
  as Astute and CF-RAG decide); its reasoning r (for the re-query) is the source sentence that states a;
* the self-consistency score s_sc is the choice's probability mass on a: the expected agreement of
  a temperature-1 SC-generator answer a_sc with a (a_sc itself is one such draw, seeded).

With ``judge="generate"`` the paper's prompts are answered in text and read as below.

Every judgment of the paper (self-consistency s_sc, Question-Relevance s_qr, Reference-Attribution
s_ra) is a yes-probability P(yes)/(P(yes)+P(no)). The bundled 270M base model answers "Yes" to
nearly anything (≈ 0.55–0.9 whatever the input), so with ``judge="combined"`` (the default) each
score is made robust in two ways, and both parts are kept in the trace:

1. **calibrated**: the prompt's yes-probability is contrasted with the same prompt on a
   content-free input ("N/A", Zhao et al. 2021): logit(p_cal) = logit(p) − logit(p_neutral);
   the neutral prompts ride in the same batched ``yes_probability`` call;
2. **combined**: s = ½·p_cal + ½·agreement, where agreement is a text score that needs no
   LLM — for s_sc the agreement of a and a_sc (1 if one normalized answer contains the other,
   else the larger of their token F1 and MiniLM cosine), for s_qr the cosine of the inference
   and the closest of q_m and E_i^(L-1) (what M_qr reads), for s_ra the share of the inference's content words
   found in E_s.

A text agreement of 1 passes t = 0.7 unless the calibrated LLM says "no" (p_cal < 0.4); a text
agreement near 0 can never pass. ``judge="raw"`` is the paper's rule as written.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

import numpy as np
from langchain_core.documents import Document
from langgraph.runtime import Runtime

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
from causalrag.nodes.evidence import most_confirmed, read_cached
from causalrag.prompts import retro as prompts
from causalrag.prompts.common import echoes_examples, format_passages
from causalrag.state.base import ChoiceRecord
from causalrag.state.retro import (
    Consistency,
    GateScore,
    JudgedInference,
    RetroContext,
    RetroState,
    RetroUpdate,
    Round,
    StopReason,
    YesScore,
)
from causalrag.text import (
    clean_answer,
    f1_score,
    key_sentences,
    mentions,
    normalize_answer,
    same_answer,
)
from causalrag.tools.backends.base import LLM, Choice, softmax
from causalrag.tools.encoders import cosine_matrix

_CONNECTORS = {"of", "van", "von", "de", "der", "du", "la", "le", "the"}
_LEADING = {"in", "on", "at", "what", "which", "who", "whom", "whose", "where", "when", "how", "why",
            "is", "are", "was", "were", "did", "does", "do", "for", "from", "to", "by", "of", "name"}
_STOPWORDS = (
    _LEADING
    | _CONNECTORS
    | {"and", "a", "an", "it", "its", "his", "her", "their", "was", "with", "as", "that", "this", "be"}
)
FACT_ROOM = 128
"""Tokens kept beside E_s for the inferential evidence and the re-query's reasoning line when E_s is fitted."""
_UNINFORMATIVE = 0.1
"""A calibrated yes-probability within this distance of 0.5 says nothing: text agreement decides."""


# --------------------------------------------------------------------------- helpers
def key_entities(question: str) -> list[str]:
    """k: runs of capitalized words (with inner connectors such as "van", "of") in the question.

    The paper treats k as given; we take it from the question with no LLM call (names and titles
    are capitalized in the questions of HotpotQA/2Wiki), skipping a capitalized question word.
    """
    words = re.findall(r"[\w'’.-]+|[^\w\s]", question)  # punctuation tokens end a run
    entities: list[list[str]] = []
    run: list[str] = []
    for i, word in enumerate(words):
        capital = word[:1].isupper() and not (i == 0 and word.lower() in _LEADING)
        if capital or (run and word.lower() in _CONNECTORS):
            run.append(word)
            continue
        entities.append(run)
        run = []
    entities.append(run)
    spans = []
    for run in entities:
        while run and run[-1].lower() in _CONNECTORS:
            run = run[:-1]
        if run:
            spans.append(" ".join(run).strip(".?"))
    return list(dict.fromkeys(s for s in spans if s))


def content_words(text: str) -> set[str]:
    """The text's normalized words, stopwords and question words left out."""
    return {w for w in normalize_answer(text).split() if w not in _STOPWORDS}


def calibrate(p: float, neutral: float) -> float:
    """Contextual calibration: remove the prompt's prior log-odds of "yes" (measured on a content-free input)."""

    def clip(x: float) -> float:
        return min(1 - 1e-4, max(1e-4, x))

    logit = math.log(clip(p) / (1 - clip(p))) - math.log(clip(neutral) / (1 - clip(neutral)))
    return 1 / (1 + math.exp(-logit))


def judge(raw: float, neutral: float, agreement: float, mode: YesScore) -> Consistency:
    """One judgment: the raw and calibrated yes-probabilities, the text agreement, the score used."""
    cal = calibrate(raw, neutral)
    score = {"raw": raw, "calibrated": cal, "combined": 0.5 * (cal + agreement)}[mode]
    return {"raw": round(raw, 4), "calibrated": round(cal, 4), "agreement": round(agreement, 4),
            "score": round(score, 4), "uninformative": abs(cal - 0.5) < _UNINFORMATIVE}


def answer_agreement(a: str, b: str) -> float:
    """Text agreement of two short answers: containment → 1, else max(token F1, embedding cosine)."""
    na, nb = normalize_answer(a), normalize_answer(b)
    if not na or not nb:
        return 0.0
    if f" {na} " in f" {nb} " or f" {nb} " in f" {na} ":
        return 1.0
    return max(f1_score(a, [b]), float(cosine_matrix([a], [b])[0, 0]))


def support(claim: str, documents: Sequence[Document]) -> float:
    """Share of the claim's content words that occur in the passages (lexical attribution)."""
    words = content_words(claim)
    if not words:
        return 0.0
    found = set().union(*(content_words(titled_text(d)) for d in documents)) if documents else set()
    return len(words & found) / len(words)


def best_source(claim: str, documents: Sequence[Document]) -> list[Document]:
    """The one passage that shares most content words with the claim (M_ra reads it, not all of E_s)."""
    if not documents:
        return []
    words = content_words(claim)
    return [max(documents, key=lambda d: len(words & content_words(titled_text(d))))]


def new_entities(texts: Sequence[str], question: str) -> list[str]:
    """Capitalized spans of ``texts`` that the question does not name: the bridge entities found so far."""
    known = content_words(question)
    spans = [e for t in texts for e in key_entities(t)]
    return list(dict.fromkeys(e for e in spans if content_words(e) - known))


def copies_examples(fact: str, evidence: str) -> bool:
    """Whether ``fact`` names something that only the worked examples name, not ``evidence`` (E_s and q).

    M_IE's worked example is about Inception's director; the 270M model copies from it ("The artist was born
    in London." about a painter), and a likelihood gate can pass such a copy, so it is no candidate.
    """
    return any(echoes_examples(name, evidence) for name in key_entities(fact))


def zscore(x: np.ndarray) -> np.ndarray:
    """(x − mean) / std; zeros when x has one value or no spread."""
    return (x - x.mean()) / x.std() if len(x) > 1 and x.std() > 1e-9 else np.zeros_like(x)


def match_scores(ctx: RetroContext, query: str, texts: Sequence[str]) -> list[float]:
    """S_e: how much each text helps answer ``query`` — one batched LLM call and/or one embedding batch.

    "llm" is the paper's M_e yes-probability; "dense" the MiniLM cosine; "combined" the mean of
    their z-scores (the 270M model's yes-probabilities barely separate relevant passages, see
    docs/methods/retro.md). Scores only rank the candidates, so no calibration is needed here.
    """
    if not texts:
        return []
    scores: list[float]
    if ctx.matching == "dense":
        scores = cosine_matrix([query], list(texts))[0].astype(float).round(4).tolist()
        return scores
    llm = np.array(llm_of(ctx).yes_probability([prompts.relevance_prompt(t, query) for t in texts]))
    if ctx.matching == "llm":
        scores = llm.round(4).tolist()
        return scores
    dense = cosine_matrix([query], list(texts))[0].astype(float)
    scores = ((zscore(llm) + zscore(dense)) / 2).round(4).tolist()
    return scores


def top(items: Sequence[object], scores: Sequence[float], n: int) -> list[int]:
    """Indices of the ``n`` best-scored items (stable: ties keep their order)."""
    return sorted(range(len(items)), key=lambda i: -scores[i])[:n]


def with_score(doc: Document, score: float) -> Document:
    """A copy of ``doc`` scored ``score``, its retrieval score kept as ``retrieval_score``."""
    meta = dict(doc.metadata)
    meta.setdefault("retrieval_score", meta.get("score"))
    meta["score"] = float(score)
    return Document(id=doc.id, page_content=doc.page_content, metadata=meta)


# --------------------------------------------------------------------------- nodes
@traced
def collate(state: RetroState, runtime: Runtime[RetroContext]) -> RetroUpdate:
    """Evidence collation (Eq. 2): retrieve with q_s^(L-1), score E_s^(L-1) ∪ D_C^(L) against q_m^(L), keep top N.

    D_C^(L) is the top ``retrieve_k`` passages not already held (re-retrieving held passages adds
    nothing). With ``collation=False`` (the "w/o UoE" ablation) new passages are only appended.
    """
    ctx = context(runtime)
    question = question_of(state)
    iteration = state.get("iteration", 0) + 1
    search = state.get("search_query") or question
    matching = question if search == question else f"{question} {search}"
    held = list(state.get("source_evidence") or [])
    held_ids = {d.id for d in held}
    hits = store_of(ctx).retrieve(search, ctx.retrieve_k + len(held), mode=ctx.retrieval, ids=ctx.ids)
    llm, facts = llm_of(ctx), list(state.get("inferential_evidence") or [])

    def fits(docs: list[Document]) -> list[Document]:
        return fit(
            llm, docs, lambda ds: prompts.cot_prompt(question, ds, facts), reply_tokens=ctx.reasoning_tokens + FACT_ROOM
        )

    new = [trimmed for d in hits if d.id not in held_ids for trimmed in fits([d])][: ctx.retrieve_k]  # each fits alone
    pool = held + new
    if ctx.collation:
        scores = match_scores(ctx, matching, [titled_text(d) for d in pool])
        kept = [with_score(pool[i], scores[i]) for i in top(pool, scores, ctx.evidence_size)]
    else:
        scores, kept = [], pool
    kept = fits(kept)  # and together, best first, in every prompt that holds E_s
    kept_ids = {d.id for d in kept}
    dropped = [d.metadata.get("title", d.id) for d in held if d.id not in kept_ids]
    emit_evidence(runtime, "collate", kept, iteration=iteration, query=search, new=len(new), dropped=dropped)
    update: RetroUpdate = {
        "iteration": iteration,
        "search_query": search,
        "matching_query": matching,
        "source_evidence": kept,
        "documents": kept,
        "trace": [{"iteration": iteration, "query": search, "candidates": len(pool), "new": len(new),
                   "match_scores": scores, "kept": [d.metadata.get("title", d.id) for d in kept], "dropped": dropped}],
    }
    if not state.get("key_entities"):
        update["key_entities"] = key_entities(question)
    return update


@traced
def discover(state: RetroState, runtime: Runtime[RetroContext]) -> RetroUpdate:
    """Evidence discovery (Eq. 3–4): deduce e_ic about k from E_s^(L) and keep the best that pass both gates.

    The inferences with s_qr > 0.5 and s_ra > 0.5 are merged with E_i^(L-1), scored against q with S_e, and
    the top K kept.

    One generation (M_IE) and one batched ``yes_probability`` call for both gates of every
    candidate and their two content-free prompts; then S_e over E_i^(L-1) ∪ passed. M_ra reads the
    candidate with the one passage of E_s that shares most words with it ("found in any claim of
    E_s", checked where it can be found), which keeps each gate prompt short on a CPU.
    """
    ctx = context(runtime)
    if not ctx.discovery:
        return {"inferential_evidence": [], "trace": [{"discovery": False}]}
    question, llm = question_of(state), llm_of(ctx)
    sources = list(state.get("source_evidence") or [])
    previous = list(state.get("inferential_evidence") or [])
    matching = state.get("matching_query") or question
    completion = llm.generate(
        [prompts.inference_prompt(question, state.get("key_entities") or [], sources)],
        max_new_tokens=12 * ctx.max_inferences, stop=prompts.LIST_STOP,
    )[0][0]
    seen = {normalize_answer(p) for p in previous} | {normalize_answer(question)}
    evidence = f"{question}\n{format_passages(sources)}"
    written = [f for f in prompts.parse_facts(completion, ctx.max_inferences) if normalize_answer(f) not in seen]
    candidates = [f for f in written if not copies_examples(f, evidence)]
    copied = len(written) - len(candidates)
    if judge_of(ctx) == "score":
        scored = scored_gates(llm, candidates, sources, matching)
        return _discovered(state, runtime, ctx, scored, previous, completion, copied=copied)
    gates = [prompts.question_relevance_prompt(c, previous, matching) for c in candidates]
    gates += [prompts.attribution_prompt(c, best_source(c, sources)) for c in candidates]
    gates += [prompts.question_relevance_prompt(prompts.CONTENT_FREE, previous, matching),
              prompts.attribution_prompt(prompts.CONTENT_FREE, sources[:1])]
    yes = llm.yes_probability(gates) if candidates else []
    n = len(candidates)
    # QR's text side mirrors M_qr, which reads q_m knowing E_i^(L-1): closest of q_m and the known inferences
    relevance = cosine_matrix(candidates, [matching, *previous]).max(axis=1) if candidates else []
    judged: list[JudgedInference] = [
        {"fact": c,
         "qr": judge(yes[i], yes[2 * n], float(relevance[i]), ctx.yes_score),
         "ra": judge(yes[n + i], yes[2 * n + 1], support(c, sources), ctx.yes_score)}
        for i, c in enumerate(candidates)
    ]
    return _discovered(state, runtime, ctx, judged, previous, completion, copied=copied)


def _discovered(
    state: RetroState,
    runtime: Runtime[Any],
    ctx: RetroContext,
    judged: list[JudgedInference],
    previous: list[str],
    completion: str,
    *,
    copied: int,
) -> RetroUpdate:
    """Keep the inferences that pass both gates, merge with E_i^(L-1), score against q with S_e, keep the top K.

    ``copied``: how many written inferences were left out as copies of the worked example.
    """
    passed = [
        j["fact"] for j in judged if j["qr"]["score"] > ctx.gate_threshold and j["ra"]["score"] > ctx.gate_threshold
    ]
    pool = previous + passed
    if ctx.collation:
        scores = match_scores(ctx, question_of(state), pool)
        kept = [pool[i] for i in top(pool, scores, ctx.inferential_size)]
    else:
        scores, kept = [], pool
    emit(runtime, "inferences", "discover", iteration=state.get("iteration", 1), candidates=judged, kept=kept)
    gates: tuple[Literal["qr", "ra"], ...] = ("qr", "ra")
    uninformative = sum(bool(j[g].get("uninformative")) for j in judged for g in gates)
    return {
        "inferential_evidence": kept,
        "trace": [
            {
                "iteration": state.get("iteration", 1),
                "generated": len(judged),
                "passed": len(passed),
                "kept": kept,
                "gates": judged,
                "match_scores": scores,
                "gates_uninformative_llm": uninformative,
                "copied": copied,
                "parse_fallbacks": int(not judged and not copied and bool(completion.strip())),
            }
        ],
    }


def scored_gates(
    llm: LLM, facts: Sequence[str], sources: Sequence[Document], matching: str
) -> list[JudgedInference]:
    """s_ra and s_qr of every inference as likelihood gains over a content-free input, in one ``choose`` call.

    s_ra: the inference read after its best source passage vs after "N/A"; s_qr: the matching query
    read after the inference vs after "N/A". σ(mean gain per token) > 0.5 ⟺ the evidence raises it.
    """
    if not facts:
        return []
    attributed = [prompts.claim_prompt(best_source(f, sources)) for f in facts]
    relevant = [prompts.helps_prompt(f) for f in facts]
    choices = llm.choose(
        attributed + relevant,
        [[f] for f in facts] + [[matching]] * len(facts),
        neutral=[prompts.claim_prompt([])] * len(facts) + [prompts.helps_prompt(prompts.CONTENT_FREE)] * len(facts),
    )

    def gate(c: Choice) -> GateScore:
        return {"gain": round(c.scores[0], 4), "score": round(1 / (1 + math.exp(-c.scores[0])), 4)}

    return [{"fact": f, "ra": gate(choices[i]), "qr": gate(choices[len(facts) + i])} for i, f in enumerate(facts)]


@traced
def answer_from_evidence(state: RetroState, runtime: Runtime[RetroContext]) -> RetroUpdate:
    """Answerer: chain-of-thought (a, r) at low temperature (M_C) and a direct answer a_sc at temperature 1.0 (M_D).

    The CoT completion streams token by token when greedy. If it has no "Answer:" line, the
    answer is asked for once more after its reasoning (counted as ``cot_fallbacks``).
    """
    ctx = context(runtime)
    question, llm = question_of(state), llm_of(ctx)
    sources = list(state.get("source_evidence") or [])
    facts = list(state.get("inferential_evidence") or [])
    if judge_of(ctx) == "score":
        return scored_answer(state, runtime, ctx, sources, facts)
    cot = prompts.cot_prompt(question, sources, facts)
    if ctx.answer_temperature > 0:
        completion = llm.generate([cot], max_new_tokens=ctx.reasoning_tokens, temperature=ctx.answer_temperature,
                                  stop=prompts.ANSWER_STOP, seed=ctx.seed)[0][0]
    else:
        completion = stream_text(
            runtime,
            llm,
            cot,
            stage="answer_from_evidence",
            max_new_tokens=ctx.reasoning_tokens,
            stop=prompts.ANSWER_STOP,
        )
    reasoning, final = prompts.split_cot(completion)
    fallback = final is None
    if final is None:
        final = clean_answer(llm.generate([f"{cot} {reasoning}\nAnswer:"], max_new_tokens=ctx.max_new_tokens,
                                          stop=prompts.LINE_STOP)[0][0])
    iteration = state.get("iteration", 1)
    seed = None if ctx.seed is None else ctx.seed + iteration
    sampled = llm.generate([prompts.direct_prompt(question, sources, facts)], max_new_tokens=ctx.max_new_tokens,
                           temperature=ctx.sc_temperature, stop=prompts.LINE_STOP, seed=seed)[0][0]
    sc_answer = clean_answer(sampled)
    emit(
        runtime,
        "answer",
        "answer_from_evidence",
        iteration=iteration,
        answer=final,
        reasoning=reasoning,
        sc_answer=sc_answer,
    )
    return {"answer": final, "reasoning": reasoning, "sc_answer": sc_answer,
            "trace": [{"iteration": iteration, "answer": final, "reasoning": reasoning, "sc_answer": sc_answer,
                       "cot_fallbacks": int(fallback)}]}


def scored_answer(
    state: RetroState, runtime: Runtime[Any], ctx: RetroContext, sources: list[Document], facts: list[str]
) -> RetroUpdate:
    """The scored answer a, its reasoning r, and the choice that gives s_sc and a_sc.

    a is the most reliable of the answers the sources give read alone (each passage is read once per run and
    remembered in ``read``) and M_D's own greedy answer over E_s and E_i (a bridge answer no single source
    gives): cross-source confirmation first, M_D's scored choice among equally confirmed answers. s_sc is the
    choice's mass on a; a_sc one seeded temperature-``sc_temperature`` draw from it.

    Read jointly, the 270M model follows a conflicting E_s's blend, which is why Astute and CF-RAG
    vote this way too. A self-consistency score that stays M_D's own keeps the paper's loop: a voted
    a that M_D doubts sends the question round again.
    """
    question, llm = question_of(state), llm_of(ctx)
    held, read = read_cached(llm, question, sources, state.get("read") or {})
    direct = prompts.direct_prompt(question, sources, facts)
    evidence = prompts.context_block(sources, facts)
    confirmed = most_confirmed(llm, question, direct, evidence, held, max_new_tokens=ctx.max_new_tokens)
    iteration = state.get("iteration", 1)
    if confirmed is None:  # nothing to choose among (no reading, no written answer)
        return {"answer": "", "reasoning": "", "sc_answer": "", "sc_choice": {}, "read": read,
                "trace": [{"iteration": iteration, "answer": "", "no_candidate_fallbacks": 1}]}
    choice, scores = confirmed
    final = choice.options[max(range(len(scores)), key=scores.__getitem__)]
    stating = [d for d in sources if mentions(final, titled_text(d))]
    reasoning = key_sentences(question, titled_text(stating[0]), 1) if stating else ""
    rng = np.random.default_rng(None if ctx.seed is None else ctx.seed + iteration)
    weights = softmax([s / max(ctx.sc_temperature, 1e-3) for s in choice.scores])  # a non-finite score weighs nothing
    sc_answer = choice.options[int(rng.choice(len(weights), p=weights))]
    emit(
        runtime,
        "answer",
        "answer_from_evidence",
        iteration=iteration,
        answer=final,
        reasoning=reasoning,
        sc_answer=sc_answer,
        choice=choice.as_dict(),
    )
    return {
        "answer": final,
        "reasoning": reasoning,
        "sc_answer": sc_answer,
        "sc_choice": cast(ChoiceRecord, choice.as_dict()),
        "read": read,
        "trace": [
            {
                "iteration": iteration,
                "answer": final,
                "reasoning": reasoning,
                "sc_answer": sc_answer,
                "choice": choice.as_dict(),
                "reliability": [round(x, 4) for x in scores],
                "no_candidate_fallbacks": 0,
            }
        ],
    }


def consistency_mass(final: str, choice: Mapping[str, Any]) -> float:
    """s_sc (scored): the choice's probability on answers that agree with a."""
    return float(
        sum(p for o, p in zip(choice.get("options", []), choice.get("probs", []), strict=True) if same_answer(o, final))
    )


@traced
def check(state: RetroState, runtime: Runtime[RetroContext]) -> RetroUpdate:
    """Answer evaluation (Eq. 1): s_sc from M_sc; stop when s_sc > t or after ``max_iterations``.

    An empty a or a_sc cannot be consistent: s_sc = 0 without an LLM call (``empty_answer``).
    """
    ctx = context(runtime)
    question = question_of(state)
    final, sc_answer = state.get("answer") or "", state.get("sc_answer") or ""
    iteration = state.get("iteration", 1)
    if judge_of(ctx) == "score":
        mass = consistency_mass(final, state.get("sc_choice") or {}) if normalize_answer(final) else 0.0
        agreement = round(answer_agreement(final, sc_answer), 4)
        verdict: Consistency = {"raw": None, "calibrated": None, "agreement": agreement,
                                "score": round(mass, 4), "uninformative": False, "scored": True}
    elif normalize_answer(final) and normalize_answer(sc_answer):
        raw, neutral = llm_of(ctx).yes_probability([
            prompts.consistency_prompt(question, final, sc_answer),
            prompts.consistency_prompt(question, prompts.CONTENT_FREE, prompts.CONTENT_FREE),
        ])
        verdict = judge(raw, neutral, answer_agreement(final, sc_answer), ctx.yes_score)
    else:
        verdict = {"raw": None, "calibrated": None, "agreement": 0.0, "score": 0.0, "uninformative": False}
    score = verdict["score"]
    reason: StopReason = (
        "consistent" if score > ctx.threshold else "max_iterations" if iteration >= ctx.max_iterations else ""
    )
    emit(runtime, "score", "check", iteration=iteration, sc=verdict, stop=reason)
    output = last_answer(final, score, sc_answer, state.get("rounds") or []) if reason else final
    if reason:
        emit(runtime, "answer", "final", answer=output, iteration=iteration, reason=reason)
    record: Round = {
        "iteration": iteration,
        "query": state.get("search_query", question),
        "evidence": [d.metadata.get("title", d.id or "") for d in state.get("source_evidence") or []],
        "inferential_evidence": list(state.get("inferential_evidence") or []),
        "answer": final, "reasoning": state.get("reasoning", ""), "sc_answer": sc_answer,
        "sc": verdict, "stop": reason,
    }
    return {
        "answer": output,
        "sc_score": score,
        "stop_reason": reason,
        "rounds": [record],
        "trace": [
            {
                "iteration": iteration,
                "sc": verdict,
                "stop": reason,
                "empty_answer": int(not normalize_answer(final) if verdict.get("scored") else verdict["raw"] is None),
                "empty_final_fallback": int(output != final and not normalize_answer(final)),
                "more_consistent_earlier": int(output != final and bool(normalize_answer(final))),
            }
        ],
    }


def last_answer(final: str, score: float, sc_answer: str, rounds: Sequence[Round]) -> str:
    """The run's output when the loop stops: a consistent a as it is; else the most self-consistent one.

    When the budget ran out, the a of the most self-consistent iteration (the latest on ties) stands. The paper
    leaves this open; later iterations read re-queried, less direct evidence, and its Figure 4 shows
    over-reasoning as they grow, so the answer the model was surest of stands rather than simply the last.
    With no answer at all, this iteration's a_sc: a run that wrote any answer returns one.
    """
    tried = [(r["sc"]["score"], r["answer"]) for r in rounds] + [(score, final)]
    answered = [(sc, a) for sc, a in tried if normalize_answer(a)]
    if not answered:
        return sc_answer if normalize_answer(sc_answer) else final
    return max(reversed(answered), key=lambda t: t[0])[1]


@traced
def requery(state: RetroState, runtime: Runtime[RetroContext]) -> RetroUpdate:
    """Re-query generator G_R (Eq. 5): q_s^(L) from (E_s^(L), E_i^(L), r, q).

    A query that is empty, repeats the last query, or adds no word to the question targets no
    missing information; it falls back to the entities that the reasoning and the inferential
    evidence name beyond the question (the bridge entity, e.g. a novel's author), else to the
    pseudo-answer a with the key entities. Fallbacks are counted as ``requery_fallbacks``.
    """
    ctx = context(runtime)
    question = question_of(state)
    completion = llm_of(ctx).generate(
        [prompts.requery_prompt(question, state.get("source_evidence") or [], state.get("inferential_evidence") or [],
                                state.get("reasoning", ""))],
        max_new_tokens=ctx.query_tokens, stop=prompts.LINE_STOP,
    )[0][0]
    query = clean_answer(completion)
    facts = [state.get("reasoning") or "", *(state.get("inferential_evidence") or [])]
    fallback = not (content_words(query) - content_words(question)) or normalize_answer(query) == normalize_answer(
        state.get("search_query") or "")
    if fallback:
        bridge = " ".join(new_entities(facts, question))
        query = bridge or " ".join([state.get("answer") or "", *(state.get("key_entities") or [])]).strip() or question
    emit(runtime, "query", "requery", iteration=state.get("iteration", 1), query=query, fallback=fallback)
    return {"search_query": query, "trace": [{"iteration": state.get("iteration", 1), "query": query,
                                              "requery_fallbacks": int(fallback)}]}
