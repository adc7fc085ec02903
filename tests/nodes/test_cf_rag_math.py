"""CF-RAG numerics on hand-made numbers: dedup, spectral clusters, stratified sampling, φ and Ψ, agreement."""

import numpy as np
import pytest

from causalrag.nodes import cf_rag_math as cm
from causalrag.text import mentions, same_answer


def unit(*rows):
    v = np.array(rows, dtype=float)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_dedup_drops_rows_at_or_above_the_threshold_and_keeps_the_first_copy():
    base = np.array([1.0, 0.0, 0.0])
    near = np.array([0.96, np.sqrt(1 - 0.96**2), 0.0])  # cos 0.96 with base
    far = np.array([0.94, 0.0, np.sqrt(1 - 0.94**2)])  # cos 0.94 with base, 0.90 with near
    vectors = np.stack([base, near, far])
    assert cm.dedup_keep(vectors, 0.95) == [0, 2]
    assert cm.dedup_keep(vectors, 0.97) == [0, 1, 2]
    assert cm.dedup_keep(np.zeros((0, 2)), 0.95) == []


def test_quality_needs_enough_alphabetic_words():
    assert cm.quality("one two three", min_words=5) == 0.0
    assert cm.quality("Paris is the capital of France", min_words=5) == 1.0
    assert cm.quality("12 34 56 78 90 ab", min_words=5) == pytest.approx(1 / 6)


def two_blobs(rng, n=6):
    a = rng.normal([5, 0, 0], 0.1, size=(n, 3))
    b = rng.normal([0, 5, 0], 0.1, size=(n, 3))
    return unit(*np.vstack([a, b]))


def test_spectral_clusters_separate_two_topics_and_cap_k():
    vectors = two_blobs(np.random.default_rng(0))
    labels = cm.spectral_clusters(vectors, 2, seed=0)
    assert len(set(labels[:6])) == 1 and len(set(labels[6:])) == 1 and labels[0] != labels[6]
    assert len(set(cm.spectral_clusters(vectors[:3], 4, seed=0))) <= 3
    assert cm.spectral_clusters(vectors[:1], 4).tolist() == [0]


def test_stratified_samples_cover_every_cluster_and_are_seeded():
    labels = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2])
    relevance = np.linspace(0.1, 0.9, 10)
    samples = cm.stratified_samples(labels, relevance, paths=3, rho=0.5, tau=1.0, seed=7)
    assert len(samples) == 3
    for sample in samples:
        assert len(set(sample)) == len(sample)  # without replacement
        assert {int(labels[i]) for i in sample} == {0, 1, 2}  # every cluster is represented (n_jm ≥ 1)
        for m in (0, 1, 2):
            assert sum(labels[i] == m for i in sample) <= (labels == m).sum()
    assert samples == cm.stratified_samples(labels, relevance, paths=3, rho=0.5, tau=1.0, seed=7)
    others = [cm.stratified_samples(labels, relevance, paths=3, rho=0.5, tau=1.0, seed=s) for s in range(1, 6)]
    assert any(o != samples for o in others)


def test_gumbel_softmax_weights_are_a_distribution_and_follow_the_bias_when_cold():
    rng = np.random.default_rng(0)
    w = cm.gumbel_softmax(np.array([0.0, 0.0, 0.0]), 1.0, rng)
    assert w.sum() == pytest.approx(1.0) and (w > 0).all()
    cold = cm.gumbel_softmax(np.array([0.0, 50.0]), 0.5, rng)
    assert cold[1] > 0.99


def test_psi_reproduces_the_papers_case_study():
    # App. D.1: φ_coh 0.85, φ_causal 0.72 → Ψ 0.798; φ_coh 0.91, φ_causal −0.15 → Ψ 0.486 (λ = 0.4)
    assert cm.psi(0.85, 0.72, 0.4) == pytest.approx(0.798)
    assert cm.psi(0.91, -0.15, 0.4) == pytest.approx(0.486)
    assert cm.psi_extended(0.85, 0.72, 1.0, 0.0, lam=0.4, w_confidence=0.15, w_specificity=0.10) == pytest.approx(
        0.75 * 0.798 + 0.15
    )


def test_phi_causal_is_original_minus_best_counterfactual_relevance():
    rel_q = np.array([0.9, 0.6])
    rel_cf = np.array([[0.2, 0.4], [0.7, 0.1]])
    assert cm.phi_causal(rel_q, rel_cf) == pytest.approx(((0.9 - 0.4) + (0.6 - 0.7)) / 2)
    # volume invariance (Lemma 2): repeating the evidence changes nothing
    assert cm.phi_causal(np.tile(rel_q, 3), np.tile(rel_cf, (3, 1))) == pytest.approx(cm.phi_causal(rel_q, rel_cf))
    assert cm.phi_causal(rel_q, np.zeros((2, 0))) == 0.0


def test_phi_coherence_mixes_similarity_and_relevance_times_mention():
    value = cm.phi_coherence(np.array([0.8, 0.4]), np.array([0.9, 0.5]), np.array([1.0, 0.0]), 0.5, 0.5)
    assert value == pytest.approx(((0.5 * 0.8 + 0.5 * 0.9) + (0.5 * 0.4)) / 2)


def test_specificity_mentions_and_agreement():
    assert cm.specificity("Heath Ledger") == pytest.approx(0.0)  # two equally frequent keywords: maximal entropy
    assert cm.specificity("Ledger Ledger Ledger Joker") > 0.0
    assert cm.specificity("the") == 1.0
    assert mentions("Heath Ledger", "Heath Ledger played the Joker.") and not mentions("Ledger", "Ledgerwood")
    assert same_answer("Ledger", "Heath Ledger") and not same_answer("", "Heath Ledger")
    sim = cm.answer_similarity(["Heath Ledger", "Ledger", "Jack Nicholson"], np.eye(3) * 0.5)
    assert cm.agreement(sim, 0.85).tolist() == pytest.approx([2 / 3, 2 / 3, 1 / 3])


def test_info_score_terms():
    assert cm.answer_divergence("Heath Ledger", "Heath Ledger") == 0.0
    assert cm.answer_divergence("Heath Ledger", "Jack Nicholson") == 1.0
    assert cm.domain_relevance(
        "Who played the Joker in The Dark Knight?", "Who directed The Dark Knight?"
    ) == pytest.approx(2 / 4)
    assert cm.info_score(0.8, 1.0, 0.5, 1 / 3, 1 / 3, 1 / 3) == pytest.approx((0.2 + 1.0 + 0.5) / 3)
