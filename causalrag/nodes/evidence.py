"""Isolate, then aggregate: the scored readings the robust methods share.

A 270M base model blends a conflicting context into one (often wrong) answer and writes formats
badly, but it ranks given options well. So a conflict is made explicit before anything decides:

1. **isolate** — :func:`read_each` reads every passage *alone*, all in one batch: a question with
   options of its own (yes/no, "A or B") is a scored choice among them; otherwise the model writes a
   short answer, kept (trimmed to the words the passage states) when the passage states it, else replaced by a
   scored choice among the spans the passage offers (:func:`reading_options`). Each reading then gets its
   **relevance**: how much the question raises the answer's likelihood in that passage over a
   content-free question ("N/A"; mean log-probability per token). A passage that does not answer
   the question (off topic, or planting an answer whatever is asked, as an injected instruction
   does) scores ≤ 0 and does not vote.
2. **group** — :func:`group_readings` puts sources whose answers agree (normalized equality or
   whole-word containment) in one group, keeping the labels of its sources.
3. **judge** — :func:`read_jointly` chooses among a fixed set of candidate answers given some
   passages together (a hypothesis, a synthesis, a final answer), and :func:`support_matrix` asks
   each passage alone which of several answers it supports; every judgment is a ``choose``.
4. **match** — :func:`query_relevance` scores how well a passage matches a query by the query's
   likelihood as the question asked of that passage (CF-RAG's s(q, e)); :func:`question_likelihood` is
   that likelihood itself, for any set of passages (which passage is the question asked of?).

Methods keep their own aggregation (Astute's reliability, CF-RAG's Ψ, RetroRAG's self-consistency).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from langchain_core.documents import Document
from scipy.special import expit

from causalrag.nodes.common import fit
from causalrag.prompts.common import ANSWER_STOP, NO_PASSAGE, answer_prompt, echoes_examples, reading_prefix
from causalrag.state.base import GroupRecord, ReadingRecord
from causalrag.text import (
    answer_spans,
    clean_answer,
    grounded,
    key_sentences,
    name_only,
    normalize_answer,
    one_line,
    question_options,
    restates,
    same_answer,
)
from causalrag.tools.backends.base import LLM, Choice


def passage_text(doc: Document) -> str:
    """``Title. text`` (a title often names the answer: "David Weissman" over his biography)."""
    title = str(doc.metadata.get("title") or "").strip()
    return f"{title}. {doc.page_content}" if title else doc.page_content


def reading_options(question: str, doc: Document, *, limit: int = 12) -> list[str]:
    """The answers one passage offers: the question's own options, else spans of its key sentences."""
    return question_options(question) or answer_spans(
        key_sentences(question, passage_text(doc)), exclude=question, limit=limit
    )


NEUTRAL_QUESTION = "N/A"
"""The content-free question a reading is calibrated against (Zhao et al., 2021)."""


@dataclass(frozen=True)
class Reading:
    """One source read alone: its answer (None when it offers none), how it was read, its relevance."""

    answer: str | None
    probability: float = 1.0
    """The scored choice's probability of the answer (1.0 for a grounded written answer)."""
    relevance: float = 0.0
    """Mean per-token log-probability gain of the answer from the real question over "N/A"."""
    how: str = ""
    """"options" (the question's own), "written" (grounded short answer) or "spans" (choice among its spans)."""

    @property
    def votes(self) -> bool:
        """Whether this source answers the question: an answer whose likelihood the question raises."""
        return bool(self.answer) and self.relevance > 0

    def as_dict(self) -> ReadingRecord:
        """This reading as plain data (probability and relevance rounded), as the state's ``read`` keeps it."""
        return {
            "answer": self.answer,
            "probability": round(self.probability, 4),
            "relevance": round(self.relevance, 4),
            "how": self.how,
        }


REPLY_ROOM = 32
"""Tokens kept for a scored option or a short written answer when a prompt is fitted to the window."""


def alone(llm: LLM, question: str, docs: Sequence[Document]) -> list[Document]:
    """Each passage as it fits a single-passage prompt (an overlong one trimmed, one that cannot fit emptied)."""
    fitted = [fit(llm, [d], lambda ds: answer_prompt(question, ds), reply_tokens=REPLY_ROOM) for d in docs]
    return [
        f[0] if f else Document(id=d.id, page_content="", metadata=dict(d.metadata))
        for f, d in zip(fitted, docs, strict=True)
    ]


def together(llm: LLM, question: str, docs: Sequence[Document]) -> list[Document]:
    """The best-ranked passages that fit one prompt together (lower-ranked ones dropped)."""
    return fit(llm, list(docs), lambda ds: answer_prompt(question, ds), reply_tokens=REPLY_ROOM)


