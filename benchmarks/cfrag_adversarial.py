"""The paper's adversarial-distractor experiment (§6.6, Fig. 4) as a reusable harness.

Inject K misleading passages (``causalrag.eval.inject``: the question's gold paragraphs rewritten
to assert a wrong answer of the same kind, so they share the question's surface but not its
answer) into each question's own pool, and score every method on the same questions in one run:
strict EM, F1 and the paper's "smart EM" (gold contained in the prediction), plus how often the
answer repeats an injected wrong answer ("misled").

Usage: OMP_NUM_THREADS=2 python benchmarks/cfrag_adversarial.py --limit 6 --inject 0,8
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

from causalrag.eval.datasets import Example, load_dataset
from causalrag.eval.inject import asserted_answers, with_distractors
from causalrag.eval.metrics import answer_scores, containment
from causalrag.graphs.registry import build_graph
from causalrag.tools.store import Store


def adversarial_accuracy(
    methods: Sequence[str],
    examples: Sequence[Example],
    injects: Sequence[int],
    *,
    donors: Sequence[Example],
    llm=None,
    params: dict[str, dict] | None = None,
    seed: int = 0,
    on_result: Callable[[dict], None] | None = None,
) -> dict[tuple[str, int], dict[str, float]]:
    """Mean EM / F1 / smart EM / misled rate / seconds per (method, K) over ``examples``.

    Every method answers the same questions from the same poisoned pool (one in-memory store per
    question and K). ``on_result`` sees every single result row as it comes.
    """
    rows: list[dict] = []
    for k in injects:
        for ex in examples:
            poisoned = with_distractors(ex, k, donors=donors, seed=seed)
            wrong = asserted_answers(ex, k, donors=donors, seed=seed) if k else []
            store = Store.in_memory(poisoned.passages)
            for method in methods:
                graph = build_graph(method, llm=llm, store=store, **(params or {}).get(method, {}))
                start = time.perf_counter()
                state = graph.invoke({"question": ex.question})
                answer = state["answer"]
                row = {
                    "method": method,
                    "inject": k,
                    "id": ex.id,
                    "answer": answer,
                    "seconds": time.perf_counter() - start,
                    **answer_scores(answer, ex.answers),
                    "misled": float(any(containment(answer, [w]) for w in wrong)),
                    "fallbacks": {
                        key: v
                        for e in state["trace"]
                        for key, v in e.items()
                        if key.startswith(("fallback", "first_attempt", "regenerated", "valid", "selected"))
                    },
                }
                rows.append(row)
                if on_result:
                    on_result(row)
    table: dict[tuple[str, int], dict[str, float]] = {}
    for method in methods:
        for k in injects:
            mine = [r for r in rows if r["method"] == method and r["inject"] == k]
            table[(method, k)] = {
                m: sum(r[m] for r in mine) / len(mine) for m in ("em", "f1", "acc", "misled", "seconds")
            }
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="hotpotqa")
    parser.add_argument("--limit", type=int, default=6, help="first N questions (CPU time: ~1 min per cf_rag answer)")
    parser.add_argument("--inject", default="0,8", help="K values, e.g. 0,2,4,8,16")
    parser.add_argument("--methods", default="standard_rag,cf_rag")
    args = parser.parse_args()
    data = load_dataset(args.dataset)
    examples = data[: args.limit]
    injects = [int(k) for k in args.inject.split(",")]
    methods = args.methods.split(",")
    print(f"{len(examples)} {args.dataset} questions, K in {injects}, methods {methods}")
    rows: list[dict] = []

    def show(row: dict) -> None:
        rows.append(row)
        print(
            f"  K={row['inject']:2d} {row['method']:13s} {row['id'][:12]:12s} em={row['em']:.0f} acc={row['acc']:.0f} "
            f"misled={row['misled']:.0f} {row['seconds']:5.1f}s {row['answer']!r}",
            flush=True,
        )

    table = adversarial_accuracy(methods, examples, injects, donors=data, on_result=show)
    print("\nmethod          K    EM    F1  smartEM  misled  s/question")
    for (method, k), s in table.items():
        print(f"{method:13s} {k:3d} {100 * s['em']:5.1f} {100 * s['f1']:5.1f} {100 * s['acc']:8.1f} "
              f"{100 * s['misled']:7.1f} {s['seconds']:10.1f}")
    counts: dict[str, float] = {}
    for row in rows:
        for key, value in row["fallbacks"].items():
            counts[key] = counts.get(key, 0) + value
    runs = sum(r["method"] == "cf_rag" for r in rows)
    if runs:
        print(f"cf_rag fallbacks summed over {runs} runs (5 transformation types each):", counts)


if __name__ == "__main__":
    main()
