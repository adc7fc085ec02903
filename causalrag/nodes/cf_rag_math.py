"""Pure numerics of CF-RAG (no model calls).

Dedup, spectral clustering, Gumbel-softmax stratified sampling, the arbitration scores φ_coh, φ_causal,
specificity and Ψ, and answer agreement.

Every function takes plain arrays so the paper's equations can be checked on hand-made numbers.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from causalrag.text import normalize_answer, same_answer

_STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or is are was were be been who what which when where "
    "how why whom whose did does do this that these those it its as into than then".split()
)


# --------------------------------------------------------------------------- Eq. 4-5
def dedup_keep(vectors: np.ndarray, theta: float) -> list[int]:
    """Indices kept by greedy near-duplicate removal: a row goes when cos ≥ ``theta`` with an earlier kept row.

    Eq. 4 read literally drops *both* members of a duplicate pair; we keep the first (best-ranked)
    copy, which is what deduplication is for.
    """
    kept: list[int] = []
    for i in range(len(vectors)):
        if not kept or float(np.max(vectors[kept] @ vectors[i])) < theta:
            kept.append(i)
    return kept


def quality(text: str, min_words: int) -> float:
    """Q(e): share of alphabetic words (0 for passages shorter than ``min_words``).

    The paper's Q(e) ("coherence, informativeness, factual reliability") is unspecified; this
    cheap informativeness proxy removes empty, tabular or garbled passages.
    """
    words = text.split()
    if len(words) < min_words:
        return 0.0
    return sum(any(c.isalpha() for c in w) for w in words) / len(words)


# --------------------------------------------------------------------------- §4.2.1 clustering
def spectral_clusters(vectors: np.ndarray, k: int, *, seed: int = 0, sigma: float | None = None) -> np.ndarray:
    """Cluster labels by normalized spectral clustering (Ng, Jordan & Weiss) as §4.2.1 describes.

    RBF affinity W_ij = exp(−‖e_i − e_j‖² / 2σ²) (σ = median pairwise distance unless given),
    L = I − D^{-1/2} W D^{-1/2}, the eigenvectors of the k smallest eigenvalues, rows normalized,
    then k-means. ``k`` is capped at the number of rows.
    """
    n = len(vectors)
    k = max(1, min(k, n))
    if n <= 1 or k == 1:
        return np.zeros(n, dtype=int)
    from sklearn.cluster import KMeans

    sq = np.sum((vectors[:, None, :] - vectors[None, :, :]) ** 2, axis=-1)
    if sigma is None:
        off = np.sqrt(sq[np.triu_indices(n, 1)])
        sigma = float(np.median(off)) or 1.0
    w = np.exp(-sq / (2 * sigma**2))
    d = 1.0 / np.sqrt(w.sum(axis=1))
    laplacian = np.eye(n) - d[:, None] * w * d[None, :]
    _, eigvecs = np.linalg.eigh(laplacian)  # ascending eigenvalues
    v = eigvecs[:, :k]
    v = v / np.clip(np.linalg.norm(v, axis=1, keepdims=True), 1e-12, None)
    labels: np.ndarray = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(v)
    return labels


def gumbel_softmax(bias: np.ndarray, tau: float, rng: np.random.Generator) -> np.ndarray:
    """w_m = softmax((g_m + μ_m) / τ) with Gumbel noise g = −log(−log U) (Eq. 7).

    Eq. 7 prints log(Uniform(0, 1)); the Gumbel-softmax it names uses −log(−log U), which we use.
    """
    u = rng.uniform(1e-12, 1.0, size=len(bias))
    z = (-np.log(-np.log(u)) + bias) / max(tau, 1e-6)
    z = np.exp(z - z.max())
    weights: np.ndarray = z / z.sum()
    return weights


def stratified_samples(
    labels: np.ndarray,
    relevance: np.ndarray,
    *,
    paths: int,
    rho: float,
    tau: float,
    seed: int,
) -> list[list[int]]:
    """One evidence subset per reasoning path, drawing from every cluster (Eq. 6-7).

    n_jm = max(1, ⌊|C_m| · ρ · K · w_jm⌋), capped at |C_m|. The softmax weights sum to 1 over the
    K clusters, so we rescale them by K (mean 1) to keep ρ the expected sampling ratio Table 4
    names. μ_m (the cluster bias) is the cluster's mean ``relevance`` to the original query;
    within a cluster, passages are drawn without replacement with p ∝ exp(relevance / τ).
    Returns pool indices per path, in pool order. Deterministic for a given ``seed``.
    """
    rng = np.random.default_rng(seed)
    ids = sorted(set(labels.tolist()))
    members = [np.flatnonzero(labels == m) for m in ids]
    bias = np.array([relevance[idx].mean() for idx in members])
    samples = []
    for _ in range(paths):
        weights = gumbel_softmax(bias, tau, rng) * len(ids)
        chosen: list[int] = []
        for idx, w in zip(members, weights, strict=True):
            size = min(len(idx), max(1, math.floor(len(idx) * rho * w)))
            p = np.exp((relevance[idx] - relevance[idx].max()) / max(tau, 1e-6))
            chosen += rng.choice(idx, size=size, replace=False, p=p / p.sum()).tolist()
        samples.append(sorted(chosen))
    return samples


# --------------------------------------------------------------------------- §4.2.2 arbitration
def phi_causal(rel_original: np.ndarray, rel_counterfactual: np.ndarray) -> float:
    """Eq. 11: mean over the evidence of s(q, e) − max_{q'} s(q', e); 0 without counterfactuals or evidence.

    ``rel_original`` has shape (n,), ``rel_counterfactual`` shape (n, N).
    """
    if rel_original.size == 0 or rel_counterfactual.size == 0:
        return 0.0
    return float(np.mean(rel_original - rel_counterfactual.max(axis=1)))


def phi_coherence(
    answer_sim: np.ndarray, relevance: np.ndarray, mention: np.ndarray, lambda1: float, lambda2: float
) -> float:
    """Eq. 9-10: mean over the evidence of λ₁·sim(Enc(a), Enc(e)) + λ₂·s(q, e)·Mention(a, e)."""
    if answer_sim.size == 0:
        return 0.0
    return float(np.mean(lambda1 * answer_sim + lambda2 * relevance * mention))


def psi(coherence: float, causal: float, lam: float) -> float:
    """Algorithm 1, line 12: Ψ = (1 − λ)·φ_coh + λ·φ_causal."""
    return (1 - lam) * coherence + lam * causal


def psi_extended(coherence: float, causal: float, confidence: float, specificity: float, *, lam: float,
                 w_confidence: float, w_specificity: float) -> float:
    """Ψ = Σ w_k φ_k over the four criteria (§4.2.2): w₃, w₄ as given, the rest split (1 − λ, λ)."""
    rest = 1 - w_confidence - w_specificity
    return rest * psi(coherence, causal, lam) + w_confidence * confidence + w_specificity * specificity


def keywords(text: str) -> list[str]:
    """The text's normalized words without stopwords (its domain terms)."""
    return [w for w in normalize_answer(text).split() if w not in _STOPWORDS]


