"""State and parameters of ``triage``, our router over the papers' mechanisms (``causalrag.graphs.triage``).

Probe nodes fill one typed :class:`Evidence` record (the joint reading, each passage alone, the closed-book
answer and how sure the model is of it, a counterfactual contrast, the passage the question is asked of);
one pure decision over it (:func:`causalrag.nodes.decide.decide`) writes a :class:`Decision`: the route
(keep / vote / knowledge / focus) and what decided it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal, NotRequired, TypedDict

from langchain_core.documents import Document

from causalrag.state.base import GroupRecord, JudgedContext, OutputState, ReadState, ReadUpdate

Route = Literal["keep", "vote", "knowledge", "focus"]
Shape = Literal[
    "agree", "conflict", "scattered", "corroborated", "unanswered", "unsupported", "compared", "contradicted"
]
VoteWith = Literal["confirm", "astute", "cf_rag", "retro", "cis", "moi"]
KnowledgeWith = Literal["closed_book", "astute"]


class ContrastRecord(TypedDict):
    """A counterfactual contrast (:func:`causalrag.nodes.triage.counterfactual_fit`)."""

    rival: str
    """The answer put in place of the first group's: the model's own, or the runner-up group's."""
    fit: float
    """How much better the first group's passages read with ``rival`` in place of their answer (nats, summed
    over a passage, mean over the passages)."""
    familiarity: float
    """How much likelier ``rival``'s words are than the first group's answer's with no passage (nats)."""


class FocusRecord(TypedDict):
    """The passage a question is asked of among lone look-alikes (:func:`causalrag.nodes.triage.focus`)."""

    answer: str
    """Its answer: a scored choice, given that passage alone, among the lone answers and the joint reading's."""
    passage: str
    """Its id."""
    margin: float
    """How much likelier the question is asked of it than of any other answer's passage (nats, summed)."""
    joint: float
    """How much likelier the question is asked of it and the runner-up together than of it alone (nats)."""


class Evidence(TypedDict, total=False):
    """What the probes saw.

    Every field is order-free: the same passages in any order give the same record (groups are sorted by size,
    then answer).
    """

    standard: str
    """The joint reading: standard RAG's answer from the passages together."""
    stated: bool
    """Whether some passage states the joint reading's answer (for a reply written as a sentence: a run of its
    words that adds a name or term to the question, :func:`~causalrag.text.states_part`)."""
    compared: bool
    """The question names its own options (yes/no, "A or B") and its passages were not read alone."""
    closed_book: str
    """The model's answer with no passage."""
    confidence: float
    """Mean per-token log-probability of ``closed_book``."""
    groups: list[GroupRecord]
    """Sources whose lone readings agree, largest first."""
    contrast: ContrastRecord
    """Present when a contrast was asked (:func:`causalrag.nodes.decide.rival_of`)."""
    focus: FocusRecord
    """Present when the sources scatter and one passage stood out as the one asked."""


def merge_evidence(left: Evidence | None, right: Evidence | None) -> Evidence:
    """Reducer of the evidence record: each probe adds its fields to it.

    The first probe's fields (it names the joint reading, ``standard``) start a new record, so a thread's next
    question does not inherit the last one's contrast or focus.
    """
    if right is None or "standard" in right:
        return right or Evidence()
    return Evidence(**{**(left or {}), **right})


class Decision(TypedDict):
    """The route a question takes and what decided it (:func:`causalrag.nodes.decide.decide`)."""

    route: Route
    shape: Shape
    believed: str | None
    """The answer the model's knowledge holds against the passages, on the knowledge route."""
    why: str
    """The rule that decided, in one sentence."""


class TriageState(ReadState):
    """The probes' record, the decision, and the route's own evidence."""

    closed_book: NotRequired[str]
    """The model's answer with no passage (``recall``), before standard RAG's reading."""
    closed_book_confidence: NotRequired[float]
    """How sure the model is of ``closed_book``, scored in ``recall``."""
    evidence: Annotated[Evidence, merge_evidence]
    decision: Decision
    internal: NotRequired[list[Document]]
    """Astute's passages from memory, on the knowledge route with ``knowledge_with="astute"``."""


