"""Distilled CIS reranker vs the LM's CIS, and retrieval quality of every reranker, in one run.

On the bundled corpus's questions (20 HotpotQA + the demo questions, each with its own pool):

1. the teacher LM scores every pool once (CIS and, from the same pass, CIS w/o p(K));
2. 2-fold cross-fitting: a cross-encoder distilled on one half's ⟨Q, K, CIS⟩ triplets scores the
   other half, so every question is held out once;
3. prints NDCG@5 / recall@5 of gold passages for similarity, BM25, CIS, CIS w/o p(K), distilled;
   the Spearman correlation of distilled vs LM CIS on held-out questions; and the speed ratio
   of the two scorers on the same candidates (p(K) already cached for the LM: its best case).

Usage: ``python benchmarks/cis_distill.py [--epochs 4] [--hotpotqa 20] [--out runs/cis_distill]``
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from causalrag.eval.datasets import load_dataset
from causalrag.eval.reranking import (
    bm25_reranker,
    compare,
    lm_rerankers,
    markdown_table,
    score_agreement,
    score_pools,
    similarity,
)
from causalrag.prompts.cis import passage_text
from causalrag.tools.cis import CISScorer, PriorCache
from causalrag.tools.cross_encoder import DistillConfig, TrainingPair, distill
from causalrag.tools.llm import default_llm
from causalrag.tools.store import Store


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--out", default=None, help="Folder for the two distilled models (default: a temp folder).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--hotpotqa", type=int, default=20, help="How many of the 20 bundled HotpotQA questions (CPU time)."
    )
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="cis-distill-"))

    examples = load_dataset("hotpotqa")[: args.hotpotqa] + load_dataset("demo")
    store = Store.in_memory([p for ex in examples for p in ex.passages])
    llm = default_llm()
    scorer = CISScorer(llm, cache=PriorCache(out / "prior.sqlite"))
    start = time.perf_counter()
    pools = score_pools(
        examples, store, {"similarity": similarity, "bm25": bm25_reranker(store), **lm_rerankers(scorer)}, progress=True
    )
    print(
        f"teacher LM scored {sum(len(p.candidates) for p in pools)} candidates of {len(pools)} questions "
        f"in {time.perf_counter() - start:.0f}s"
    )

    folds = [pools[0::2], pools[1::2]]
    config = DistillConfig(epochs=args.epochs, seed=args.seed)
    for i, (train, held_out) in enumerate([(folds[0], folds[1]), (folds[1], folds[0])]):
        pairs = [
            TrainingPair(p.example.question, passage_text(d), s)
            for p in train
            for d, s in zip(p.candidates, p.scores["cis"], strict=True)
        ]
        reranker, losses = distill(pairs, out / f"fold{i}", config=config, resume=False, progress=False)
        print(f"fold {i}: trained on {len(pairs)} pairs, epoch losses {[round(x, 3) for x in losses]}")
        for p in held_out:
            p.scores["cis-distilled"] = reranker.score(p.example.question, p.candidates)
        if i == 0:  # speed on the same held-out candidates: LM (priors cached) vs distilled
            n = sum(len(p.candidates) for p in held_out)
            t0 = time.perf_counter()
            for p in held_out:
                scorer.score(p.example.question, p.candidates)
            lm_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            for p in held_out:
                reranker.score(p.example.question, p.candidates)
            ce_s = time.perf_counter() - t0
            speed = {
                "candidates": n,
                "lm_cands_per_s": n / lm_s,
                "distilled_cands_per_s": n / ce_s,
                "ratio": lm_s / ce_s,
            }

    results = compare(pools, ["similarity", "bm25", "cis", "cis-no-prior", "cis-distilled"], ks=(1, 5))
    print("\nRetrieval of gold passages (each question's own pool; distilled scored out of fold):")
    print(markdown_table(results, ("recall@5", "ndcg@5", "ndcg@1")))
    hotpot_ids = {ex.id for ex in load_dataset("hotpotqa")}
    for subset, chosen in (("hotpotqa", [p for p in pools if p.example.id in hotpot_ids]),
                           ("demo", [p for p in pools if p.example.id not in hotpot_ids])):
        print(f"\n{subset} only ({len(chosen)} questions):")
        print(markdown_table(compare(chosen, ["similarity", "bm25", "cis", "cis-no-prior", "cis-distilled"], ks=(5,))))
    agreement = score_agreement(pools, "cis", "cis-distilled")
    print(
        f"\nSpearman(distilled, LM CIS) on held-out questions: pooled {agreement['pooled']:.3f}, "
        f"mean per question {agreement['per_question']:.3f}  (goal ≥ 0.7)"
    )
    print(f"Spearman(similarity, LM CIS): {score_agreement(pools, 'cis', 'similarity')}")
    print(
        f"speed on {speed['candidates']} held-out candidates: LM CIS (p(K) cached) {speed['lm_cands_per_s']:.1f} "
        f"cand/s, distilled {speed['distilled_cands_per_s']:.1f} cand/s → {speed['ratio']:.1f}× (goal ≥ 50×)"
    )
    (out / "results.json").write_text(
        json.dumps({"retrieval": results, "spearman": agreement, "speed": speed}, indent=2)
    )
    print(f"results: {out / 'results.json'}")


if __name__ == "__main__":
    main()
