"""What the focus route costs (issue 30): astute with it (the default) and without it (``focus_margin=1000``),
side by side on the same questions, against standard_rag's seconds in the same run.

The questions are the robustness suite's test-half correlation traps (where the sources scatter over lone
answers and the route is asked), each on its own passages (an in-memory store per question), llama.cpp, one
process. Per question the three runs go back to back, the two astute variants in alternating order, so neither
is always served the other's cached prompts. Prints seconds per question, LLM calls, the multiples of
standard_rag and of astute without the route, the routes taken and the right answers of each.

Usage: ``python benchmarks/focus.py [--questions 20]``
"""

from __future__ import annotations

import argparse
import statistics
import time

from _needs import need

need("llamacpp", "llama_cpp")

from causalrag.eval.metrics import answer_scores  # noqa: E402
from causalrag.eval.robust import load_robust  # noqa: E402
from causalrag.graphs.registry import build_graph, get_method  # noqa: E402
from causalrag.tools.llm import default_llm  # noqa: E402
from causalrag.tools.store import Store  # noqa: E402

VARIANTS = {
    "standard_rag": ("standard_rag", {}),
    "astute": ("astute", {}),
    "astute, no focus": ("astute", {"focus_margin": 1000.0}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20)
    args = parser.parse_args()
    items = load_robust(split="test", condition="correlation_trap")[: args.questions]
    llm = default_llm()
    seconds: dict[str, list[float]] = {v: [] for v in VARIANTS}
    calls: dict[str, list[int]] = {v: [] for v in VARIANTS}
    right = dict.fromkeys(VARIANTS, 0.0)
    routes: dict[str, int] = {}
    for i, item in enumerate(items):
        store = Store.in_memory(item.passages)
        pair = ["astute", "astute, no focus"]
        for variant in ["standard_rag", *(pair if i % 2 else reversed(pair))]:
            name, params = VARIANTS[variant]
            graph = build_graph(name, llm=llm, store=store, **get_method(name).cpu_params, **params)
            start = time.perf_counter()
            state = graph.invoke({"question": item.question})
            seconds[variant].append(time.perf_counter() - start)
            calls[variant].append(sum(int(e.get("llm_calls", 0)) for e in state["trace"]))
            right[variant] += answer_scores(state["answer"], item.answers)["acc"]
            if variant == "astute":
                route = (state.get("assessment") or {}).get("route", "")
                routes[route] = routes.get(route, 0) + 1
    base, without = statistics.mean(seconds["standard_rag"]), statistics.mean(seconds["astute, no focus"])
    print(f"{len(items)} test-half correlation traps; astute's routes: {routes}")
    print("| variant | s/q | LLM calls/q | x standard_rag | x astute without focus | right |")
    print("|---|---|---|---|---|---|")
    for variant in VARIANTS:
        mean = statistics.mean(seconds[variant])
        print(f"| {variant} | {mean:.2f} | {statistics.mean(calls[variant]):.1f} | {mean / base:.2f} | "
              f"{mean / without:.2f} | {right[variant]:.0f} |")


if __name__ == "__main__":
    main()