def read_each(llm: LLM, question: str, docs: Sequence[Document], *, max_new_tokens: int = 16) -> list[Reading]:
    """Every passage read alone (batched calls over all passages), then its relevance (one more call)."""
    docs = alone(llm, question, docs)
    readings = [Reading(None)] * len(docs)
    own = question_options(question)
    if own:
        for i, c in enumerate(llm.choose([answer_prompt(question, [d]) for d in docs], [own] * len(docs))):
            readings[i] = Reading(c.answer, c.probs[c.best], how="options")
    elif docs:
        written = llm.generate(
            [answer_prompt(question, [d]) for d in docs], max_new_tokens=max_new_tokens, stop=ANSWER_STOP
        )
        spans = []
        for i, (doc, out) in enumerate(zip(docs, written, strict=True)):
            answer = grounded(clean_answer(out[0] if out else ""), passage_text(doc))
            if answer and not restates(answer, question):
                readings[i] = Reading(answer, how="written")
            elif options := reading_options(question, doc):
                spans.append((i, options))
        if spans:  # the model wrote what the passage does not state: choose among what it does state
            choices = llm.choose([answer_prompt(question, [docs[i]]) for i, _ in spans], [o for _, o in spans])
            for (i, _), c in zip(spans, choices, strict=True):
                readings[i] = Reading(c.answer, c.probs[c.best], how="spans")
    return with_relevance(llm, question, docs, readings)


def read_cached(
    llm: LLM, question: str, docs: Sequence[Document], read: Mapping[str, ReadingRecord]
) -> tuple[list[Reading], dict[str, ReadingRecord]]:
    """:func:`read_each` for the passages not in ``read`` (readings by passage id, as plain data).

    Returns every passage's reading in order and the updated record, so each passage is read once per run.
    """
    kept: dict[Any, ReadingRecord] = dict(read)  # by ``Document.id``: a passage without one is keyed None
    unread = list({d.id: d for d in docs if d.id not in kept}.values())
    for doc, reading in zip(unread, read_each(llm, question, unread), strict=True):
        kept[doc.id] = reading.as_dict()
    return [Reading(**kept[d.id]) for d in docs], kept


def with_relevance(llm: LLM, question: str, docs: Sequence[Document], readings: Sequence[Reading]) -> list[Reading]:
    """Each reading's relevance: its answer scored in its passage under the question minus under "N/A"."""
    asked = [i for i, r in enumerate(readings) if r.answer]
    if not asked:
        return list(readings)
    docs = alone(llm, question, docs)
    gains = llm.choose(
        [answer_prompt(question, [docs[i]]) for i in asked],
        [[readings[i].answer or ""] for i in asked],  # every asked reading has an answer
        neutral=[answer_prompt(NEUTRAL_QUESTION, [docs[i]]) for i in asked],
    )
    out = list(readings)
    for i, gain in zip(asked, gains, strict=True):
        out[i] = Reading(readings[i].answer, readings[i].probability, float(gain.scores[0]), readings[i].how)
    return out


@dataclass
class Group:
    """Sources that agree on one answer (a consolidated passage ⟨D_j, S_j⟩ with its answer)."""

    answer: str
    sources: list[str] = field(default_factory=list)
    members: list[int] = field(default_factory=list)
    """Indices of the member sources in the pool that was read."""

    def as_dict(self) -> GroupRecord:
        """This group as plain data: its answer and its sources' labels (without the member indices)."""
        return {"answer": self.answer, "sources": list(self.sources)}


def group_readings(readings: Sequence[Reading], labels: Sequence[str]) -> list[Group]:
    """Sources grouped by agreeing answers, largest group first (ties: the earliest source first).

    A group is named by the most common spelling among its members (then the longest: "Heath
    Ledger" over "Ledger"); sources without an answer, or whose answer the question does not make
    more likely (relevance ≤ 0), join no group.
    """
    groups: list[Group] = []
    spellings: list[list[str]] = []
    for i, (reading, label) in enumerate(zip(readings, labels, strict=True)):
        answer = reading.answer
        if not reading.votes or answer is None or not normalize_answer(answer):
            continue
        home = next(
            (g for g, names in enumerate(spellings) if any(same_answer(answer, n) for n in names)), None
        )
        if home is None:
            groups.append(Group(answer))
            spellings.append([])
            home = len(groups) - 1
        groups[home].sources.append(label)
        groups[home].members.append(i)
        spellings[home].append(answer)
    for group, names in zip(groups, spellings, strict=True):
        group.answer = max(names, key=lambda n: (names.count(n), len(n)))
    return sorted(groups, key=lambda g: (-len(g.members), g.members[0]))


def written_answer(llm: LLM, prompt: str, evidence: str, *, max_new_tokens: int = 24) -> str:
    """The model's own short answer to a prompt that holds every passage (standard RAG's reading).

    It is one more candidate, so a scored choice can always pick what the passages read together say. An
    answer copied from the prompt's worked examples and absent from ``evidence`` (the passages' text) is no
    reading of them: it comes back empty (:func:`~causalrag.prompts.common.echoes_examples`).
    """
    out = llm.generate([prompt], max_new_tokens=max_new_tokens, stop=ANSWER_STOP)[0]
    answer = name_only(clean_answer(out[0] if out else ""))
    return "" if echoes_examples(answer, evidence) else answer


