"""MoI's pure math: permutation generators (exact) and the Eq. 4 solver on synthetic scores."""

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from scipy.stats import kendalltau

from causalrag.nodes.moi_solve import (
    cyclic_permutations,
    default_budget,
    prune,
    sampled_permutations,
    solve_position_bias,
    tree_permutations,
    utility_ranking,
)

# the two random designs of the sampled proposals, seeded: uniform permutations (§3.2.1) and the balanced prefix tree
DESIGNS = {
    "sampled": lambda n, budget, width, seed: prune(sampled_permutations(n, budget, seed=seed), width),
    "tree": lambda n, budget, width, seed: prune(tree_permutations(n, budget, seed, width=width), width),
}


def synthetic(perms, w, u, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    return [sum(w[j] * u[i] for j, i in enumerate(p)) + noise * rng.normal() for p in perms]


def test_cyclic_permutations_are_the_left_shifts_of_the_reference_order():
    assert cyclic_permutations(4) == [(0, 1, 2, 3), (1, 2, 3, 0), (2, 3, 0, 1), (3, 0, 1, 2)]
    # every passage sits at every position exactly once (App. B, criterion 1)
    for n in (3, 5, 10):
        perms = np.array(cyclic_permutations(n))
        assert all(sorted(col) == list(range(n)) for col in perms.T)


def test_prefix_pruning_keeps_the_first_k_positions():
    assert prune(cyclic_permutations(4), 2) == [(0, 1), (1, 2), (2, 3), (3, 0)]
    assert prune(cyclic_permutations(3), 0) == cyclic_permutations(3)
    assert prune(cyclic_permutations(3), 9) == cyclic_permutations(3)


def test_sampled_permutations_are_distinct_seeded_and_start_with_the_retriever_order():
    perms = sampled_permutations(6, 12, seed=3)
    assert len(perms) == len(set(perms)) == 12 and perms[0] == tuple(range(6))
    assert all(sorted(p) == list(range(6)) for p in perms)
    assert perms == sampled_permutations(6, 12, seed=3) and perms != sampled_permutations(6, 12, seed=4)
    assert sorted(sampled_permutations(3, 30)) == sorted(itertools.permutations(range(3)))
    assert len(sampled_permutations(3, 30)) == math.factorial(3)
    assert default_budget(5) == 10 and sampled_permutations(0, 5) == []


def test_tree_permutations_share_prefixes_and_put_every_passage_at_every_position_equally_often():
    perms = tree_permutations(5, 10, seed=0)
    assert len(perms) == len(set(perms)) == 10 and perms == sorted(perms) and perms[0] == tuple(range(5))
    assert all(sorted(p) == list(range(5)) for p in perms)
    # five groups of two: each passage opens exactly two prompts, which share that first passage
    assert Counter(p[0] for p in perms) == dict.fromkeys(range(5), 2)
    counts = np.zeros((5, 5), int)
    for p in perms:
        counts[list(p), np.arange(5)] += 1
    assert (counts == 2).all()
    assert perms == tree_permutations(5, 10, seed=0) and perms != tree_permutations(5, 10, seed=1)
    # deeper sharing: pairs that differ only in their last two passages
    deep = tree_permutations(5, 10, seed=0, shared=3)
    assert [p[:3] for p in deep[::2]] == [p[:3] for p in deep[1::2]] and len({p[:3] for p in deep}) == 5
    # pruned to 2 positions, the members of a group still differ (at their second passage)
    pruned = tree_permutations(5, 15, seed=0, shared=3, width=2)
    assert len(pruned) == len(set(pruned)) == 15 and all(len(p) == 2 for p in pruned)
    # a budget n does not divide: the first groups get the extra member, no ordering repeats
    assert len(set(tree_permutations(6, 13, seed=1))) == 13
    assert sorted(tree_permutations(3, 6)) == sorted(itertools.permutations(range(3))) and tree_permutations(0, 4) == []


@pytest.mark.parametrize("design", sorted(DESIGNS))
@pytest.mark.parametrize("n,width", [(5, 2), (5, 3), (10, 3)])
def test_solver_recovers_known_w_and_u_from_pruned_random_permutations(n, width, design):
    rng = np.random.default_rng(n + width)
    u = rng.normal(size=n)
    w = np.sort(rng.dirichlet(np.ones(width)))[::-1]
    perms = DESIGNS[design](n, 3 * n, width, 1)
    fit = solve_position_bias(perms, synthetic(perms, w, u), n)
    assert fit.identifiable and not fit.fallback
    assert sum(fit.weights) == pytest.approx(1.0, abs=1e-9) and min(fit.weights) >= 0
    np.testing.assert_allclose(fit.weights, w, atol=0.02)
    np.testing.assert_allclose(fit.utilities, u, atol=0.05)
    assert fit.residual < 0.02


@pytest.mark.parametrize("design", sorted(DESIGNS))
def test_solver_is_robust_to_noise_and_to_an_offset_on_every_score(design):
    n, width = 6, 3
    rng = np.random.default_rng(0)
    u, w = rng.normal(size=n) * 2, np.array([0.6, 0.3, 0.1])
    perms = DESIGNS[design](n, 40, width, 2)
    noisy = [s - 35.0 for s in synthetic(perms, w, u, noise=0.05)]  # log p(q) shifts every score alike
    fit = solve_position_bias(perms, noisy, n)
    np.testing.assert_allclose(fit.weights, w, atol=0.05)
    np.testing.assert_allclose(np.array(fit.utilities) + 35.0, u, atol=0.15)


@pytest.mark.parametrize("design", sorted(DESIGNS))
def test_full_length_permutations_recover_the_ranking_and_the_shape_of_the_bias(design):
    """All n passages in every prompt: Eq. 4 fixes (w − 1/n)(u − ū) only; the prior fixes sign and scale."""
    n = 6
    rng = np.random.default_rng(5)
    u = rng.normal(size=n)
    w = np.array([0.35, 0.25, 0.15, 0.1, 0.1, 0.05])
    perms = DESIGNS[design](n, default_budget(n), n, 0)
    fit = solve_position_bias(perms, synthetic(perms, w, u), n)
    assert not fit.identifiable and sum(fit.weights) == pytest.approx(1.0)
    assert utility_ranking(fit.utilities) == utility_ranking(list(u))
    assert np.corrcoef(np.array(fit.weights) - 1 / n, w - 1 / n)[0, 1] > 0.95
    assert fit.residual < 0.05 * np.std(synthetic(perms, w, u))


def test_cyclic_design_is_flagged_underdetermined_and_still_ranks_sensibly():
    n = 5
    u = np.array([2.0, -1.0, 0.5, -0.5, 1.0])
    perms = prune(cyclic_permutations(n), 2)
    fit = solve_position_bias(perms, synthetic(perms, [0.7, 0.3], u), n)
    assert not fit.identifiable and sum(fit.weights) == pytest.approx(1.0)
    assert fit.weights[0] > fit.weights[1]
    assert kendalltau(fit.utilities, u)[0] > 0.5


def test_one_position_reduces_to_pointwise_bayes_saliency():
    fit = solve_position_bias([(0,), (1,), (2,)], [1.5, -2.0, 0.25], 3)
    assert fit.weights == [1.0] and fit.utilities == pytest.approx([1.5, -2.0, 0.25])
    assert utility_ranking(fit.utilities) == [0, 2, 1]


def test_unobserved_passages_and_bad_input():
    perms = [(0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1)]
    scores = synthetic(perms, [0.7, 0.3], [2.0, 1.0, 0.0])
    fit = solve_position_bias(perms, scores, 4)
    assert not fit.identifiable  # passage 3 never appears: the prior leaves it at the mean score
    assert [i for i in utility_ranking(fit.utilities) if i != 3] == [0, 1, 2]
    assert fit.utilities[3] == pytest.approx(np.mean(scores), abs=1e-3)
    with pytest.raises(ValueError):
        solve_position_bias([(0, 1)], [1.0, 2.0], 2)
    assert utility_ranking([1.0, 3.0, 3.0]) == [1, 2, 0]
