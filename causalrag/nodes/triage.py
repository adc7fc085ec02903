"""Look before deciding: the shape of the evidence picks the mechanism (docs/methods.md, "Deciding under conflict").

No single aggregation is robust. Reading each passage alone and voting wins when most sources are
right and loses when they agree on something wrong; there only the model's own knowledge can help;
and a bridge question needs its passages read together. So a robust method first runs standard
RAG's reading (the shared :func:`~causalrag.nodes.common.answer` node: the joint reading, and the
answer a question keeps when nothing conflicts), then :func:`assess` looks at three readings:

1. **each passage alone** (:func:`~causalrag.nodes.evidence.read_each`), grouped by agreeing answers:
   do the sources conflict, and does any passage answer alone?
2. **the model's own knowledge**: its closed-book answer and how sure it is of it (mean per-token
   log-probability). A scored *comparison* of candidates closed book measures how familiar an answer
   string is, not whether the model knows the fact (it preferred "Batman" to "Heath Ledger" for the
   Joker, calibrated or not); the model's confidence in its own answer tracks knowledge: on the
   robustness suite's dev half its answers at ≥ −0.5 were right 12 times in 13. Where every passage
   agrees on an answer the model's differs from, or two sides of several sources dispute, a
   counterfactual contrast asks the passages themselves (:func:`counterfactual_fit`): do they read
   better with the other answer in place of theirs?;
3. **the passages together**: standard RAG's answer, already in the state.

:func:`route_by_shape` then sends the question to one of four mechanisms, each its own node:

* ``keep`` — nothing conflicts (every source that answers alone agrees with the joint reading), no
  passage answers alone but one states the joint reading's answer (a bridge, read jointly), the
  question names its own options (yes/no, "A or B": a passage read alone can only pick one, so it is
  not read alone unless ``option_votes``), or the sources scatter over several answers with no
  plurality to trust and no passage stands out as the one asked (``focus`` below), or the model's
  closed-book answer is the joint reading's and no source read alone gives it (two readings agree on
  what every source misses) or the sources' plurality gives it too (three readings agree): standard
  RAG's answer stands (do no harm);
* ``vote`` — the sources disagree and one answer has a plurality of at least two, or the joint
  reading disagrees with every source that answers alone, unless the model's closed-book answer is the
  joint reading's (``keep`` above): the method's own isolate-and-aggregate
  mechanism (Astute's consolidation, CF-RAG's hypotheses and Ψ, RetroRAG's loop);
* ``knowledge`` — the model's own answer contradicts what the passages say (their majority, their
  only answer, or their joint reading) and it is sure of it, or the passages that agree on another
  answer read clearly better with the model's (``knowledge_fit``; asked only of an answer the model holds
  at ``contrast_confidence`` or above, not of a guess), or the majority's passages read
  clearly better with the runner-up's answer (two sides of at least two sources each), in both unless
  that answer's words alone are far likelier than theirs (``knowledge_familiarity``), or it sides
  with a minority of the sources (an independent witness for one side of a dispute: an answer with two
  sources, or a joint reading no passage states), or no answer has
  two sources and no passage states the joint reading's answer (the passages are off topic, and what a
  lone one answers alone is a misread: that
  answer is the model's knowledge distracted by unrelated text, and its closed-book answer is the
  same knowledge undistracted — Astute RAG's worst case, §3): :func:`trust_knowledge` (Astute reads
  its internal passages);
* ``focus`` — the sources scatter over lone answers with no plurality (a correlation trap's look-alikes,
  each answering a question close to the one asked), and one passage makes the question clearly likelier
  than every other answer's, needs no second passage to explain it, and does not state the joint
  reading's answer (:func:`focus`): :func:`answer_focus`, that passage's answer.

``mechanism="paper"`` skips the assessment and runs the paper's own path for every question;
``vote``/``knowledge``/``keep`` force one mechanism (ablations).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, TypeVar

from langchain_core.documents import Document
from langgraph.runtime import Runtime

from causalrag.nodes.common import context, emit, llm_of, question_of, traced
from causalrag.nodes.evidence import (
    Group,
    alone,
    group_readings,
    most_confirmed,
    passage_text,
    question_likelihood,
    read_cached,
    together,
)
from causalrag.prompts.common import ANSWER_STOP, answer_prompt
from causalrag.state.base import Assessment, FocusRecord, Route, RoutedContext, TriageState
from causalrag.text import (
    answer_kind,
    clean_answer,
    mention_pattern,
    mentions,
    normalize_answer,
    question_options,
    same_answer,
    states,
)
from causalrag.tools.backends.base import LLM

R = TypeVar("R", bound=RoutedContext)
"""The context of a routed method (each has its own subclass)."""


def closed_book_answer(llm: LLM, question: str, max_new_tokens: int) -> str:
    """What the model answers with no passage: ``no_rag``'s very answer, computed ``exact`` as its ``answer``
    node computes it. Read after other prompts, llama.cpp's arithmetic gave another answer on about one
    question in ten of the robustness suite's test half ("Sahara Desert" for ``no_rag``'s "Sahara"), and
    so another route."""
    text = "".join(llm.stream(answer_prompt(question, []), max_new_tokens=max_new_tokens, stop=ANSWER_STOP, exact=True))
    return clean_answer(text)


def confidence(llm: LLM, question: str, answer: str) -> float:
    """How sure the model is of its own closed-book answer: the answer's mean per-token log-probability."""
    return (
        llm.choose([answer_prompt(question, [])], [[answer]])[0].scores[0]
        if normalize_answer(answer)
        else float("-inf")
    )


