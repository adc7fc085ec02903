"""MoI cost vs fidelity, measured side by side in one run on the same questions:
the full sampled mixture (|S| = 30, App. C's count), MoI's default (|S| = 2n, a balanced prefix tree whose
groups share their first passage), the same tree sharing 2 and 3 passages, |S| = 2n uniform random orders,
cyclic (n calls, §3.2.2), cyclic + prefix pruning (n short calls, §3.3.1) and single-pass Bayes saliency (Eq. 1).
Each proposal starts on an emptied cache, so its prompt tokens are the cells its own orderings cost.

For each proposal: LLM sequences scored, forward passes, prompt tokens, wall time (scoring +
solve), and how close its ranking comes to the full mixture's (Kendall τ, overlap@2 of the top 2).
Questions: the bundled HotpotQA dev questions, each with the top-n of its own 10 paragraphs.

Usage: ``CAUSALRAG_BACKEND=llamacpp python benchmarks/moi_cost.py [--questions 3] [--n 5] [--full 30] [--prefix 2]``
"""

from __future__ import annotations

import argparse
import statistics
import time

from scipy.stats import kendalltau

from causalrag.eval.datasets import load_dataset
from causalrag.nodes.moi import saliency
from causalrag.nodes.moi_solve import (
    cyclic_permutations,
    default_budget,
    prune,
    sampled_permutations,
    solve_position_bias,
    tree_permutations,
    utility_ranking,
)
from causalrag.tools.encoders import default_embeddings
from causalrag.tools.llm import default_llm
from causalrag.tools.store import Store
from causalrag.tools.usage import metered


def proposals(n: int, full: int, prefix: int) -> dict[str, list[tuple[int, ...]]]:
    return {
        f"sampled |S|={full}": sampled_permutations(n, full, seed=0),
        f"tree |S|=2n={default_budget(n)}": tree_permutations(n, default_budget(n), seed=0),
        "tree, 2 shared": tree_permutations(n, default_budget(n), seed=0, shared=2),
        "tree, 3 shared": tree_permutations(n, default_budget(n), seed=0, shared=3),
        f"sampled |S|=2n={default_budget(n)}": sampled_permutations(n, default_budget(n), seed=0),
        "cyclic": cyclic_permutations(n),
        f"cyclic+prefix {prefix}": prune(cyclic_permutations(n), prefix),
        "single-pass Bayes": [(i,) for i in range(n)],
    }


def positions(ranking: list[int]) -> list[int]:
    """Rank position of each passage (Kendall τ compares these, not the index lists)."""
    return [ranking.index(i) for i in range(len(ranking))]


def overlap(a: list[int], b: list[int], k: int) -> float:
    return len(set(a[:k]) & set(b[:k])) / k


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--full", type=int, default=30)
    parser.add_argument("--prefix", type=int, default=2)
    args = parser.parse_args()
    llm, embeddings = default_llm(), default_embeddings()
    llm.logprob(["warm"], [" up"])
    names = list(proposals(args.n, args.full, args.prefix))
    stats = {name: {k: [] for k in ("calls", "passes", "tokens", "s", "tau", "top2", "gold@1")} for name in names}
    weights = []
    for ex in load_dataset("hotpotqa")[: args.questions]:
        docs = Store.in_memory(ex.passages, embeddings=embeddings).retrieve(ex.question, args.n)
        rankings = {}
        for name, perms in proposals(len(docs), args.full, args.prefix).items():
            if hasattr(llm, "clear_cache"):  # cold: the cells counted are this proposal's own
                llm.clear_cache()
            start = time.perf_counter()
            with metered() as usage:
                scores, _ = saliency(llm, ex.question, docs, perms)
            fit = solve_position_bias(perms, scores, len(docs))
            seconds = time.perf_counter() - start
            rankings[name] = utility_ranking(fit.utilities)
            s = stats[name]
            s["calls"].append(usage.calls), s["passes"].append(usage.forward_passes)
            s["tokens"].append(usage.prompt_tokens), s["s"].append(seconds)
            s["gold@1"].append(float(docs[rankings[name][0]].metadata["title"] in ex.gold_titles))
            if name == names[0]:
                weights.append(fit.weights)
        reference = rankings[names[0]]
        for name in names:
            stats[name]["tau"].append(
                kendalltau(positions(rankings[name]), positions(reference)).statistic if name != names[0] else 1.0
            )
            stats[name]["top2"].append(overlap(rankings[name], reference, 2))
        print(ex.id, {n: rankings[n] for n in names}, flush=True)

    def mean(name, key):
        return statistics.mean(stats[name][key])

    full_s, full_tokens = mean(names[0], "s"), mean(names[0], "tokens")
    print(
        f"\n{args.questions} HotpotQA questions, n={args.n} passages each "
        "(per-question means; ratios vs the full mixture)"
    )
    print(
        f"{'proposal':<22}{'seqs':>6}{'passes':>8}{'tokens':>8}{'seconds':>9}{'time ×':>8}{'tokens ×':>9}"
        f"{'τ vs full':>10}{'top2 ∩':>8}{'gold@1':>8}"
    )
    for name in names:
        print(
            f"{name:<22}{mean(name, 'calls'):6.0f}{mean(name, 'passes'):8.0f}{mean(name, 'tokens'):8.0f}"
            f"{mean(name, 's'):9.1f}"
            f"{mean(name, 's') / full_s:8.3f}{mean(name, 'tokens') / full_tokens:9.3f}{mean(name, 'tau'):10.2f}"
            f"{mean(name, 'top2'):8.2f}{mean(name, 'gold@1'):8.2f}"
        )
    avg_w = [round(statistics.mean(w[j] for w in weights), 3) for j in range(len(weights[0]))]
    print(f"mean position weights w of the full mixture (position 0 = first passage of the prompt): {avg_w}")


if __name__ == "__main__":
    main()
