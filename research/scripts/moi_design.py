"""MoI's ordering designs compared on synthetic scores (no model): what sharing prefixes costs the fit.

For n passages and |S| orderings (default n = 5, |S| = 2n, full length, as MoI runs by default), each design
over seeds 0..4: the passage reads its prompts cost once shared prefixes are decoded once (the nodes of the
prefix tree of its orderings; |S|·width without sharing), the rank and condition number of Eq. 4's Jacobian
(``moi_solve.design_jacobian``; full rank is 2n − 1 for full-length orderings, width + n when pruned), and
how well the solve recovers known utilities from scores with Gaussian noise: Kendall τ of u to the truth and
how often the best passage comes first. w is the front-heavy prior 1/(j+1) (the paper's Fig. 6), u ~ N(0, 1).

Usage: ``python benchmarks/moi_design.py [--n 5] [--budget 0] [--width 0] [--noise 0.03,0.1,0.3] [--trials 60]``
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from scipy.stats import kendalltau

from causalrag.nodes.moi_solve import (
    default_budget,
    design_jacobian,
    position_prior,
    prune,
    sampled_permutations,
    solve_position_bias,
    tree_permutations,
    utility_ranking,
)


def tree_nodes(perms: list[tuple[int, ...]]) -> int:
    """Passage reads once every shared prefix is decoded once: the prefixes of the orderings, counted once."""
    return len({p[:d] for p in perms for d in range(1, len(p) + 1)})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--budget", type=int, default=0, help="|S|; 0 = 2n")
    parser.add_argument("--width", type=int, default=0, help="pruning length; 0 = n")
    parser.add_argument("--noise", default="0.03,0.1,0.3")
    parser.add_argument("--trials", type=int, default=60)
    args = parser.parse_args()
    n, budget = args.n, args.budget or default_budget(args.n)
    width = args.width or n
    designs = {"sampled (uniform)": lambda seed: prune(sampled_permutations(n, budget, seed), width)}
    for shared in (1, 2, 3):
        designs[f"tree, {shared} shared"] = lambda seed, k=shared: tree_permutations(
            n, budget, seed, shared=k, width=width if width < n else 0
        )
    w = position_prior(width)
    print(f"n={n}, |S|={budget}, width={width}; passage reads without sharing: {budget * width}; seeds 0-4")
    print(
        f"{'design':<20}{'reads':>7}{'rank':>6}{'cond':>8}"
        + "".join(f"{f'τ@{x}':>8}{f'top1@{x}':>10}" for x in args.noise.split(","))
    )
    for name, design in designs.items():
        reads, ranks, conds = [], [], []
        recovery: dict[str, tuple[list[float], list[float]]] = {x: ([], []) for x in args.noise.split(",")}
        for seed in range(5):
            perms = design(seed)
            reads.append(tree_nodes(perms))
            rng = np.random.default_rng(100 + seed)
            for _ in range(args.trials):
                u = rng.normal(size=n)
                values = np.linalg.svd(design_jacobian(perms, w, u), compute_uv=False)
                rank = int(np.sum(values > values[0] * 1e-10))
                ranks.append(rank)
                conds.append(values[0] / values[rank - 1])
                clean = [sum(w[j] * u[i] for j, i in enumerate(p)) for p in perms]
                for x, (taus, firsts) in recovery.items():
                    scores = np.array(clean) + float(x) * rng.normal(size=len(clean))
                    fit = solve_position_bias(perms, scores, n)
                    taus.append(kendalltau(fit.utilities, u).statistic)
                    firsts.append(float(utility_ranking(fit.utilities)[0] == int(np.argmax(u))))
        row = f"{name:<20}{statistics.mean(reads):7.1f}{min(ranks):6d}{statistics.median(conds):8.1f}"
        print(row + "".join(f"{statistics.mean(t):8.3f}{statistics.mean(f):10.2f}" for t, f in recovery.values()))


if __name__ == "__main__":
    main()
