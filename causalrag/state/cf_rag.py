"""CF-RAG state and parameters (Qin et al., "Counterfactual Reasoning for RAG", §4, App. B.2).

The state carries the dialectical evidence as it is built: the counterfactual queries and their
validation, the filtered evidence pool, its spectral clusters, one stratified sample per
reasoning path, the hypotheses drawn from them and their arbitration scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal, NotRequired, Required, TypedDict

from langchain_core.documents import Document

from causalrag.state.base import JudgedContext, OutputState, ReadingRecord, ReadState, ReadUpdate

Verdict = Literal[
    "empty", "repeats the question", "off topic", "duplicate", "spare", "no quick answer", "same answer"
]
"""Why a counterfactual query was rejected (:func:`causalrag.nodes.cf_rag.screen` and ``validate``)."""


class Counterfactual(TypedDict, total=False):
    """One candidate q' and how its validation went (§4.1.1); the later keys are set as it passes each check."""

    type: Required[str]
    """The transformation that made it (``TRANSFORMATIONS`` of ``causalrag.prompts.cf_rag``)."""
    query: Required[str]
    attempt: Required[int]
    """1, or 2 when it was regenerated after the first attempt of its type failed."""
    similarity: float
    """cos(q, q') (Eq. 2)."""
    verdict: Verdict | None
    """Why it was rejected (``"off topic"``, ``"same answer"``, ...), or None when it passed."""
    quick_answer: str
    """L(q'): the quick baseline RAG answer to it."""
    info: float
    """Info(q, q') (Eq. 3)."""
    selected: bool
    """Among the top N valid ones by Info, so one of ``cf_queries``."""


class Hypothesis(TypedDict):
    """(a_j, r_j): one reasoning path's answer and rationale (Eq. 8)."""

    index: int
    """j: the path, so its evidence sample is ``samples[index]``."""
    answer: str
    rationale: str
    raw: str
    """The generated text it was parsed from (empty for a scored choice)."""
    evidence: list[str]
    """Titles of the path's sample."""
    probability: NotRequired[float]
    """Scored judgment: the choice's probability of the answer."""


class ScoredHypothesis(TypedDict):
    """A hypothesis (without its raw text) with its arbitration scores (§4.2.2)."""

    index: int
    answer: str
    rationale: str
    evidence: list[str]
    probability: NotRequired[float]
    phi_coh: float
    phi_causal: float
    psi: float
    """Ψ = (1 − λ)·φ_coh + λ·φ_causal (plus the extended criteria)."""
    confidence: NotRequired[float]
    """φ₃, with ``extended``."""
    specificity: NotRequired[float]
    """φ₄, with ``extended``."""
    agreement: float
    """Share of the hypotheses whose answers agree with this one (§4.2.3)."""


def add_or_reset(left: list[Hypothesis] | None, right: list[Hypothesis] | None) -> list[Hypothesis]:
    """Reducer for parallel hypotheses: branches append; ``None`` clears (a new question on the same thread)."""
    return [] if right is None else [*(left or []), *right]


class CFRAGState(ReadState):
    """CF-RAG's state: the counterfactual queries, the dialectical evidence, the paths and their arbitration."""

    counterfactuals: list[Counterfactual]
    """Every candidate q' with its type, similarity, quick-RAG answer, Info score and verdict (§4.1.1)."""
    cf_queries: list[str]
    """The selected valid counterfactual queries Q_cf."""
    pool: list[Document]
    """E_filtered: the deduplicated, quality/relevance-filtered dialectical evidence (Eq. 4-5)."""
    clusters: list[int]
    """Spectral cluster label of every passage in ``pool`` (§4.2.1)."""
    samples: list[list[Document]]
    """E_j: one stratified sample per reasoning path (Eq. 6-7)."""
    candidates: list[str]
    """Scored judgment only: the answers the hypotheses choose among (the pool's passages read alone)."""
    hypotheses: Annotated[list[Hypothesis], add_or_reset]
    """(a_j, r_j) from the parallel branches (Eq. 8)."""
    arbitration: list[ScoredHypothesis]
    """Hypotheses with φ_coh, φ_causal (and φ_conf, φ_spec), Ψ and agreement, best first (§4.2.2)."""
    consensus: bool
    """HighConsensus({a_j}) (Algorithm 1, line 15): the routing decision."""


class CFRAGUpdate(ReadUpdate, total=False):
    """What a CF-RAG node writes: any keys of :class:`CFRAGState`."""

    counterfactuals: list[Counterfactual]
    cf_queries: list[str]
    pool: list[Document]
    clusters: list[int]
    samples: list[list[Document]]
    candidates: list[str]
    hypotheses: list[Hypothesis] | None
    """A branch's hypothesis (appended by :func:`add_or_reset`), or None to clear the last question's."""
    arbitration: list[ScoredHypothesis]
    consensus: bool


