"""State and parameters of MoI, Mixture-of-Intervention reranking.

Lee et al., "Inference Scaling for Bridging Retrieval and Augmented Generation"
(``papers/moi-mixture-of-intervention.md``).

The n retrieved passages are scored in several orders (interventions); a constrained least-squares
fit separates each passage's utility u from the model's position bias w (Eq. 4); the answer step
reads the passages in descending u.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from langchain_core.documents import Document

from causalrag.state.base import OutputState, RAGContext, RAGState, RAGUpdate

Variant = Literal["moi", "bayes_saliency", "random", "self_consistency"]


class MoIState(RAGState, total=False):
    """MoI's state: the candidates, the orderings scored, their saliency and the fit of position bias and utility."""

    candidates: list[Document]
    """The n retrieved passages in the retriever's order (the reference ordering of App. B)."""
    permutations: list[list[int]]
    """Orderings scored (indices into ``candidates``; position 0 is the first passage of the prompt)."""
    saliency: list[float]
    """s(π) = log p(q | passages in order π) − log p(q), one per permutation (Eq. 3)."""
    log_p_question: float
    """log p(q) with no passages: computed once per question."""
    position_weights: list[float]
    """w_j, the model's position bias (Eq. 4; Σ w = 1)."""
    utilities: list[float]
    """u_i, the debiased utility of ``candidates[i]`` (Eq. 4)."""
    ranking: list[str | None]
    """Passage ids (``Document.id``) of all n candidates, best first (descending u, or the baseline's order)."""
    votes: dict[str, int]
    """Self-consistency baseline: normalized answer → number of permutations that gave it."""


class MoIUpdate(RAGUpdate, total=False):
    """What a MoI node writes: any keys of :class:`MoIState` (the one-node reranker writes them all)."""

    candidates: list[Document]
    permutations: list[list[int]]
    saliency: list[float]
    log_p_question: float
    position_weights: list[float]
    utilities: list[float]
    ranking: list[str | None]
    votes: dict[str, int]


class MoIOutput(OutputState, total=False):
    """What a run returns: the answer and its evidence, plus the ranking and the fit (or the baseline's votes)."""

    ranking: list[str | None]
    position_weights: list[float]
    utilities: list[float]
    votes: dict[str, int]


@dataclass(kw_only=True)
class MoIContext(RAGContext):
    """MoI's tunables, with the paper's defaults (the full mixture of §3.2.1, no pruning)."""

    variant: Variant = "moi"
    """``moi`` (the method) or a baseline of Table 1 / App. C: ``bayes_saliency`` (Eq. 1, pointwise,
    no permutations), ``random`` (one random order) or ``self_consistency`` (answer over
    ``sc_permutations`` random orders, majority vote)."""
    candidates: int = 5
    """n: passages retrieved and reordered (§3.1, D = {d_1..d_n}); the answer reads the top ``k``
    of them in utility order (n < k reads as n = k)."""
    proposal: Literal["sampled", "tree", "cyclic"] = "sampled"
    """§3.2: |S| uniformly ``sampled`` random permutations (§3.2.1), |S| orderings drawn as a seeded balanced
    ``tree`` (groups of orderings that share their first ``shared_prefix`` passages, so the KV cache decodes
    those once; every passage at every position equally often; see ``nodes.moi_solve.tree_permutations``),
    or the n ``cyclic`` shifts of the retriever's order (§3.2.2, App. B: n calls instead of 2n or more).
    ``tree`` is not the default: sharing one passage saves no cells over uniform samples, which share as
    much by chance, and deeper sharing costs fidelity (docs/performance.md, "Shared prefixes: MoI")."""
    max_permutations: int = 0
    """|S|, the budget of ``tree`` or ``sampled`` orderings; 0 → 2n, the paper's minimum for 2n unknowns
    (§3.2.1). All n! orders are used when n! ≤ |S|."""
    shared_prefix: int = 1
    """``tree`` proposals: passages each group of orderings shares at the front of its prompts. 1 keeps the
    fit as well conditioned as random sampling on synthetic scores; each further shared passage saves n
    passage reads a question (|S| = 2n) but repeats the observations of the strongest positions, and the fit
    degrades. Clamped to what keeps the orderings distinct."""
    prefix: int = 0
    """Prefix pruning (§3.3.1, Eq. 5-6): score only the first ``prefix`` positions of each
    permutation; 0 keeps all n (the paper's full MoI). The cheap recipe of Table 6 is
    ``proposal="cyclic"`` with a short prefix (e.g. 2)."""
    singletons: bool = True
    """Score each passage alone too (n more interventions, Eq. 1's pointwise saliency): with orderings of all n
    passages Eq. 4 leaves the sign and scale of u to the solver's prior, and on the bundled model that prior
    ranked the passage that answers a single-hop question below noise (docs/methods/moi.md). A singleton
    shares its passage's cells with an ordering that opens with it. ``False`` is the paper's mixture as written."""
    sc_permutations: int = 30
    """Self-consistency baseline: random permutations answered and voted over (App. C: 30)."""
    ridge: float = 1e-3
    """Weight of the weak prior that picks one fit when Eq. 4 is not identifiable (our choice;
    see ``nodes.moi_solve.solve_position_bias``)."""
    seed: int = 0
    """Seed of the random permutations (sampled proposals and the baselines)."""