FIT_PREFIX = "Passage: "
"""What the passages are scored after in :func:`counterfactual_fit` (the same for both readings)."""


class Contrast(NamedTuple):
    """A counterfactual contrast (:func:`counterfactual_fit`)."""

    fit: float
    """How much better the passages read with the rival in place of their answer (nats; −inf: not asked)."""
    familiarity: float
    """How much likelier the rival's words are than the answer's with no passage around them (nats)."""


def counterfactual_fit(llm: LLM, docs: Sequence[Document], said: str, other: str) -> Contrast:
    """How much better the passages that state ``said`` read with ``other`` in its place: the mean over
    them of log P(passage with ``other``) − log P(passage as written), summed over the passage's tokens;
    and the part of it the two strings alone could explain, log P(``other``) − log P(``said``) after the
    same prefix with no passage (scored in the same call).

    A counterfactual contrast, in the spirit of CF-RAG's causal discrimination score (§4.2.2, Eq. 11:
    a passage's support for the query against counterfactual ones); here the counterfactual is an
    answer put into the passage. A passage whose answer was swapped for a wrong one still describes the right one around
    it, so when the model knows the right one it reads better put back; a true passage reads worse
    with a wrong answer in it. On the robustness suite's dev half (docs/results.md, 2026-11-26): where
    every passage agreed against the model's answer, a true passage never read better with the model's
    wrong one by more than 1.7 nats; where three sources disputed two, the true majority never read
    better with the runner-up's answer by more than 1.2. The contrast also favours a shorter or more
    familiar answer string, which is why it is asked only where the passages are unanimous or two
    supported sides dispute (:func:`rival_answer`), why the bar is high, why a rival much more familiar
    than the passages' answer is not taken (``knowledge_familiarity``), and why it is only asked of
    like for like: −inf when the two are not the same kind of answer (a name for a name, a number for
    a number: a description such as "the architect" in place of a name reads well in any passage), or
    when no passage states ``said`` word for word.
    """
    found = mention_pattern(said)  # a first name before a surname read alone is swapped with it
    texts = [t for t in map(passage_text, docs) if found.search(t)]
    if not (texts and normalize_answer(said) and normalize_answer(other)) or answer_kind(said) != answer_kind(other):
        return Contrast(float("-inf"), 0.0)
    swapped = [found.sub(lambda _: other.strip(), t) for t in texts]
    rows = [*texts, *swapped, said.strip(), other.strip()]
    scores = llm.logprob([FIT_PREFIX] * len(rows), rows, reduce="sum")
    n = len(texts)
    fit = sum(b - a for a, b in zip(scores[:n], scores[n : 2 * n], strict=True)) / n
    return Contrast(fit, scores[-1] - scores[-2])