def specificity(text: str) -> float:
    """φ₄ = 1 − Entropy(KeywordDist) / log|Vocabulary| over the hypothesis' keywords (1 for ≤ 1 distinct word)."""
    counts = Counter(keywords(text))
    if len(counts) <= 1:
        return 1.0
    total = sum(counts.values())
    entropy = -sum(c / total * math.log(c / total) for c in counts.values())
    return 1.0 - entropy / math.log(len(counts))


def answer_similarity(answers: Sequence[str], cosine: np.ndarray) -> np.ndarray:
    """sim(a_i, a_j): 1 where the strings agree, else the embedding cosine.

    The 270M model's yes/no judgement of "same answer?" is uninformative (models.md), so agreement is string +
    embedding.
    """
    sim = np.array(cosine, dtype=float, copy=True)
    for i, a in enumerate(answers):
        for j, b in enumerate(answers):
            if same_answer(a, b):
                sim[i, j] = 1.0
    return sim


def agreement(sim: np.ndarray, theta: float) -> np.ndarray:
    """Agreement(a_j) = |{i : sim(a_i, a_j) > θ_agree}| / P for every j (§4.2.3)."""
    if sim.size == 0:
        return np.zeros(0)
    shares: np.ndarray = (sim > theta).sum(axis=0) / sim.shape[0]
    return shares


def answer_divergence(a: str, b: str) -> float:
    """Div_ans: 1 − IoU of the answers' normalized tokens (App. E.3's answer distance)."""
    x, y = set(normalize_answer(a).split()), set(normalize_answer(b).split())
    return 1.0 - (len(x & y) / len(x | y) if x | y else 1.0)


def domain_relevance(original: str, rewrite: str) -> float:
    """Rel_dom: share of the original question's keywords (its domain terms) kept by the rewrite."""
    words = set(keywords(original))
    return len(words & set(keywords(rewrite))) / len(words) if words else 0.0


def info_score(similarity: float, ans_div: float, dom_rel: float, alpha: float, beta: float, gamma: float) -> float:
    """Eq. 3: Info = α·(1 − sim_sem) + β·Div_ans + γ·Rel_dom."""
    return alpha * (1 - similarity) + beta * ans_div + gamma * dom_rel

