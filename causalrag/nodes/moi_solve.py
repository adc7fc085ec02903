"""MoI's math as pure functions: permutation proposals, prefix pruning and the debiasing solve.

Proposals are §3.2, pruning §3.3.1 and the solve Eq. 4 (§3.1). No LLM, no graph: the nodes in
``nodes/moi.py`` call these.

A permutation is a tuple of passage indices into the retriever's ranking (0 = top passage);
position 0 is the first passage of the scoring prompt.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

Permutation = tuple[int, ...]


# --------------------------------------------------------------------------- proposals (§3.2)
def cyclic_permutations(n: int) -> list[Permutation]:
    """The n left shifts of the reference (retriever) order, shift i placing passage i first (App. B, Eq. 7-9)."""
    return [tuple((i + j) % n for j in range(n)) for i in range(n)]


def sampled_permutations(n: int, budget: int, seed: int = 0) -> list[Permutation]:
    """``budget`` distinct random orderings of n passages (§3.2.1); all n! of them when n! ≤ budget.

    The retriever order is always included first, so the mixture observes the order a plain
    RAG pipeline would use.
    """
    if n <= 0 or budget <= 0:
        return []
    if math.factorial(n) <= budget:
        return list(itertools.permutations(range(n)))
    rng = np.random.default_rng(seed)
    chosen: dict[Permutation, None] = {tuple(range(n)): None}
    while len(chosen) < budget:
        chosen.setdefault(tuple(int(i) for i in rng.permutation(n)), None)
    return list(chosen)


def tree_permutations(n: int, budget: int, seed: int = 0, *, shared: int = 1, width: int = 0) -> list[Permutation]:
    """``budget`` distinct orderings of n passages laid out as a prefix tree (§3.2.1's sample, shaped for a KV cache).

    The design: a seeded Latin square of n base orderings π_g(i) = c⁻¹((g + c(i)) mod n), c a seeded
    permutation (π_0 is the retriever order), one group per base ordering. The members of group g keep π_g's
    first ``shared`` passages and take the rotations of its remaining passages (the tail), so a group's
    prompts share their first ``shared`` passages, and scored together they are decoded once. The list comes
    sorted, so consecutive orderings share their longest prefix (the order a prefix cache serves best).

    Why w and u stay identifiable:

    * balance — every passage sits at every position equally often (exactly ``budget / n`` times when n
      divides the budget): each column of a Latin square holds every passage once, and rotating the tail of
      every group by the same j permutes whole columns. So no position is ever observed with a single
      passage, and no passage only at strong (or weak) positions;
    * rank — the Jacobian of Eq. 4 has full rank: ``width + n`` for pruned orderings, ``2n − 1`` for full
      ones (one direction, the scale of (w − 1/n)(u − ū), is never identified, whatever the design: see
      :func:`solve_position_bias`). A draw of c that misses it is redrawn (deterministically, from the seed);
    * conditioning — a shared prefix repeats the same passages at the strongest positions (position 0,
      Fig. 6), so each further shared passage removes distinct observations of them. Sharing one passage
      keeps the Jacobian better conditioned than uniform sampling's and u at least as well recovered under
      noise; sharing 2 or 3 worsens both (measured by ``benchmarks/moi_design.py``: docs/performance.md,
      "Shared prefixes: MoI"). Hence ``shared=1`` by default, which decodes each group's first
      passage once (n passage reads fewer in 2n, 10 % of those scored), deterministically.

    Not MoI's default proposal: uniform samples share about as many first passages by chance, and real
    scores bend away from Eq. 4 (neighbouring passages interact), which the Latin square's fixed neighbours
    may turn into a bias (docs/performance.md, "Shared prefixes: MoI").

    ``width`` (the pruning length, 0 = n) keeps the pruned orderings distinct: at most ``width − 1`` passages
    are shared. All n! orderings (sorted) when n! ≤ budget.
    """
    if n <= 0 or budget <= 0:
        return []
    if math.factorial(n) <= budget:
        return list(itertools.permutations(range(n)))
    width = min(width or n, n)
    per_group = -(-budget // n)
    shared = max(1, min(shared, width - 1, n - 2))  # a group is its first passage's
    while shared > 1 and math.perm(n - shared, width - shared) < per_group:  # too few distinct members
        shared -= 1
    sizes = [min(budget // n + (g < budget % n), math.perm(n - shared, width - shared)) for g in range(n)]
    rng = np.random.default_rng(seed)
    for _ in range(20):
        c = rng.permutation(n)
        order = np.argsort(c)
        perms: list[Permutation] = []
        for g, size in enumerate(sizes):
            base = [int(order[(g + c[i]) % n]) for i in range(n)]
            head, tail = base[:shared], base[shared:]
            group = dict.fromkeys(tuple(head + tail[j:] + tail[:j])[:width] for j in range(min(size, len(tail))))
            while len(group) < size:  # more members than rotations: seeded shuffles of the tail
                group.setdefault(tuple(head + [tail[i] for i in rng.permutation(len(tail))])[:width], None)
            perms.extend(group)
        perms.sort()
        if _design_rank(perms, n, width) == width + n - (width == n):
            break
    return perms


def prune(permutations: Sequence[Permutation], length: int) -> list[Permutation]:
    """Keep the first ``length`` positions of each permutation (Eq. 5-6); ``length`` ≤ 0 keeps all."""
    if length <= 0:
        return [tuple(p) for p in permutations]
    return [tuple(p[:length]) for p in permutations]


def with_singletons(permutations: Sequence[Permutation], n: int) -> list[Permutation]:
    """The orderings plus each of the n passages alone when the orderings leave w and u unidentified.

    The passages alone are Eq. 1's pointwise interventions (those not already there); an identifiable design
    is returned as it is.

    Orderings of all n passages (or cyclic shifts) leave the sign and scale of u to the solver's prior
    (:func:`solve_position_bias`); a passage scored alone observes its utility at the first position
    directly, so the data decide them (our choice; the paper's mixture has no singletons).
    """
    perms = [tuple(p) for p in permutations]
    if not perms or identifiable(perms, n):
        return perms
    return perms + [(i,) for i in range(n) if (i,) not in perms]


def default_budget(n: int) -> int:
    """|S| = 2n: the paper's minimum, enough equations for the n utilities and n position weights (§3.2.1)."""
    return 2 * n


# --------------------------------------------------------------------------- solve (§3.1, Eq. 4)
@dataclass
class Solution:
    """The fit of Eq. 4: position weights w, passage utilities u, and how well and how surely they fit."""

    weights: list[float]
    """w_j, one per position (Σ w = 1, w ≥ 0): the model's position bias."""
    utilities: list[float]
    """u_i, one per passage, on the scale of the observed scores."""
    residual: float
    """Root-mean-square error of Σ_j w_j u_π(j) against the observed scores."""
    identifiable: bool
    """False when the design has fewer independent equations than unknowns (e.g. cyclic proposals):
    then the weak prior picks one of many exact fits (see :func:`solve_position_bias`)."""
    fallback: bool = False
    """True when SLSQP failed and the warm start (prior w, mean scores as u) was returned instead."""


def position_prior(width: int) -> np.ndarray:
    """w₀ ∝ 1/(j+1): front-heavy position weights, the shape of the paper's Fig. 6."""
    prior = 1.0 / np.arange(1, width + 1)
    weights: np.ndarray = prior / prior.sum()
    return weights


def design_jacobian(perms: Sequence[Permutation], w: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The Jacobian of Eq. 4's scores by (w, u) at the point (w, u), with the constraint Σ w = 1 as a last row.

    One row per ordering. Its rank counts the identifiable directions, its condition number how much noise on
    the scores the fit amplifies.
    """
    width, n = len(w), len(u)
    rows = []
    for p in perms:
        dw = np.array([u[i] for i in p] + [0.0] * (width - len(p)))
        du = np.zeros(n)
        for j, i in enumerate(p):
            du[i] += w[j]
        rows.append(np.concatenate([dw, du]))
    rows.append(np.concatenate([np.ones(width), np.zeros(n)]))
    return np.array(rows)


def _design_rank(perms: Sequence[Permutation], n: int, width: int) -> int:
    """Rank of the Jacobian of Eq. 4 at a generic point: the number of identifiable directions."""
    rng = np.random.default_rng(1)
    return int(np.linalg.matrix_rank(design_jacobian(perms, rng.dirichlet(np.ones(width)), rng.normal(size=n))))


def identifiable(perms: Sequence[Permutation], n: int) -> bool:
    """Whether Eq. 4 pins down w and u from these orderings: a full-rank design that shows every passage."""
    width = max(len(p) for p in perms)
    return _design_rank(perms, n, width) == width + n and {i for p in perms for i in p} == set(range(n))


def solve_position_bias(
    permutations: Sequence[Permutation], scores: Sequence[float], n: int, *, ridge: float = 1e-3
) -> Solution:
    """Fit w (positions) and u (passages) so that score(π) ≈ Σ_j w_j · u_π(j), with Σ w = 1 and w ≥ 0.

    Solver: SLSQP (scipy.optimize) on the paper's L2 loss over standardized scores, plus a weak
    ridge prior ``ridge``·(‖w − w₀‖² + ‖u‖²/n). SLSQP takes the equality constraint and the bounds
    natively and, with at most 2n variables, one solve costs milliseconds; an alternating solve
    would need a simplex projection for w and crawls along the bilinear loss's flat valleys.

    Why a prior (our choice; the paper is silent): when every permutation holds all n passages,
    Eq. 4 only identifies the product (w − 1/K)(u − ū): the pair (1/K + (w − 1/K)/a, ū + a(u − ū))
    fits equally well for every a ≠ 0, including the mirror a < 0 that reverses the ranking.
    Cyclic proposals are under-determined too (n equations, n + K − 1 unknowns). The prior picks
    one fit: w₀ ∝ 1/(j+1) encodes the position bias the paper measures (Fig. 6: the first
    position, the first passage of the prompt, weighs most), which fixes the sign; the ridge fixes the scale.
    With pruned proposals (passages absent from a prompt add nothing) the fit is identifiable and the prior
    is negligible; so it is with full orderings plus each passage alone (:func:`with_singletons`), which
    fixes sign and scale from the data. Scores are standardized first: when every prompt holds the same
    number of passages, Σ w = 1 makes an affine change of the scores the same affine change of u, which
    we undo; prompts of different lengths only allow a change of scale (a prompt's score is already relative
    to no passage at all, log p(q)). An identifiable fit is started from a front-heavy, a back-heavy and a
    flat w, keeping the lowest loss: the bilinear loss has a mirrored local minimum, and a model whose
    later passages weigh most would otherwise be fitted upside down from the prior's start.
    """
    perms = [tuple(p) for p in permutations]
    s = np.asarray(scores, dtype=float)
    if not perms or len(perms) != len(s) or n <= 0:
        raise ValueError("solve_position_bias needs one score per permutation and n > 0 passages.")
    width = max(len(p) for p in perms)
    center = float(s.mean()) if len({len(p) for p in perms}) == 1 else 0.0
    spread = float(s.std()) or 1.0
    z = (s - center) / spread
    # passage-by-position counts let us evaluate the model and its gradient with matrix products
    onehot = np.zeros((len(perms), width, n))
    for r, p in enumerate(perms):
        onehot[r, np.arange(len(p)), list(p)] = 1.0
    flat = onehot.reshape(-1, n)  # (rows·positions, passages)
    seen = flat.sum(axis=0)
    u0 = np.where(seen > 0, (onehot.sum(axis=1).T @ z) / np.maximum(seen, 1), 0.0)
    w0 = position_prior(width)
    pinned = identifiable(perms, n)

    def loss(x: np.ndarray) -> tuple[float, np.ndarray]:
        w, u = x[:width], x[width:]
        at = onehot @ u  # (rows, width): utility of the passage at each position
        err = at @ w - z
        m = len(z)
        grad_w = 2 * at.T @ err / m + 2 * ridge * (w - w0)
        grad_u = 2 * np.outer(err, w).ravel() @ flat / m + 2 * ridge * u / n
        value = float(err @ err / m + ridge * (np.sum((w - w0) ** 2) + u @ u / n))
        return value, np.concatenate([grad_w, grad_u])

    def excess_weight(x: np.ndarray) -> float:  # Σ w − 1, held at zero
        excess: float = x[:width].sum() - 1.0
        return excess

    def excess_weight_grad(x: np.ndarray) -> np.ndarray:
        grad: np.ndarray = np.r_[np.ones(width), np.zeros(n)]
        return grad

    if width == 1:  # one position: Eq. 4 reduces to u = the mean score (pointwise Bayes saliency)
        result_x, ok = np.concatenate([[1.0], u0]), True
    else:
        starts = [w0, w0[::-1], np.full(width, 1.0 / width)] if pinned else [w0]
        results = [
            minimize(
                loss,
                np.concatenate([start, u0]),
                jac=True,
                method="SLSQP",
                bounds=[(0.0, 1.0)] * width + [(None, None)] * n,
                constraints=[{"type": "eq", "fun": excess_weight, "jac": excess_weight_grad}],
                options={"maxiter": 500, "ftol": 1e-10},
            )
            for start in starts
        ]
        solved = [r for r in results if r.success and np.all(np.isfinite(r.x))]
        ok = bool(solved)
        result_x = min(solved, key=lambda r: r.fun).x if ok else np.concatenate([w0, u0])
    w = np.clip(result_x[:width], 0.0, None)
    w = w / w.sum()
    u = result_x[width:]
    fitted = (onehot @ u) @ w
    rms = float(np.sqrt(np.mean((fitted - z) ** 2))) * spread
    return Solution(
        weights=[float(v) for v in w],
        utilities=[float(center + spread * v) for v in u],
        residual=rms,
        identifiable=pinned,
        fallback=not ok,
    )


def utility_ranking(utilities: Sequence[float]) -> list[int]:
    """Passage indices by descending utility; ties keep the retriever's order."""
    return sorted(range(len(utilities)), key=lambda i: (-utilities[i], i))
