"""RetroRAG vs standard RAG on multi-hop bridge questions, measured side by side in one run.

* ``demo``: the bundled handwritten bridge questions, open setting (the whole demo collection);
* ``hotpotqa``: the 20 bundled HotpotQA dev questions, distractor setting (each question's own
  10 paragraphs, ``ids=[p.id for p in ex.passages]`` on the demo store).

Prints one row per question as it finishes, then EM/F1, LLM calls, tokens and seconds per
question for every variant, the distribution of iterations used, and how often the
self-consistency stop fired at each iteration, plus the judges' fallback counters.
Variants: ``standard_rag`` (its defaults), ``retro`` (paper defaults) and, with
``--ablations``, ``retro`` without discovery ("w/o IE") and without collation ("w/o UoE", append only).

Usage: ``python benchmarks/retro_eval.py [--datasets demo,hotpotqa] [--limit 20] [--max-iterations 5] [--ablations]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter

from causalrag.corpus import open_store
from causalrag.eval.datasets import load_dataset
from causalrag.eval.metrics import exact_match, f1_score
from causalrag.graphs.registry import build_graph
from causalrag.nodes.common import summarize_trace
from causalrag.tools.llm import default_llm


def variants(max_iterations: int, ablations: bool) -> dict[str, tuple[str, dict]]:
    found = {"standard_rag": ("standard_rag", {}), "retro": ("retro", {"max_iterations": max_iterations})}
    if ablations:
        found["retro w/o discovery"] = ("retro", {"max_iterations": max_iterations, "discovery": False})
        found["retro w/o collation"] = ("retro", {"max_iterations": max_iterations, "collation": False})
    return found


def questions(spec: str, limit: int):
    """(example, ids) pairs: demo bridge questions in the open setting, HotpotQA in the distractor setting."""
    if spec == "demo":
        return [(ex, None) for ex in load_dataset("demo") if ex.type == "bridge"][:limit]
    return [(ex, [p.id for p in ex.passages]) for ex in load_dataset(spec)[:limit]]


def counters(trace: list[dict]) -> Counter:
    """The method's fallback counters summed over its trace."""
    keys = (
        "cot_fallbacks",
        "requery_fallbacks",
        "empty_answer",
        "empty_final_fallback",
        "gates_uninformative_llm",
        "parse_fallbacks",
    )
    found = Counter({k: e[k] for e in trace for k in keys if e.get(k)})
    checks = [e["sc"] for e in trace if e.get("node") == "check"]
    found["sc_judgments"] = len(checks)
    found["sc_llm_uninformative"] = sum(bool(c.get("uninformative")) for c in checks)
    # the text agreement overrode the calibrated LLM's verdict on stopping
    found["sc_text_overrode_llm"] = sum(
        c["calibrated"] is not None and (c["calibrated"] > 0.7) != (c["score"] > 0.7) for c in checks
    )
    gates = [g for e in trace if e.get("node") == "discover" for j in e.get("gates", []) for g in (j["qr"], j["ra"])]
    found["gate_judgments"] = len(gates)
    found["gate_text_overrode_llm"] = sum((g["calibrated"] > 0.5) != (g["score"] > 0.5) for g in gates)
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", default="demo,hotpotqa")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--max-iterations", type=int, default=5)
    parser.add_argument("--ablations", action="store_true")
    args = parser.parse_args()
    llm, store = default_llm(), open_store("demo")
    runs = variants(args.max_iterations, args.ablations)
    for spec in args.datasets.split(","):
        rows = {name: [] for name in runs}
        examples = questions(spec, args.limit)
        print(
            f"\n## {spec}: {len(examples)} questions ({'open' if spec == 'demo' else 'distractor'} setting)", flush=True
        )
        for ex, ids in examples:
            for name, (method, params) in runs.items():
                start = time.perf_counter()
                state = build_graph(method, llm=llm, store=store, ids=ids, **params).invoke({"question": ex.question})
                seconds = time.perf_counter() - start
                trace = state["trace"]
                rounds = state.get("rounds") or []
                row = {
                    "em": exact_match(state["answer"], ex.answers), "f1": f1_score(state["answer"], ex.answers),
                    "seconds": seconds, **summarize_trace(trace), "iterations": len(rounds),
                    "stopped_at": next((r["iteration"] for r in rounds if r["stop"] == "consistent"), None),
                    "counters": counters(trace),
                }
                rows[name].append(row)
                print(
                    f"{ex.id[:12]:>12} {name:<22} em={row['em']:.0f} f1={row['f1']:.2f} it={row['iterations']} "
                    f"calls={row['llm_calls']} s={seconds:.1f} answer={state['answer']!r} gold={ex.answers[0]!r}",
                    flush=True,
                )
        report(rows, args.max_iterations)


def report(rows: dict[str, list[dict]], max_iterations: int) -> None:
    print(f"\n{'variant':<22}{'n':>4}{'EM':>7}{'F1':>7}{'calls/q':>9}{'new tok/q':>10}{'prompt tok/q':>13}{'s/q':>8}")
    base = statistics.mean(r["seconds"] for r in rows["standard_rag"]) if rows["standard_rag"] else 0.0
    for name, found in rows.items():
        if not found:
            continue
        mean = lambda key, found=found: statistics.mean(r[key] for r in found)  # noqa: E731
        print(f"{name:<22}{len(found):>4}{100 * mean('em'):>7.1f}{100 * mean('f1'):>7.1f}{mean('llm_calls'):>9.1f}"
              f"{mean('new_tokens'):>10.1f}{mean('prompt_tokens'):>13.0f}{mean('seconds'):>8.1f}"
              + (f"  ({mean('seconds') / base:.1f}× standard_rag)" if base and name != "standard_rag" else ""))
    for name, found in rows.items():
        if not found or name == "standard_rag":
            continue
        used = Counter(r["iterations"] for r in found)
        stops = Counter(r["stopped_at"] for r in found if r["stopped_at"])
        print(
            f"\n{name}: iterations used {dict(sorted(used.items()))}; "
            f"self-consistency stop fired at iteration {dict(sorted(stops.items()))} "
            f"({sum(stops.values())}/{len(found)}), never (ran to {max_iterations}): {len(found) - sum(stops.values())}"
        )
        print("  counters:", dict(sum((r["counters"] for r in found), Counter())))


if __name__ == "__main__":
    main()
