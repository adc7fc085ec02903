"""RetroRAG state and parameters (Xiao et al., "Retrieval-Augmented Generation by Evidence Retroactivity").

One iteration L of the loop reads: collate E_s^(L) from the re-query q_s^(L-1) → discover the
inferential evidence E_i^(L) → answer (a, r) and self-consistency answer a_sc → check s_sc > t,
else write the re-query q_s^(L) and go round again.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Literal, NotRequired, TypedDict

from langchain_core.documents import Document

from causalrag.state.base import ChoiceRecord, JudgedContext, OutputState, ReadState, ReadUpdate

YesScore = Literal["combined", "calibrated", "raw"]
"""How a yes-probability becomes a score (``RetroContext.yes_score``)."""
StopReason = Literal["consistent", "max_iterations", ""]
"""Why the loop stopped: s_sc > t (``consistent``), the iteration budget ran out, or ``""`` while it goes on."""


class Consistency(TypedDict):
    """s_sc and how it was reached (Eq. 1).

    The evaluator's yes-probability, calibrated and combined with a text agreement score, or (scored judgment)
    the direct answer's probability mass on a. The discovery gates s_qr and s_ra are judged the same way.
    """

    raw: float | None
    """P(yes)/(P(yes)+P(no)); None when no evaluator was asked (an empty answer, scored judgment)."""
    calibrated: float | None
    agreement: float
    """Text agreement of a and a_sc."""
    score: float
    """s_sc."""
    uninformative: bool
    """The calibrated probability stayed near 0.5: the evaluator could not tell."""
    scored: NotRequired[bool]
    """Scored judgment: ``score`` is the choice's mass on a."""


class Round(TypedDict):
    """One iteration L of the loop, JSON-ready."""

    iteration: int
    query: str
    """q_s^(L-1), the query this iteration collated with."""
    evidence: list[str]
    """Titles of E_s^(L)."""
    inferential_evidence: list[str]
    answer: str
    reasoning: str
    sc_answer: str
    sc: Consistency
    stop: StopReason
    """"consistent", "max_iterations", or "" when the loop went on."""


class GateScore(TypedDict):
    """A discovery gate's verdict as a scored judgment: the likelihood gain the evidence brings, and σ of it."""

    gain: float
    """Mean log-likelihood gain per token over the content-free input."""
    score: float
    """σ(gain): the gate passes above ``gate_threshold``."""


class JudgedInference(TypedDict):
    """One inference e_ic with its two discovery gates (Eq. 3)."""

    fact: str
    qr: Consistency | GateScore
    """s_qr: does it help answer the question."""
    ra: Consistency | GateScore
    """s_ra: is it stated in the source evidence."""


class NoChoice(TypedDict):
    """An empty ``sc_choice``: the scored answer found nothing to choose among (no reading, no written answer)."""


class RetroOutput(OutputState):
    """What a caller sees: the answer, the collated source evidence, and every iteration's record."""

    inferential_evidence: list[str]
    rounds: Annotated[list[Round], operator.add]


class RetroState(ReadState):
    """RetroRAG's state: the current iteration's queries, evidence, answers and scores, and every round's record."""

    iteration: int
    """L, the current iteration (1-based)."""
    search_query: str
    """q_s^(L-1): the query the next collation retrieves with (q_s^(0) = q)."""
    matching_query: str
    """q_m^(L) = [q, q_s^(L-1)]: what collation and the QR gate score against."""
    key_entities: list[str]
    """k: the question's key entities, fixed for the whole run."""
    source_evidence: list[Document]
    """E_s^(L): the top-N collated passages."""
    inferential_evidence: list[str]
    """E_i^(L): the top-K inferences that passed both gates."""
    reasoning: str
    """r: the chain-of-thought behind the pseudo-answer a (``answer``)."""
    sc_answer: str
    """a_sc: the self-consistency (direct, temperature 1.0) answer."""
    sc_choice: ChoiceRecord | NoChoice
    """Scored judgment only: the direct answer's choice among the candidate answers (s_sc is its mass on a)."""
    sc_score: float
    """s_sc: the evaluator's agreement score of a and a_sc."""
    stop_reason: StopReason
    """"consistent" (s_sc > t), "max_iterations", or "" while the loop goes on."""
    rounds: Annotated[list[Round], operator.add]
    """One record per iteration: query, evidence, inferences, answers, scores (JSON-ready)."""


class RetroUpdate(ReadUpdate, total=False):
    """What a RetroRAG node writes: any keys of :class:`RetroState`."""

    iteration: int
    search_query: str
    matching_query: str
    key_entities: list[str]
    source_evidence: list[Document]
    inferential_evidence: list[str]
    reasoning: str
    sc_answer: str
    sc_choice: ChoiceRecord | NoChoice
    sc_score: float
    stop_reason: StopReason
    rounds: list[Round]
    """This iteration's record (appended to the rounds so far)."""


@dataclass(kw_only=True)
class RetroContext(JudgedContext):
    """RetroRAG's tunables with the paper's defaults (Experiments → Settings, Figure 4)."""

    retrieval: Literal["dense", "bm25", "hybrid"] = "dense"
    """Retriever for the first retrieval and for collation. The paper reports BM25 and SimLM, a dense
    retriever; dense is the default (the library's embedding model in SimLM's place)."""
    retrieve_k: int = 5
    """|D_C^(L)|: passages retrieved per iteration ("top 5 relevant passages")."""
    evidence_size: int = 5
    """N: source evidence kept after collation ("size of the evidence repository" = 5)."""
    inferential_size: int = 5
    """K: inferential evidence kept after discovery (the paper sets K = N)."""
    max_iterations: int = 5
    """Maximum number of iterations (5; Figure 4 peaks at 5–6)."""
    threshold: float = 0.7
    """t: stop when s_sc > t (default 0.7). t ≥ 1 disables the stop: the paper's "w/o AE" ablation."""
    gate_threshold: float = 0.5
    """Both discovery gates keep an inference only when s_qr > 0.5 and s_ra > 0.5 (Eq. 3)."""
    answer_temperature: float = 0.0
    """Answer-generator temperature (paper: 0.01; 0 is greedy)."""
    sc_temperature: float = 1.0
    """SC-generator temperature (paper: 1.00)."""
    yes_score: YesScore = "combined"
    """With ``judge="generate"``: how the evaluators' yes-probabilities become s_sc, s_qr, s_ra: "raw" is
    the paper's P(yes)/(P(yes)+P(no)); "calibrated" contrasts it with a content-free prompt;
    "combined" averages the calibrated probability with a text-agreement score (see ``nodes.retro``)."""
    matching: Literal["llm", "dense", "combined"] = "combined"
    """Matching scorer S_e for collation and inferential-evidence updating: the LLM relevance
    yes-probability (paper, prompt M_e), dense cosine, or the mean of their z-scores."""
    max_inferences: int = 3
    """Inferential-evidence candidates e_ic generated per iteration (one generation, one per line)."""
    discovery: bool = True
    """False → the "w/o IE" ablation: no inferential evidence is generated or used."""
    collation: bool = True
    """False → the "w/o UoE" ablation: new passages are appended, never re-scored or dropped."""
    reasoning_tokens: int = 48
    """Token budget of the chain-of-thought answer (reasoning line + answer line)."""
    query_tokens: int = 16
    """Token budget of the re-query."""
    seed: int | None = 0
    """Seed of the temperature-1.0 SC generator, for reproducible runs (None: unseeded)."""