class CFRAGOutput(OutputState):
    """What a run returns: the answer and its evidence, the counterfactuals, the arbitration and the route."""

    counterfactuals: list[Counterfactual]
    arbitration: list[ScoredHypothesis]
    consensus: bool


class HypothesisTask(TypedDict):
    """What one parallel branch receives through ``Send``: the question and its own evidence sample."""

    question: str
    index: int
    documents: list[Document]
    candidates: list[str]
    read: dict[str, ReadingRecord]
    """The sample's passages read alone (from the pool's readings): each confirms the answer it states."""


@dataclass(kw_only=True)
class CFRAGContext(JudgedContext):
    """CF-RAG tunables with the paper's defaults (Table 4); ``k`` is the retrieval depth per query."""

    n_counterfactuals: int = 3
    """N: counterfactual queries kept (§4.1.1, Table 4)."""
    theta_sim: float = 0.7
    """θ_sim: minimum embedding similarity between q and q' (Eq. 2)."""
    theta_repeat: float = 0.97
    """Similarity at or above which q' counts as a repeat of q (a paraphrase, not a counterfactual)."""
    validation_k: int = 3
    """Passages per query for the quick baseline RAG answer L(q') of the validation (App. E.2.1)."""
    regenerate: bool = True
    """Re-ask the failed transformation types once, with sampling, before dropping them."""
    regenerate_samples: int = 4
    """Samples per failed type in that one retry; the first that passes validation is kept."""
    info_alpha: float = 1 / 3
    """α: weight of semantic divergence in Info(q, q') (Eq. 3)."""
    info_beta: float = 1 / 3
    """β: weight of answer divergence in Info(q, q') (Eq. 3)."""
    info_gamma: float = 1 / 3
    """γ: weight of domain relevance in Info(q, q') (Eq. 3)."""
    theta_dedup: float = 0.95
    """θ_dedup: passages at least this similar to a kept one are dropped (Eq. 4)."""
    theta_quality: float = 0.5
    """θ_quality: minimum Q(e), the share of alphabetic words, for passages of ≥ ``min_words`` (Eq. 5)."""
    min_words: int = 5
    """Passages shorter than this carry no usable evidence (quality filter, Eq. 5)."""
    theta_rel: float = 0.1
    """θ_rel: minimum max_q' cos(q', e) over {q} ∪ Q_cf (relevance filter, Eq. 5)."""
    clusters: int = 4
    """K: spectral clusters of the evidence pool (§4.2.1, Table 4)."""
    rho: float = 0.5
    """ρ: expected share of each cluster drawn into a sample (Eq. 6)."""
    tau: float = 1.0
    """τ: temperature of the Gumbel-softmax cluster weights (Eq. 7)."""
    seed: int = 0
    """Seed of the sampling (Gumbel noise, within-cluster draws, regeneration)."""
    hypotheses: int = 3
    """M (P in Algorithm 1): parallel hypotheses (§4.2.1, Table 4)."""
    hypothesis_tokens: int = 40
    """Token budget of one hypothesis (answer line + one-line rationale)."""
    lam: float = 0.4
    """λ: causal weight in Ψ = (1 − λ)·φ_coh + λ·φ_causal (Algorithm 1, line 12)."""
    coherence: Literal["pool", "sample"] = "pool"
    """The evidence φ_coh averages over (Eq. 9). "sample": E_j, each path's own sample, as the paper writes
    it; its score is then volume-invariant (App. C), so a path that drew only the two answer-swapped
    passages of a pool scores as coherent as one that drew the three correct ones, and on conflicting
    pools the answer-swapped passages win more often than under standard RAG. "pool" (our choice): the
    whole filtered evidence E, so an answer the pool supports more widely is more coherent; φ_causal
    stays per path."""
    lambda1: float = 0.5
    """λ₁: weight of answer-evidence similarity in CoherenceFunction (Eq. 10)."""
    lambda2: float = 0.5
    """λ₂: weight of relevance × mention in CoherenceFunction (Eq. 10)."""
    extended: bool = False
    """Add the extended criteria φ₃ (confidence) and φ₄ (specificity) to Ψ (§4.2.2)."""
    w_confidence: float = 0.15
    """w₃: weight of generation confidence when ``extended`` (the rest keeps the (1 − λ, λ) split)."""
    w_specificity: float = 0.10
    """w₄: weight of answer specificity when ``extended``."""
    theta_agree: float = 0.85
    """θ_agree: two answers agree when their similarity exceeds it (§4.2.3)."""
    consensus_share: float = 0.5
    """HighConsensus: Agreement(a_{j*}) must exceed this share of the M hypotheses."""
    synthesis_k: int = 5
    """Passages shown to the synthesis step next to the top-3 candidates (Eq. 12)."""


Route = Literal["accept", "synthesize"]
