"""MoI answer quality on the bundled HotpotQA questions (distractor setting), side by side in one run:
``standard_rag`` (retriever order) vs MoI's ``random`` baseline vs ``moi`` (one or more configs).

Each question retrieves from its own 10 paragraphs (``Store.in_memory(ex.passages)``); every method
answers from the top-k. Caveat: the default model is a 270M base model; 20 questions give a
±10-point EM noise band, so read differences as indicative, not significant.

Usage: ``python benchmarks/moi_quality.py [--limit 20] [--candidates 5] [--k 5]
[--configs moi,moi_cheap,random,standard_rag]``
"""

from __future__ import annotations

import argparse
import statistics
import time

from causalrag.eval.datasets import load_dataset
from causalrag.eval.metrics import exact_match, f1_score
from causalrag.graphs.registry import build_graph
from causalrag.tools.encoders import default_embeddings
from causalrag.tools.llm import default_llm
from causalrag.tools.store import Store

CONFIGS = {  # the paper's Table 1 configurations
    "standard_rag": ("standard_rag", {}),
    "random": ("moi", {"variant": "random"}),
    "bayes_saliency": ("moi", {"variant": "bayes_saliency"}),
    "moi_cheap": ("moi", {"proposal": "cyclic", "prefix": 2}),
    "moi": ("moi", {}),
    "self_consistency": ("moi", {"variant": "self_consistency", "sc_permutations": 10}),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--candidates", type=int, default=5)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--configs", default="standard_rag,random,moi_cheap,moi")
    args = parser.parse_args()
    names = args.configs.split(",")
    llm, embeddings = default_llm(), default_embeddings()
    examples = load_dataset("hotpotqa")[: args.limit]
    rows = {name: {"em": [], "f1": [], "s": [], "gold@1": []} for name in names}
    for ex in examples:
        store = Store.in_memory(ex.passages, embeddings=embeddings)
        for name in names:
            method, params = CONFIGS[name]
            extra = {"candidates": args.candidates} if method == "moi" else {}
            graph = build_graph(method, llm=llm, store=store, k=args.k, **extra, **params)
            start = time.perf_counter()
            state = graph.invoke({"question": ex.question})
            rows[name]["s"].append(time.perf_counter() - start)
            rows[name]["em"].append(exact_match(state["answer"], ex.answers))
            rows[name]["f1"].append(f1_score(state["answer"], ex.answers))
            top = state["documents"][0].metadata.get("title") if state["documents"] else None
            rows[name]["gold@1"].append(float(top in ex.gold_titles))
        print(ex.id, {n: round(rows[n]["f1"][-1], 2) for n in names}, flush=True)
    print(f"\n{len(examples)} HotpotQA questions, n={args.candidates} candidates, top-{args.k} answered")
    print(f"{'config':<18}{'EM':>6}{'F1':>6}{'gold@1':>8}{'s/question':>12}")
    for name in names:
        r = rows[name]
        print(f"{name:<18}{100 * statistics.mean(r['em']):6.1f}{100 * statistics.mean(r['f1']):6.1f}"
              f"{100 * statistics.mean(r['gold@1']):8.1f}{statistics.mean(r['s']):12.1f}")


if __name__ == "__main__":
    main()
