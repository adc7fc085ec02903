"""CF-RAG cost vs standard RAG, measured side by side in one run (paper App. N: 1.4x latency on GPUs).

For each question (bundled demo trap questions by default, each over its own passage pool):

1. latency and LLM calls/tokens of ``standard_rag`` and ``cf_rag`` (the ratio the paper reports);
2. what batching saves: the N counterfactual rewrites and the M hypothesis prompts of that very run,
   generated as one batched ``generate`` call vs one call per prompt; and the graph's own ``Send``
   fan-out (M branches, one small generation each, serialized by the model lock on one CPU) from
   the trace, next to those two.

Usage: OMP_NUM_THREADS=2 python benchmarks/cfrag_cost.py [--questions trap-joker,trap-australia-capital]
"""

from __future__ import annotations

import argparse
import time

from causalrag.eval.datasets import load_dataset
from causalrag.graphs.registry import build_graph
from causalrag.nodes.common import summarize_trace
from causalrag.prompts.cf_rag import (
    COUNTERFACTUAL_STOP,
    HYPOTHESIS_STOP,
    TRANSFORMATIONS,
    counterfactual_prompt,
    hypothesis_prompt,
)
from causalrag.tools.llm import default_llm
from causalrag.tools.store import Store
from causalrag.tools.usage import metered


def timed(fn):
    start = time.perf_counter()
    with metered() as usage:
        out = fn()
    return out, time.perf_counter() - start, usage


def batched_vs_sequential(llm, prompts, **kwargs) -> tuple[float, float]:
    _, batched, _ = timed(lambda: llm.generate(prompts, **kwargs))
    _, sequential, _ = timed(lambda: [llm.generate([p], **kwargs) for p in prompts])
    return batched, sequential


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", default="trap-joker,trap-australia-capital")
    args = parser.parse_args()
    wanted = args.questions.split(",")
    examples = [e for e in load_dataset("demo") if e.id in wanted]
    llm = default_llm()
    llm.generate(["warm up"], max_new_tokens=2)
    rows = []
    for ex in examples:
        store = Store.in_memory(ex.passages)
        runs = {}
        for method in ("standard_rag", "cf_rag"):
            graph = build_graph(method, llm=llm, store=store)
            state, seconds, usage = timed(lambda graph=graph, ex=ex: graph.invoke({"question": ex.question}))
            runs[method] = (state, seconds, usage)
        state = runs["cf_rag"][0]
        cf_b, cf_s = batched_vs_sequential(
            llm,
            [counterfactual_prompt(ex.question, t[0]) for t in TRANSFORMATIONS],
            max_new_tokens=32,
            stop=COUNTERFACTUAL_STOP,
        )
        by_title = {p.title: p.to_document() for p in ex.passages}  # the run's samples, from their titles
        hyp_prompts = [hypothesis_prompt(ex.question, [by_title[t] for t in h["evidence"] if t in by_title])
                       for h in sorted(state["arbitration"], key=lambda h: h["index"])]
        hyp_b, hyp_s = batched_vs_sequential(llm, hyp_prompts, max_new_tokens=40, stop=HYPOTHESIS_STOP)
        # the branches run concurrently, so their own timers overlap: the fan-out's wall time is the
        # run's total minus every other node
        send = runs["cf_rag"][1] - sum(e["seconds"] for e in state["trace"] if e["node"] != "hypothesize")
        totals = {m: summarize_trace(r[0]["trace"]) for m, r in runs.items()}
        rows.append((ex.id, runs, totals, cf_b, cf_s, hyp_b, hyp_s, send, len(hyp_prompts)))
        print(f"\n{ex.id}: {ex.question}")
        for m, (st, sec, usage) in runs.items():
            print(f"  {m:13s} {sec:7.1f} s  llm_calls {usage.calls:3d}  prompt_tokens {usage.prompt_tokens:6d}  "
                  f"new_tokens {usage.new_tokens:5d}  answer {st['answer']!r}")
        print(f"  latency ratio cf_rag / standard_rag: {runs['cf_rag'][1] / runs['standard_rag'][1]:.1f}x")
        print(
            "  cf_rag per stage (s):",
            {e["node"]: e["seconds"] for e in state["trace"] if e["node"] != "hypothesize"},
            f"hypothesize x{len(hyp_prompts)} (wall): {send:.1f}",
        )
        print(f"  5 counterfactual rewrites: one batch {cf_b:.1f} s vs sequential {cf_s:.1f} s ({cf_s / cf_b:.1f}x)")
        print(
            f"  {len(hyp_prompts)} hypotheses: one batch {hyp_b:.1f} s vs sequential {hyp_s:.1f} s "
            f"({hyp_s / hyp_b:.1f}x); "
            f"graph's Send branches {send:.1f} s"
        )
    std = sum(r[1]["standard_rag"][1] for r in rows)
    cf = sum(r[1]["cf_rag"][1] for r in rows)
    calls = {m: sum(r[1][m][2].calls for r in rows) for m in ("standard_rag", "cf_rag")}
    print(f"\nTOTAL over {len(rows)} questions: standard_rag {std:.1f} s, cf_rag {cf:.1f} s, ratio {cf / std:.1f}x; "
          f"LLM calls {calls['standard_rag']} vs {calls['cf_rag']}")
    print(f"batching: rewrites {sum(r[4] for r in rows) / sum(r[3] for r in rows):.1f}x, "
          f"hypotheses {sum(r[6] for r in rows) / sum(r[5] for r in rows):.1f}x faster than sequential; "
          f"Send fan-out {sum(r[7] for r in rows):.1f} s vs one batch {sum(r[5] for r in rows):.1f} s")


if __name__ == "__main__":
    main()