def with_candidate(options: Sequence[str], answer: str, question: str) -> list[str]:
    """``options`` plus ``answer``, unless that adds nothing.

    ``answer`` is left out when one of the options already agrees with it, when it is empty, or when it only
    restates the question (:func:`~causalrag.text.restates`).
    """
    options = list(options)
    if normalize_answer(answer) and not restates(answer, question) and not any(same_answer(answer, o) for o in options):
        options.append(answer)
    return options


def reliability(confirmations: Sequence[int], joint: Choice) -> list[float]:
    """Each answer's reliability: cross-source confirmation first, the joint reading second.

    Per answer, the sources beyond the first that state it when read alone, plus its probability in the
    scored choice given the passages together (below 1, so the joint reading decides only among equally
    confirmed answers, e.g. a bridge answer that no single source gives).
    """
    return [n + p for n, p in zip(confirmations, joint.probs, strict=True)]


def confirmations(answers: Sequence[str], readings: Sequence[Reading]) -> list[int]:
    """Per answer, how many sources beyond the first state it when read alone."""
    return [max(0, sum(r.votes and same_answer(r.answer or "", a) for r in readings) - 1) for a in answers]


def most_confirmed(
    llm: LLM, question: str, prompt: str, evidence: str, readings: Sequence[Reading], *, max_new_tokens: int
) -> tuple[Choice, list[float]] | None:
    """The scored choice given ``prompt`` (the passages together), with each option's :func:`reliability`.

    The options are the sources' answers read alone and the model's own answer to ``prompt`` (a bridge
    answer no single source gives; ``evidence`` is the text it must come from), or the question's own
    options. None when there is nothing to choose among.
    """
    options = question_options(question) or with_candidate(
        [g.answer for g in group_readings(readings, [str(i) for i in range(len(readings))])],
        written_answer(llm, prompt, evidence, max_new_tokens=max_new_tokens),
        question,
    )
    if not options:
        return None
    choice = llm.choose([prompt], [options])[0]
    return choice, reliability(confirmations(options, readings), choice)


def read_jointly(
    llm: LLM, questions: Sequence[str], contexts: Sequence[Sequence[Document]], options: Sequence[Sequence[str]]
) -> list[Choice]:
    """Scored choices among fixed candidate answers, each given its passages together (one batched call)."""
    prompts = [answer_prompt(q, together(llm, q, docs)) for q, docs in zip(questions, contexts, strict=True)]
    return llm.choose(prompts, [list(o) for o in options])


def support_matrix(llm: LLM, question: str, docs: Sequence[Document], answers: Sequence[str]) -> list[list[float]]:
    """P(answer | passage alone, question) for every passage × answer: which answer each passage supports."""
    if not docs or not answers:
        return [[] for _ in docs]
    choices = llm.choose(
        [answer_prompt(question, [d]) for d in alone(llm, question, docs)], [list(answers)] * len(docs)
    )
    return [list(c.probs) for c in choices]


def question_likelihood(llm: LLM, question: str, passage_sets: Sequence[Sequence[Document]]) -> list[float]:
    """The question's log-likelihood given each set of passages.

    That is log p(question | passages), summed over the question's tokens: the question scored as the one
    asked of them in the reading prompt (:func:`~causalrag.prompts.common.reading_prefix`), the query
    likelihood of UPR (Sachan et al., 2022, "Improving Passage Retrieval with Zero-Shot Question
    Generation"). A single passage's prefix is the one its reading alone starts with, so its cache is reused.
    """
    if not passage_sets:
        return []
    asked = f" {one_line(question)}"
    return llm.logprob([reading_prefix(list(s)) for s in passage_sets], [asked] * len(passage_sets), reduce="sum")


def query_relevance(llm: LLM, docs: Sequence[Document], queries: Sequence[str]) -> np.ndarray:
    """s(q, e) = σ(mean log p(q | e) − mean log p(q | no passage)) per token, for every passage × query.

    One batched ``logprob`` call. q is scored as the question asked of e in the single-passage
    reading prompt (:func:`~causalrag.prompts.common.reading_prefix`), so the passage's KV cache is
    the one every reading of e starts with: decoded once for the scores and the readings alike.
    The passage-free baseline cancels how likely a query is anyway (its length and wording).
    """
    n, m = len(docs), len(queries)
    if not n or not m:
        return np.zeros((n, m))
    asked = [f" {one_line(q)}" for q in queries]
    prefixes = [reading_prefix([d]) for d in docs for _ in queries] + [reading_prefix([NO_PASSAGE])] * m
    scores = np.array(llm.logprob(prefixes, asked * n + asked, reduce="mean"), dtype=float)
    conditional, prior = scores[: n * m].reshape(n, m), scores[n * m :]
    with np.errstate(invalid="ignore"):
        gain = conditional - prior[None, :]
    relevance: np.ndarray = expit(np.nan_to_num(gain, nan=0.0))  # a non-finite score on both sides says nothing: 0.5
    return relevance