class TriageUpdate(ReadUpdate, total=False):
    """What a ``triage`` node writes: any keys of :class:`TriageState` (a probe's ``evidence``: only its fields)."""

    closed_book: str
    closed_book_confidence: float
    evidence: Evidence
    decision: Decision
    internal: list[Document]


class TriageOutput(OutputState, total=False):
    """What a run returns: the answer and its evidence, the probes' record and the decision."""

    evidence: Evidence
    decision: Decision


@dataclass(kw_only=True)
class TriageContext(JudgedContext):
    """``triage``'s parameters: which mechanism each route runs, and the decision's thresholds.

    The thresholds make the rules policy (:class:`causalrag.nodes.decide.RulePolicy`); their provenance is
    docs/results.md, "Tuning record".
    """

    policy: str | None = None
    """How the decision is made: ``rules`` (the thresholds below), ``bundled`` (the policy fitted for the bundled
    model, shipped in the package) or the path of a policy file written by ``causalrag calibrate``; None →
    ``CAUSALRAG_POLICY``, else ``rules``."""
    route: Literal["auto", "keep", "vote", "knowledge", "focus"] = "auto"
    """"auto": the decision picks the route per question; any other value forces that route (ablations)."""
    probes: Literal["needed", "all"] = "needed"
    """"needed": the contrast and focus probes run only where the decision would use them; "all": wherever they
    can be asked (any rival answer, the model's own however unsure; any scattered sources), as a fitted policy's
    features and ``causalrag calibrate``'s records need. A forced route with "all" still runs every probe."""
    vote_with: VoteWith = "confirm"
    """What the vote route runs on the retrieved passages: ``confirm`` (the answer most confirmed across the
    passages read alone, the joint reading's scored choice breaking ties), or a paper method's own
    aggregation as a subgraph restricted to the same passages, sharing the readings already made."""
    vote_size: Literal["paper", "cpu"] = "paper"
    """The voting method's parameters: the paper's defaults, or its CPU-sized ones (``cpu_params``)."""
    knowledge_with: KnowledgeWith = "closed_book"
    """What the knowledge route answers with: the model's closed-book answer, or Astute's passages from memory
    choosing between it and what the retrieved passages say (§3.3)."""
    max_internal: int = 1
    """``knowledge_with="astute"``: m̂, the most passages the model writes from memory (Astute §3.3)."""
    internal_tokens: int = 48
    """``knowledge_with="astute"``: token budget per passage from memory."""
    knowledge_confidence: float = -0.5
    """The mean per-token log-probability of its closed-book answer at or above which the model's own answer
    overrules what the passages say."""
    minority_confidence: float = -5.0
    """The confidence at or above which the model's answer, agreeing with a minority of disputing sources,
    sides with that minority (the default takes any answer)."""
    knowledge_fit: float = 3.0
    """Nats by which the first group's passages must read better with a rival answer in place of theirs for the
    rival to be taken (1000 turns the contrast off)."""
    knowledge_familiarity: float = 10.0
    """Nats by which a rival's bare words may be likelier than the passages' answer's for the contrast to take
    it (a far more familiar name reads better anywhere; 1000 lifts the limit)."""
    contrast_confidence: float = -2.25
    """The confidence at or above which the model's own answer is weighed by the contrast (below: a guess)."""
    focus_margin: float = 1.0
    """Nats by which the question must be likelier asked of one passage than of any other answer's passage for
    that passage's answer to replace the joint reading's, where the sources scatter (1000 turns it off)."""
    focus_joint: float = 2.0
    """Nats by which the question must be likelier asked of the top passage and the runner-up together for the
    pair to count as needed (a bridge: the joint reading stands)."""
    option_votes: bool = False
    """Whether a passage read alone votes on a question that names its own options (yes/no, "A or B")."""