def shape_of(
    groups: Sequence[Group],
    standard: str,
    closed: str,
    sure: float,
    ctx: RoutedContext,
    *,
    stated: bool = True,
    compared: bool = False,
) -> tuple[str, Route, str | None]:
    """(shape, route, the answer the model's knowledge holds against the passages) from the assessment.

    Shapes: ``conflict`` — the sources disagree and one answer has a plurality of at least two of them,
    or the joint reading disagrees with every source that answers alone; ``scattered`` — several
    answers, none with such a plurality (a correlation trap's look-alikes, noise): nothing to vote
    with, the joint reading stands; ``corroborated`` — the sources disagree, but the model's closed-book
    answer is the joint reading's, and no source gives it or their plurality does (:func:`corroborated`):
    it stands; ``agree``;
    ``unanswered`` (no passage answers alone, but one states the joint reading's answer: a bridge);
    ``unsupported`` (no passage answers alone, or only lone sources do, no answer with a second source
    and none the model's own, which would be the minority rule's witness below; and none states the joint
    reading's answer, ``stated`` false: off-topic passages, whose lone answers are misreads), where the
    model's own answer is taken however sure it is; ``compared``
    (the question names its own options and the passages were not read alone, ``compared`` true: the
    joint reading decides); and ``contradicted``
    when the model's own answer overrules what the passages say (their first group, else the joint
    reading): it is sure of it (mean per-token log-probability ≥ ``knowledge_confidence``), or it sides
    with a minority of the sources in a dispute and is at least ``minority_confidence`` sure. A dispute
    needs an answer with two sources, or a joint reading that no passage states: where every source
    gives its own answer and one passage states the joint reading's, the model's answer matching another
    lone passage is no witness (a correlation trap's look-alikes), and the ``scattered`` shape's joint
    reading stands. On the robustness suite's dev half the override there lost 3 answers for astute, all
    correlation traps, and won 2 (docs/results.md, 2026-11-27). (:func:`assess` then
    asks a counterfactual contrast where the shape is ``agree`` or ``conflict``: :func:`rival_answer`.)
    """
    if len(groups) >= 2:
        sizes = [len(g.members) for g in groups]
        said, shape = groups[0].answer, "conflict" if sizes[0] >= 2 and sizes[0] > sizes[1] else "scattered"
    elif groups:
        said = groups[0].answer
        shape = "agree" if not normalize_answer(standard) or same_answer(said, standard) else "conflict"
    else:
        said, shape = standard, "compared" if compared else "unanswered" if stated else "unsupported"
    singletons = all(len(g.members) < 2 for g in groups)  # no answer has a second source
    lone = singletons and not any(same_answer(g.answer, closed) for g in groups)
    if lone and not stated and shape in ("conflict", "scattered"):
        said, shape = standard, "unsupported"  # lone answers read out of off-topic passages support nothing
    if shape == "conflict" and corroborated(groups, standard, closed):
        return "corroborated", "keep", None
    if normalize_answer(closed) and not same_answer(closed, said):
        if shape == "unsupported":
            return shape, "knowledge", closed
        if sure >= ctx.knowledge_confidence:
            return "contradicted", "knowledge", closed
        minority = next((g.answer for g in groups[1:] if same_answer(g.answer, closed)), None)
        # a witness needs a dispute: one side with two sources, or a joint reading no passage states; among
        # lone look-alikes (a correlation trap's) the one the model's answer matches is no witness
        disputed = not singletons or not stated
        if minority is not None and disputed and sure >= ctx.minority_confidence:
            return "contradicted", "knowledge", minority
    return shape, "vote" if shape == "conflict" else "keep", None


def corroborated(groups: Sequence[Group], standard: str, closed: str) -> bool:
    """Whether the joint reading and the model's closed-book answer agree on an answer that no passage
    read alone gives, or that the largest group of sources gives: two readings, one with every passage
    and one with none, that the sources either each miss or back with their plurality. A vote can only
    choose among the sources' answers, so where they miss it, it would throw away the one answer both
    readings found (on the robustness suite's dev half, every such vote that changed the answer lost it:
    passages that all state a wrong answer, or off-topic ones misread alone); where their plurality
    backs it, a vote can only overturn three readings that agree (on the dev half it kept the answer 37
    times and changed it once, to a lone source's planted answer)."""
    return (
        bool(normalize_answer(closed))
        and same_answer(closed, standard)
        and (not any(same_answer(g.answer, standard) for g in groups) or same_answer(groups[0].answer, standard))
    )


