"""``triage``'s probes and routes.

The graph is :mod:`causalrag.graphs.triage`; the decision, :mod:`causalrag.nodes.decide`.

No single aggregation is robust. Reading each passage alone and voting wins when most sources are right and
loses when they agree on something wrong; there only the model's own knowledge can help; a bridge question
needs its passages read together. So ``triage`` first looks at the evidence with probes, each a node that adds
to one :class:`~causalrag.state.triage.Evidence` record:

1. :func:`recall` — the model's closed-book answer and how sure it is of it (mean per-token log-probability);
2. standard RAG's ``answer`` — the joint reading (the answer a question keeps when nothing conflicts);
3. :func:`read_alone` — each passage read alone (:func:`~causalrag.nodes.evidence.read_each`), grouped by
   agreeing answers;
4. :func:`contrast` — where the decision would weigh a rival answer against the passages' own
   (:func:`~causalrag.nodes.decide.rival_of`): do the passages read better with the rival in place of theirs?
5. :func:`focus_probe` — where the sources scatter over lone answers: is one passage the one asked?

:func:`decide_route` then applies the pure decision, and each route is its own node: ``keep`` ends with the
joint reading; ``vote`` runs ``answer_confirmed`` or a paper method's aggregation (the graph's ``vote``
node); ``knowledge`` runs :func:`trust_knowledge` (after Astute's ``elicit`` with ``knowledge_with="astute"``);
``focus`` runs :func:`answer_focus`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import NamedTuple

from langchain_core.documents import Document
from langgraph.runtime import Runtime

from causalrag.config import settings
from causalrag.errors import CausalRAGError
from causalrag.nodes.common import context, emit, llm_of, question_of, traced
from causalrag.nodes.decide import FittedPolicy, Policy, RulePolicy, canonical, decide_with, forced, rival_of
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
from causalrag.prompts.common import ANSWER_STOP, answer_prompt, format_passages
from causalrag.state.base import TraceEntry
from causalrag.state.triage import ContrastRecord, Evidence, FocusRecord, TriageContext, TriageState, TriageUpdate
from causalrag.text import (
    answer_kind,
    clean_answer,
    mention_pattern,
    mentions,
    normalize_answer,
    question_options,
    same_answer,
    states,
    states_part,
)
from causalrag.tools.backends.base import LLM


def closed_book_answer(llm: LLM, question: str, max_new_tokens: int) -> str:
    """What the model answers with no passage: ``no_rag``'s very answer.

    It is computed ``exact``, as ``no_rag``'s ``answer`` node computes it, so it depends on the question
    alone and not on what the backend's cache holds (llama.cpp's arithmetic does; measured in
    research/notebook.md, "2026-11-26 (afternoon)").
    """
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
    """How much better the passages that state ``said`` read with ``other`` in its place.

    The fit is the mean over those passages of log P(passage with ``other``) − log P(passage as written),
    summed over the passage's tokens; the familiarity is the part of it the two strings alone could explain,
    log P(``other``) − log P(``said``) after the same prefix with no passage (scored in the same call).

    A counterfactual contrast, in the spirit of CF-RAG's causal discrimination score (§4.2.2, Eq. 11:
    a passage's support for the query against counterfactual ones); here the counterfactual is an
    answer put into the passage. A passage whose answer was swapped for a wrong one still describes the right
    one around it, so when the model knows the right one it reads better put back; a true passage reads worse
    with a wrong answer in it (the bar ``knowledge_fit`` and its provenance: docs/results.md, "Tuning
    record"). The contrast also favours a shorter or more familiar answer string, which is why it is asked
    only where the passages are unanimous or two supported sides dispute
    (:func:`~causalrag.nodes.decide.rival_of`), why the bar is high, why a rival much more familiar
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


def focus(
    llm: LLM, question: str, docs: Sequence[Document], groups: Sequence[Group], standard: str, policy: RulePolicy
) -> FocusRecord | None:
    """Among lone look-alikes (shape ``scattered``): the passage the question is asked of, and its answer.

    None where the joint reading should stand. Each source that answers alone is scored by the question's
    likelihood as the one asked of it (:func:`~causalrag.nodes.evidence.question_likelihood`, UPR's query
    likelihood). A correlation trap's look-alikes (the first woman to swim the Channel, for the first person)
    answer a question close to the one asked, but the passage that answers this very question makes it the
    likeliest. That passage decides when it leads every other answer's passages by ``focus_margin`` nats, unless

    * it quotes the question word for word: a planted instruction ("answer X to 'Q'") makes the question
      likely by copying it, not by being about it; such passages are not scored;
    * the question is likelier still, by ``focus_joint`` nats, asked of it and the runner-up together: it
      needs both (a bridge, a comparison), and the joint reading decides;
    * it states the joint reading's answer: the two readings agree.

    Its answer is a scored choice, given that passage alone, among every lone answer and the joint
    reading's: a passage read alone sometimes gives a part of the question back ("Dunmarrow Thistle F."
    for the ground of Dunmarrow Thistle FC), and the choice reads the passage for the answer.
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
    if margin < policy.focus_margin or states(passage_text(fitted[top]), standard, question):
        return None
    pairs = [together(llm, question, [fitted[a], fitted[b]]) for a, b in ((top, runner), (runner, top))]
    joint = max(question_likelihood(llm, question, pairs)) - asked[top]
    if joint >= policy.focus_joint:
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
def recall(state: TriageState, runtime: Runtime[TriageContext]) -> TriageUpdate:
    """The model's own answer, closed book, before any passage is read, and how sure it is of it.

    It is computed exact (no_rag's very answer), and an exact prompt drops every other cached sequence, so it
    comes before standard RAG's reading: that reading's cells then stay cached, and the passages read alone in
    :func:`read_alone` reuse their shared header. Its confidence is scored right after: llama.cpp reads it from
    the log-probs of the tokens it just streamed (no second pass), another backend scores it while the
    closed-book prompt is still cached. Either way it depends on the question alone (the cost and the answers
    measured: research/notebook.md, "2026-11-27 (later)", "2026-11-27 (evening)" and "2026-11-28 (evening)").
    """
    ctx = context(runtime)
    llm, question = llm_of(ctx), question_of(state)
    closed = closed_book_answer(llm, question, ctx.max_new_tokens)
    sure = confidence(llm, question, closed)  # scored while the closed-book prompt is still cached
    trace: TraceEntry = {"closed_book": closed, "confidence": round(sure, 4)}
    return {"closed_book": closed, "closed_book_confidence": sure, "trace": [trace]}


BUNDLED_MODEL_NAME = "gemma-3-270m-q4_k_m"
"""The bundled model's name (as its llama.cpp backend reports it), which its fitted policy records."""
BUNDLED_POLICY = Path(__file__).resolve().parents[1] / "data" / "policies" / "gemma-3-270m-base.json"
"""The policy fitted for the bundled model on the robustness suite's dev half (``policy="bundled"``)."""


def policy_of(ctx: TriageContext) -> Policy:
    """The context's decision policy: the rules with its thresholds, or a policy fitted by ``causalrag calibrate``.

    A fitted policy is read from its file: fitted thresholds of the same rules, or a logistic model of each
    route's gain.
    """
    name = ctx.policy or settings().policy or "rules"
    if name == "rules":
        return RulePolicy.of(ctx)
    return load_policy(str(BUNDLED_POLICY if name == "bundled" else Path(name).expanduser()))


@cache
def load_policy(path: str) -> Policy:
    """A fitted policy from its JSON file (read once per process)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("kind") == "rules":
            return RulePolicy(**{k: float(v) for k, v in data["thresholds"].items()})
        return FittedPolicy.from_json(data)
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CausalRAGError(f"Cannot read the triage policy {path} ({error}): pass policy=rules, bundled, or a "
                             "file written by `causalrag calibrate`.") from error


def every_probe(ctx: TriageContext) -> bool:
    """Whether every probe runs wherever it can be asked: ``probes="all"``, or a fitted policy (its features)."""
    return ctx.probes == "all" or isinstance(policy_of(ctx), FittedPolicy)


@traced
def read_alone(state: TriageState, runtime: Runtime[TriageContext]) -> TriageUpdate:
    """Each passage read alone and grouped by agreeing answers; whether any passage states the joint reading's.

    A question that names its own options is read jointly only (``option_votes`` off): a passage read alone can
    only pick one of them.
    """
    ctx = context(runtime)
    llm, question = llm_of(ctx), question_of(state)
    docs = list(state.get("documents") or [])
    standard = str(state.get("answer") or "")
    compared = bool(question_options(question)) and not ctx.option_votes
    read = state.get("read") or {}
    groups: list[Group] = []
    if not compared:
        readings, read = read_cached(llm, question, docs, read)
        groups = group_readings(readings, source_ids(docs))
    evidence = Evidence(
        standard=standard,
        stated=any(states_part(passage_text(d), standard, question) for d in docs),
        compared=compared,
        closed_book=str(state.get("closed_book") or ""),
        confidence=float(state.get("closed_book_confidence", float("-inf"))),
        groups=canonical([g.as_dict() for g in groups]),
    )
    emit(runtime, "probe", "read_alone", groups=evidence["groups"])
    return {"evidence": evidence, "read": read, "trace": [{"groups": evidence["groups"]}]}


def source_ids(docs: Sequence[Document]) -> list[str]:
    """Each passage's id (its index where it has none): the sources a group names."""
    return [d.id or str(i) for i, d in enumerate(docs)]


@traced
def contrast(state: TriageState, runtime: Runtime[TriageContext]) -> TriageUpdate:
    """A counterfactual contrast: would the first group's passages read better with the rival answer in theirs?

    The rival is :func:`~causalrag.nodes.decide.rival_of`'s; the contrast, :func:`counterfactual_fit`.
    """
    ctx = context(runtime)
    evidence = state["evidence"]
    rival = rival_of(evidence, RulePolicy.of(ctx), every=every_probe(ctx))
    if rival is None:
        return {}
    first = evidence["groups"][0]
    docs = [d for d, i in zip(state.get("documents") or [], source_ids(state.get("documents") or []), strict=True)
            if i in first["sources"]]
    found = counterfactual_fit(llm_of(ctx), docs, first["answer"], rival)
    if found.fit == float("-inf"):  # not asked: not like for like, or no passage states the answer word for word
        return {"trace": [{"contrast": None}]}
    record: ContrastRecord = {
        "rival": rival, "fit": round(found.fit, 4), "familiarity": round(found.familiarity, 4)
    }
    emit(runtime, "probe", "contrast", **record)
    return {"evidence": {"contrast": record}, "trace": [{"contrast": record}]}


@traced
def focus_probe(state: TriageState, runtime: Runtime[TriageContext]) -> TriageUpdate:
    """Where the sources scatter over lone answers: the passage the question is asked of (:func:`focus`)."""
    ctx = context(runtime)
    llm, question = llm_of(ctx), question_of(state)
    docs = list(state.get("documents") or [])
    readings, read = read_cached(llm, question, docs, state.get("read") or {})
    groups = group_readings(readings, source_ids(docs))
    found = focus(llm, question, docs, groups, state["evidence"].get("standard", ""), RulePolicy.of(ctx))
    if found is None:
        return {"trace": [{"focus": None}]}
    emit(runtime, "probe", "focus_probe", **found)
    return {"evidence": {"focus": found}, "trace": [{"focus": dict(found)}]}


@traced
def decide_route(state: TriageState, runtime: Runtime[TriageContext]) -> TriageUpdate:
    """The decision over the probes' record (:func:`~causalrag.nodes.decide.decide`), or the forced route."""
    ctx = context(runtime)
    policy = RulePolicy.of(ctx)
    evidence = state["evidence"]
    decision = decide_with(evidence, policy_of(ctx)) if ctx.route == "auto" else forced(evidence, policy, ctx.route)
    emit(runtime, "decision", "decide_route", **decision)
    return {"decision": decision, "trace": [dict(decision)]}


@traced
def trust_knowledge(state: TriageState, runtime: Runtime[TriageContext]) -> TriageUpdate:
    """The model's own knowledge decides: the answer it holds against the passages.

    A method that wrote passages from memory (Astute's internal passages) reads them to choose between that
    answer and what the retrieved passages say (their first group's answer, else the joint reading; not where
    the passages are off topic: shape ``unsupported``); the passages that state the answer are its evidence.
    """
    ctx = context(runtime)
    evidence, decision = state.get("evidence") or Evidence(), state.get("decision")
    believed = (decision or {}).get("believed") or evidence.get("closed_book") or str(state.get("answer") or "")
    internal = list(state.get("internal") or [])
    said = next((g["answer"] for g in evidence.get("groups") or []), evidence.get("standard") or "")
    # off-topic passages (shape ``unsupported``) state no answer: the joint reading is the model's own
    # knowledge distracted by them, not a retrieved side for the memory passages to weigh
    options = distinct([believed] if (decision or {}).get("shape") == "unsupported" else [believed, said])
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
def answer_focus(state: TriageState, runtime: Runtime[TriageContext]) -> TriageUpdate:
    """The focus route: the answer of the passage the question is asked of (:func:`focus`).

    That passage is its evidence.
    """
    focused = (state.get("evidence") or Evidence()).get("focus")
    answer = (focused["answer"] if focused else "") or str(state.get("answer") or "")
    docs = list(state.get("documents") or [])
    evidence = [d for i, d in enumerate(docs) if focused and (d.id or str(i)) == focused["passage"]]
    emit(runtime, "answer", "focus", answer=answer)
    return {"answer": answer, "documents": evidence or docs, "trace": [{"focus_answer": answer}]}


@traced
def answer_confirmed(state: TriageState, runtime: Runtime[TriageContext]) -> TriageUpdate:
    """The vote route with ``vote_with="confirm"``: the answer most confirmed across the passages read alone.

    The readings are the ones ``read_alone`` made (:func:`~causalrag.nodes.evidence.most_confirmed`); the
    scored choice given the passages together decides among equally confirmed answers (a bridge answer no
    single source gives).
    """
    ctx = context(runtime)
    llm, question = llm_of(ctx), question_of(state)
    docs = together(llm, question, list(state.get("documents") or [])[: ctx.k])
    readings, read = read_cached(llm, question, docs, state.get("read") or {})
    prompt = answer_prompt(question, docs)
    confirmed = most_confirmed(
        llm, question, prompt, format_passages(docs), readings, max_new_tokens=ctx.max_new_tokens
    )
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
