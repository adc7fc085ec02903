"""The cost of robustness: every method's seconds, LLM calls, prompt and new tokens per question and
its ratio to ``standard_rag``, on each backend, measured in one run (with the answers' EM / F1 /
containment beside them, so a speed-up that costs answers shows).

The harness of ``docs/results.md``: the bundled HotpotQA questions, each retrieving from its own 10
paragraphs (distractor setting), every method with the demo's CPU-sized knobs (``Method.cpu_params``;
``--full`` for the papers' defaults). Methods run one after another over all questions (method-major),
each starting with llama.cpp's prompt cache emptied, so no method is served prompts another method
decoded; within a method the cache works as in use (the few-shot header stays cached across questions).
Each backend starts with a warmed-up model and CIS's p(K) cache empty (a fresh ``CAUSALRAG_HOME``; the
cache is per model name, so one backend's priors would serve the other's): CIS's first row includes computing every prior
once; CIS then runs again over the same questions with the cache warm (a collection queried before).
``CAUSALRAG_DTYPE=bfloat16`` measures the transformers half with bf16 weights.

Usage: ``python benchmarks/cost.py [--questions 5] [--methods all] [--backends transformers,llamacpp] [--full]``
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

os.environ["CAUSALRAG_HOME"] = tempfile.mkdtemp(prefix="causalrag-cost-")  # no user state (and a fresh one per backend below)

from causalrag.config import settings  # noqa: E402
from causalrag.eval.runner import EvalConfig, run_eval  # noqa: E402
from causalrag.graphs.registry import methods as registry  # noqa: E402
from causalrag.tools.llm import load_llm  # noqa: E402

COLUMNS = ("seconds", "llm_calls", "prompt_tokens", "new_tokens")


def machine() -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent).stdout.strip()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"commit {commit or '?'}; {len(os.sched_getaffinity(0))} cores; load average {load}"


def measure(backend: str, methods: list[str], questions: int, full: bool, out: Path) -> dict[str, dict[str, float]]:
    os.environ["CAUSALRAG_HOME"] = tempfile.mkdtemp(prefix=f"causalrag-cost-{backend}-")  # p(K) cold for each backend
    llm = load_llm(backend=backend)
    llm.generate(["Question: What is the capital of France?\nAnswer:"], max_new_tokens=4)  # one-time warm-up, outside every figure
    rows: dict[str, dict[str, float]] = {}
    # CIS runs twice: with its p(K) cache cold (every prior computed) and then warm (the steady state
    # of a collection that has been queried before: only log p(K|Q) is computed per question)
    runs = [(m, m) for m in methods] + ([("cis", "cis (p(K) warm)")] if "cis" in methods else [])
    for method, label in runs:
        if hasattr(llm, "clear_cache"):
            llm.clear_cache()
        params = {} if full else {method: registry()[method].cpu_params}
        config = EvalConfig(dataset="hotpotqa", methods=[method], limit=questions, params=params, backend=backend)
        folder = out / f"{backend}-{label.split()[0]}{'-warm' if label != method else ''}"
        results = run_eval(config, folder, llm=llm, progress=False)
        rows[label] = {c: statistics.mean(r["wall_seconds" if c == "seconds" else c] for r in results) for c in COLUMNS}
        rows[label] |= {m: statistics.mean(r[m] for r in results) for m in ("em", "f1", "acc")}
        rows[label]["errors"] = sum(bool(r["error"]) for r in results)
        print(f"  {backend} {label}: {rows[label]['seconds']:.2f} s/question ({machine()})", flush=True)
    return rows


def table(backend: str, rows: dict[str, dict[str, float]]) -> str:
    base = rows.get("standard_rag")
    lines = [
        f"\n{backend}",
        "| method | s/q | × std s | calls/q | × std calls | prompt tok/q | new tok/q | EM | F1 | Acc | errors |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for method, r in rows.items():
        ratio = f"{r['seconds'] / base['seconds']:.2f}" if base else "–"
        calls = f"{r['llm_calls'] / base['llm_calls']:.1f}" if base else "–"
        lines.append(
            f"| {method} | {r['seconds']:.2f} | {ratio} | {r['llm_calls']:.1f} | {calls} | {r['prompt_tokens']:.0f} | "
            f"{r['new_tokens']:.0f} | {r['em']:.2f} | {r['f1']:.2f} | {r['acc']:.2f} | {r['errors']:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--methods", default="all", help="Comma-separated; standard_rag is always measured (the ratios' base).")
    parser.add_argument("--backends", default="transformers,llamacpp")
    parser.add_argument("--full", action="store_true", help="The papers' defaults instead of the demo's CPU-sized knobs.")
    args = parser.parse_args()
    chosen = list(registry()) if args.methods == "all" else args.methods.split(",")
    methods = ["standard_rag", *[m for m in chosen if m != "standard_rag"]]
    backends = [b for b in args.backends.split(",") if b != "llamacpp" or importlib.util.find_spec("llama_cpp")]
    started = time.perf_counter()
    print(f"cost per question: {args.questions} HotpotQA questions, distractor setting, "
          f"{'paper defaults' if args.full else 'CPU-sized knobs'}; transformers weights: CAUSALRAG_DTYPE={settings().dtype}; {machine()}", flush=True)
    out = Path(tempfile.mkdtemp(prefix="causalrag-cost-runs-"))
    results = {b: measure(b, methods, args.questions, args.full, out) for b in backends}
    for backend, rows in results.items():
        print(table(backend, rows))
    if len(results) > 1 and all("standard_rag" in r for r in results.values()):
        first, *others = backends
        for other in others:
            speedups = ", ".join(f"{m} {results[first][m]['seconds'] / results[other][m]['seconds']:.1f}×" for m in results[first])
            print(f"\n{other} vs {first}, time per question: {speedups}")
    print(f"\ntotal {time.perf_counter() - started:.0f} s; {machine()}")


if __name__ == "__main__":
    main()