def rival_answer(shape: str, route: Route, groups: Sequence[Group], closed: str, *, held: bool = True) -> str | None:
    """The answer a counterfactual contrast weighs against the first group's (:func:`counterfactual_fit`):
    the runner-up's when two sides of at least two sources each dispute and the vote would decide (a lone
    dissenting source is more often a misread than a witness); else the model's own when no source that
    answers gives it (shape ``agree``, or ``conflict`` where the vote could only pick among the sources'
    answers) and the model holds it (``held``: at least ``contrast_confidence`` sure; a guess is no
    knowledge to test). None otherwise."""
    if shape == "conflict" and route == "vote" and len(groups) >= 2 and len(groups[1].members) >= 2:
        return groups[1].answer
    given = any(same_answer(closed, g.answer) for g in groups)
    if shape in ("agree", "conflict") and held and normalize_answer(closed) and not given:
        return closed
    return None


def focus(
    llm: LLM, question: str, docs: Sequence[Document], groups: Sequence[Group], standard: str, ctx: RoutedContext
) -> FocusRecord | None:
    """Among lone look-alikes (shape ``scattered``): the passage the question is asked of, and the answer it
    gives, or None where the joint reading should stand.

    Each source that answers alone is scored by the question's likelihood as the one asked of it
    (:func:`~causalrag.nodes.evidence.question_likelihood`, UPR's query likelihood). A correlation trap's
    look-alikes (the first woman to swim the Channel, for the first person) answer a question close to the
    one asked, but the passage that answers this very question makes it the likeliest. That passage decides
    when it leads every other answer's passages by ``focus_margin`` nats, unless

    * it quotes the question word for word: a planted instruction ("answer X to 'Q'") makes the question
      likely by copying it, not by being about it; such passages are not scored;
    * the question is likelier still, by ``focus_joint`` nats, asked of it and the runner-up together: it
      needs both (a bridge, a comparison), and the joint reading decides;
    * it states the joint reading's answer: the two readings agree.

    Its answer is a scored choice, given that passage alone, among every lone answer and the joint
    reading's: a passage read alone sometimes gives a part of the question back ("Dunmarrow Thistle F."
    for the ground of Dunmarrow Thistle FC), and the choice reads the passage for the answer.

    On the robustness suite's dev half, replayed over the 88 scattered questions of astute's run at fc7cac1,
    the rule changed 16 answers, all to right ones (9 correlation traps, 6 planted instructions, 1 conflict)
    and lost none; without the joint check it lost 5 bridge and comparison questions, and taking the lone
    reading instead of the choice lost 3 (docs/results.md, 2026-11-27, late).
    """
    answering = [(i, g) for g in groups for i in g.members if not mentions(question, passage_text(docs[i]))]
    if len({g.answer for _, g in answering}) < 2:
        return None
    fitted = alone(llm, question, [docs[i] for i, _ in answering])
    asked = question_likelihood(llm, question, [[d] for d in fitted])
    order = sorted(range(len(answering)), key=lambda j: -asked[j])
    top = order[0]
    runner = next(j for j in order if answering[j][1] is not answering[top][1])
    margin = asked[top] - asked[runner]
    if margin < ctx.focus_margin or states(passage_text(fitted[top]), standard, question):
        return None
    pairs = [together(llm, question, [fitted[a], fitted[b]]) for a, b in ((top, runner), (runner, top))]
    joint = max(question_likelihood(llm, question, pairs)) - asked[top]
    if joint >= ctx.focus_joint:
        return None
    options = distinct([*(g.answer for g in groups), standard])
    chosen = llm.choose([answer_prompt(question, [fitted[top]])], [options])[0].answer
    i = answering[top][0]
    return {
        "answer": chosen or answering[top][1].answer,
        "passage": docs[i].id or str(i),
        "margin": round(margin, 4),
        "joint": round(joint, 4),
    }


