"""Look before deciding: the shape of the evidence picks the mechanism (docs/methods.md, "Deciding under conflict").

No single aggregation is robust. Reading each passage alone and voting wins when most sources are
right and loses when they agree on something wrong; there the model's own knowledge wins; and a
bridge question needs its passages read together. So a robust method first runs standard RAG's
reading (the shared :func:`~causalrag.nodes.common.answer` node: the joint reading, and the answer a
question keeps when nothing conflicts), then :func:`assess` looks at three readings of the question:

1. **each passage alone** (:func:`~causalrag.nodes.evidence.read_each`), grouped by agreeing answers:
   do the sources conflict, and does any passage answer alone?
2. **the model's own knowledge**: its closed-book answer, and its calibrated preference among every
   candidate answer (the groups', standard RAG's and its own): per-token log-probability of the
   answer after the question minus after "N/A" (Zhao et al., 2021), with no passage in the prompt;
3. **the passages together**: standard RAG's answer, already in the state.

:func:`route_by_shape` then sends the question to one of three mechanisms, each its own node:

* ``keep`` — nothing conflicts (every source that answers alone agrees with the joint reading), or
  no passage answers alone and the model holds no confident belief (a bridge): standard RAG's
  answer stands (do no harm);
* ``vote`` — the sources disagree, or the joint reading disagrees with every source that answers
  alone, and the model's knowledge does not contradict the majority: the method's own
  isolate-and-aggregate mechanism (Astute's consolidation, CF-RAG's hypotheses and Ψ, RetroRAG's loop);
* ``knowledge`` — the model believes another candidate over what the passages (their majority, their
  only answer, or their joint reading) say, by at least ``knowledge_margin``: its own knowledge
  (:func:`trust_knowledge`; Astute reads its internal passages).

``mechanism="paper"`` skips the assessment and runs the paper's own path; ``vote``/``knowledge``/
``keep`` force one mechanism (ablations).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document
from langgraph.runtime import Runtime

from causalrag.nodes.common import context, emit, llm_of, question_of, traced
from causalrag.nodes.evidence import NEUTRAL_QUESTION, Group, Reading, group_readings, passage_text, read_cached
from causalrag.prompts.common import ANSWER_STOP, answer_prompt
from causalrag.state.base import Assessment, Route, RoutedContext, TriageState
from causalrag.text import clean_answer, mentions, normalize_answer, same_answer
from causalrag.tools.backends.base import Choice


def closed_book_answer(llm, question: str, max_new_tokens: int) -> str:
    """What the model answers with no passage (``no_rag``'s reading)."""
    out = llm.generate([answer_prompt(question, [])], max_new_tokens=max_new_tokens, stop=ANSWER_STOP)[0]
    return clean_answer(out[0] if out else "")


def distinct(answers: Sequence[str]) -> list[str]:
    """Non-empty answers, the first spelling of each set of agreeing ones kept."""
    kept: list[str] = []
    for a in answers:
        if normalize_answer(a) and not any(same_answer(a, k) for k in kept):
            kept.append(a)
    return kept


def beliefs(llm, question: str, candidates: Sequence[str]) -> Choice:
    """The model's closed-book preference among ``candidates``, calibrated against "N/A" (one batched call)."""
    return llm.choose([answer_prompt(question, [])], [list(candidates)], neutral=[answer_prompt(NEUTRAL_QUESTION, [])])[0]


def gain_of(answer: str, knowledge: Choice) -> float:
    """The calibrated closed-book score of the candidate that agrees with ``answer`` (−inf when none does)."""
    return max((s for o, s in zip(knowledge.options, knowledge.scores) if same_answer(o, answer)), default=float("-inf"))


def contradiction(knowledge: Choice, said: str, margin: float) -> str | None:
    """The candidate the model believes over ``said`` by at least ``margin``, if any."""
    if knowledge.best < 0:
        return None
    believed = knowledge.options[knowledge.best]
    if same_answer(believed, said) or knowledge.scores[knowledge.best] - gain_of(said, knowledge) < margin:
        return None
    return believed


def shape_of(groups: Sequence[Group], standard: str, knowledge: Choice, margin: float) -> tuple[str, Route, str | None]:
    """(shape, route, the believed answer that contradicts the passages) from the assessment's readings.

    Shapes: ``conflict`` (sources disagree, or the joint reading disagrees with every source that
    answers alone), ``agree``, ``unanswered`` (no passage answers alone: a bridge, or noise);
    ``contradicted`` when the model's knowledge overrules what the passages say.
    """
    if len(groups) >= 2:
        said, shape = groups[0].answer, "conflict"
    elif groups:
        said = groups[0].answer
        shape = "agree" if not normalize_answer(standard) or same_answer(said, standard) else "conflict"
    else:
        said, shape = standard, "unanswered"
    believed = contradiction(knowledge, said, margin)
    if believed is not None:
        return "contradicted", "knowledge", believed
    return shape, "vote" if shape == "conflict" else "keep", None


@traced
def assess(state: TriageState, runtime: Runtime[RoutedContext]) -> dict:
    """Read each passage alone, ask the model's own belief, and name the shape of the evidence."""
    ctx = context(runtime)
    if ctx.mechanism == "paper":
        return {"assessment": {"shape": "", "route": "paper"}, "trace": [{"route": "paper"}]}
    llm, question = llm_of(ctx), question_of(state)
    docs = list(state.get("documents") or [])
    standard = str(state.get("answer") or "")
    readings, read = read_cached(llm, question, docs, state.get("read") or {})
    groups = group_readings(readings, [d.id or str(i) for i, d in enumerate(docs)])
    closed = closed_book_answer(llm, question, ctx.max_new_tokens)
    candidates = distinct([g.answer for g in groups] + [standard, closed])
    knowledge = beliefs(llm, question, candidates) if candidates else Choice((), (), ())
    shape, route, believed = shape_of(groups, standard, knowledge, ctx.knowledge_margin)
    if ctx.mechanism != "auto":
        route = ctx.mechanism
    assessment: Assessment = {
        "shape": shape, "route": route, "standard": standard, "closed_book": closed, "believed": believed,
        "groups": [{"answer": g.answer, "sources": g.sources} for g in groups],
        "knowledge": knowledge.as_dict(),
    }
    emit(runtime, "assessment", "assess", **assessment)
    return {"assessment": assessment, "read": read, "trace": [{k: v for k, v in assessment.items() if k != "knowledge"}]}


def route_by_shape(state: TriageState) -> Route:
    """The mechanism the assessment chose (``paper`` when it was skipped)."""
    return (state.get("assessment") or {}).get("route", "paper")


@traced
def trust_knowledge(state: TriageState, runtime: Runtime[RoutedContext]) -> dict:
    """The model's own knowledge decides: its most believed candidate (given its internal passages, when the
    method wrote any, else closed book), with the passages that state it as the evidence."""
    ctx = context(runtime)
    assessment = state.get("assessment") or {}
    knowledge = assessment.get("knowledge") or {}
    options = list(knowledge.get("options") or [])
    internal = list(state.get("internal") or [])
    if internal and options:
        choice = llm_of(ctx).choose([answer_prompt(question_of(state), internal)], [options],
                                    neutral=[answer_prompt(NEUTRAL_QUESTION, internal)])[0]
        answer = choice.answer or ""
    else:
        answer = assessment.get("believed") or (options[max(range(len(options)), key=knowledge["scores"].__getitem__)] if options else "")
    answer = answer or str(state.get("answer") or "")
    stating = [d for d in state.get("documents") or [] if mentions(answer, passage_text(d))]
    emit(runtime, "answer", "knowledge", answer=answer)
    return {"answer": answer, "documents": stating or internal, "trace": [{"knowledge_answer": answer, "from_internal": bool(internal)}]}


def readings_of(state: TriageState, docs: Sequence[Document]) -> list[Reading]:
    """The assessment's readings of ``docs`` (each was read once, alone); an unread passage gives none."""
    read = state.get("read") or {}
    return [Reading(**read[d.id]) if d.id in read else Reading(None) for d in docs]