@traced
def recall(state: TriageState, runtime: Runtime[R]) -> dict[str, Any]:
    """The model's own answer, closed book, before any passage is read, and how sure it is of it. It is
    computed exact (no_rag's very answer), and an exact prompt drops every other cached sequence, so it
    comes before standard RAG's reading: that reading's cells then stay cached, and the passages read
    alone in :func:`assess` reuse their shared header. Its confidence is scored right after, while the
    closed-book prompt is still cached, so it is computed once and depends on the question alone
    (docs/performance.md, 2026-11-27)."""
    ctx = context(runtime)
    llm, question = llm_of(ctx), question_of(state)
    closed = closed_book_answer(llm, question, ctx.max_new_tokens)
    sure = confidence(llm, question, closed)  # scored while the closed-book prompt is still cached
    trace = {"closed_book": closed, "confidence": round(sure, 4)}
    return {"closed_book": closed, "closed_book_confidence": sure, "trace": [trace]}


@traced
def assess(state: TriageState, runtime: Runtime[R]) -> dict[str, Any]:
    """Read each passage alone, weigh the model's own answer (:func:`recall`) by how sure it is, and name the
    shape of the evidence."""
    ctx = context(runtime)
    if ctx.mechanism == "paper":
        return {"assessment": {"shape": "", "route": "paper"}, "trace": [{"route": "paper"}]}
    llm, question = llm_of(ctx), question_of(state)
    docs = list(state.get("documents") or [])
    standard = str(state.get("answer") or "")
    compared = bool(question_options(question)) and not ctx.option_votes
    closed = state.get("closed_book")
    if closed is None:  # a graph of the user's own that wires assess without recall
        closed = closed_book_answer(llm, question, ctx.max_new_tokens)
    read = state.get("read") or {}
    groups = []
    if not compared:
        readings, read = read_cached(llm, question, docs, read)
        groups = group_readings(readings, [d.id or str(i) for i, d in enumerate(docs)])
    sure = state.get("closed_book_confidence")
    if sure is None or state.get("closed_book") is None:
        sure = confidence(llm, question, closed)
    stated = any(states(passage_text(d), standard, question) for d in docs)
    shape, route, believed = shape_of(groups, standard, closed, sure, ctx, stated=stated, compared=compared)
    held = sure >= ctx.contrast_confidence  # a guess below it is no knowledge to weigh against the passages
    rival = rival_answer(shape, route, groups, closed, held=held) if ctx.mechanism == "auto" else None
    contrast = Contrast(float("-inf"), 0.0)
    if rival is not None:  # would the first group's passages read better with the rival in place of their answer?
        contrast = counterfactual_fit(llm, [docs[i] for i in groups[0].members], groups[0].answer, rival)
        # a rival far more familiar than the passages' answer reads better anywhere: no sign of knowledge
        if contrast.fit >= ctx.knowledge_fit and contrast.familiarity <= ctx.knowledge_familiarity:
            shape, route, believed = "contradicted", "knowledge", rival
    focused: FocusRecord | None = None
    if shape == "scattered" and ctx.mechanism == "auto":  # nothing to vote with: is one passage the one asked?
        focused = focus(llm, question, docs, groups, standard, ctx)
        if focused is not None and not same_answer(focused["answer"], standard):
            route = "focus"
    assessment: Assessment = {
        "shape": shape, "route": route if ctx.mechanism == "auto" else ctx.mechanism, "standard": standard,
        "closed_book": closed, "confidence": round(sure, 4), "believed": believed,
        **({"fit": contrast.fit, "familiarity": contrast.familiarity} if contrast.fit > float("-inf") else {}),
        **({"focus": focused} if focused is not None else {}),
        "groups": [{"answer": g.answer, "sources": g.sources} for g in groups],
    }
    emit(runtime, "assessment", "assess", **assessment)
    return {"assessment": assessment, "read": read, "trace": [dict(assessment)]}


def route_by_shape(state: TriageState) -> Route:
    """The mechanism the assessment chose (``paper`` when it was skipped)."""
    return (state.get("assessment") or {}).get("route", "paper")


def contrasted(state: TriageState, ctx: RoutedContext) -> bool:
    """Whether a counterfactual contrast chose the knowledge route: its answer was weighed on the
    retrieved passages themselves, so a method's memory passages have nothing left to decide."""
    assessment = state.get("assessment") or {}
    return assessment.get("route") == "knowledge" and assessment.get("fit", float("-inf")) >= ctx.knowledge_fit


@traced
def trust_knowledge(state: TriageState, runtime: Runtime[R]) -> dict[str, Any]:
    """The model's own knowledge decides: the answer it holds against the passages. A method that wrote
    passages from memory (Astute's internal passages) reads them to choose between that answer and what
    the retrieved passages say (their first group's answer, else the joint reading; not where the passages
    are off topic: shape ``unsupported``); the passages that state the answer are its evidence."""
    ctx = context(runtime)
    assessment = state.get("assessment") or {}
    believed = assessment.get("believed") or assessment.get("closed_book") or str(state.get("answer") or "")
    internal = list(state.get("internal") or [])
    said = next((g["answer"] for g in assessment.get("groups") or []), assessment.get("standard") or "")
    # off-topic passages (shape ``unsupported``) state no answer: the joint reading is the model's own
    # knowledge distracted by them, not a retrieved side for the memory passages to weigh
    options = distinct([believed] if assessment.get("shape") == "unsupported" else [believed, said])
    if internal and len(options) > 1:
        believed = llm_of(ctx).choose([answer_prompt(question_of(state), internal)], [options])[0].answer or believed
    stating = [d for d in state.get("documents") or [] if mentions(believed, passage_text(d))]
    emit(runtime, "answer", "knowledge", answer=believed)
    return {
        "answer": believed,
        "documents": stating or internal,
        "trace": [{"knowledge_answer": believed, "read_internal": bool(internal)}],
    }


@traced
def answer_focus(state: TriageState, runtime: Runtime[R]) -> dict[str, Any]:
    """The focus route: the answer of the passage the question is asked of (:func:`focus`); that passage is
    its evidence."""
    focused = (state.get("assessment") or {}).get("focus")
    answer = (focused["answer"] if focused else "") or str(state.get("answer") or "")
    docs = list(state.get("documents") or [])
    evidence = [d for i, d in enumerate(docs) if focused and (d.id or str(i)) == focused["passage"]]
    emit(runtime, "answer", "focus", answer=answer)
    return {"answer": answer, "documents": evidence or docs, "trace": [{"focus_answer": answer}]}


@traced
def answer_confirmed(state: TriageState, runtime: Runtime[R]) -> dict[str, Any]:
    """The vote route of a method that reorders or chooses passages (CIS's top-k, MoI's utility order): the
    answer of those passages most confirmed across sources (:func:`~causalrag.nodes.evidence.most_confirmed`),
    each passage read alone, the scored choice given them together in the method's order deciding among
    equally confirmed answers.

    Read jointly in the method's order alone, the 270M model follows the first passage, and a planted passage
    that restates the question ranks first by both CIS (log p(K|Q) − log p(K) is high for it) and MoI's
    utility: on the robustness suite's fictional cards the joint reading gave CIS 32 and MoI 27 right answers
    of 60 where standard RAG gave 40 (docs/results.md, 2026-11-27). ``mechanism="paper"`` answers as the
    papers do (``answer_reranked``)."""
    ctx = context(runtime)
    llm, question = llm_of(ctx), question_of(state)
    docs = together(llm, question, list(state.get("documents") or [])[: ctx.k])
    readings, read = read_cached(llm, question, docs, state.get("read") or {})
    prompt = answer_prompt(question, docs)
    confirmed = most_confirmed(llm, question, prompt, readings, max_new_tokens=ctx.max_new_tokens)
    if confirmed is None:  # no passage answers and the model wrote nothing: the joint reading's empty answer
        emit(runtime, "answer", "answer_confirmed", answer="")
        return {"answer": "", "documents": docs, "read": read, "trace": [{"answer": "", "no_candidate_fallbacks": 1}]}
    choice, scores = confirmed
    final = choice.options[max(range(len(scores)), key=scores.__getitem__)]
    emit(runtime, "answer", "answer_confirmed", answer=final, reliability=[round(x, 4) for x in scores])
    return {
        "answer": final,
        "documents": docs,
        "read": read,
        "trace": [{"answer": final, "choice": choice.as_dict(), "reliability": [round(x, 4) for x in scores]}],
    }


def distinct(answers: Sequence[str]) -> list[str]:
    """Non-empty answers, the first spelling of each set of agreeing ones kept."""
    kept: list[str] = []
    for a in answers:
        if normalize_answer(a) and not any(same_answer(a, k) for k in kept):
            kept.append(a)
    return kept
