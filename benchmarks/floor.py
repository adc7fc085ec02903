"""What each method's time on llama.cpp is made of, and the ratio to ``standard_rag`` its work implies.

First three unit costs of this machine, each the median of several runs on an emptied cache:

* ``a`` — one prompt token (a 480-token prompt with logits at its last position only, per token);
* ``b`` — one logit row: the same prompt with logits at its last 64 positions, minus the first run,
  per extra row, plus the log-normalizer over the 262k-entry vocabulary that every scored row pays in numpy;
* ``c`` — one ``llama_decode`` call beyond its cells and rows: a one-token step after a cached
  300-token prompt, minus ``a + b`` (reading the weights once per call is what a decoding step costs).

Then every method runs over the questions of ``benchmarks/cost.py`` (HotpotQA, distractor setting,
CPU-sized knobs, each method starting with an emptied cache) with a counter around the backend's
``_decode``: cells decoded (prompt and generated tokens alike), logit rows and decode calls. Their
time at the unit costs, ``a·cells + b·rows + c·calls``, beside the measured time says how much of a
method is its work done at the machine's rate; the ratio of two such times is the ratio that work
implies, which no scheduling of the same work can beat — only fewer cells, rows or calls can.

Usage: ``python benchmarks/floor.py [--questions 3] [--methods all]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _needs import need

need("llamacpp", "llama_cpp")

from cost import machine  # noqa: E402  (importing cost.py first gives the run a fresh CAUSALRAG_HOME)

from causalrag.corpus import hotpotqa_questions  # noqa: E402
from causalrag.eval.runner import EvalConfig, run_eval  # noqa: E402
from causalrag.graphs.registry import methods as registry  # noqa: E402
from causalrag.tools.backends.llamacpp import LlamaCppLLM, log_normalizer  # noqa: E402


def median_seconds(run, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def unit_costs(llm: LlamaCppLLM, repeats: int = 5) -> dict[str, float]:
    """Seconds per prompt token (a), per logit row (b) and per decode call (c) on this machine."""
    paragraphs = ["".join(sentences) for q in hotpotqa_questions() for _, sentences in q["context"]]
    tokens = llm._tokens(" ".join(paragraphs), start=True)[:480]
    n, rows = len(tokens), 64

    def prompt(wanted: int) -> None:
        llm.clear_cache()
        llm._decode([(t, p, (0,), p >= n - wanted) for p, t in enumerate(tokens)], lambda k, logits: log_normalizer(logits))

    one, many = median_seconds(lambda: prompt(1), repeats), median_seconds(lambda: prompt(rows), repeats)
    a, b = one / n, (many - one) / (rows - 1)
    held = tokens[:300]
    llm.clear_cache()
    llm._decode([(t, p, (0,), False) for p, t in enumerate(held)])

    def step() -> None:
        llm._lib.llama_memory_seq_rm(llm._memory, 0, len(held), -1)
        llm._decode([(held[-1], len(held), (0,), True)], lambda k, logits: log_normalizer(logits))

    c = median_seconds(step, 4 * repeats) - a - b
    llm.clear_cache()
    return {"a": a, "b": b, "c": c}


class Counted:
    """Counts the cells, logit rows and decode calls of everything ``llm._decode`` runs, and its seconds
    (llama.cpp's decoding plus reading the logits it returns)."""

    def __init__(self, llm: LlamaCppLLM) -> None:
        self.cells = self.rows = 0
        self.seconds = 0.0
        self.llm, self._decode = llm, llm._decode
        llm._decode = self

    def __call__(self, entries, use=None, *, keep=()):
        self.cells += len(entries)
        self.rows += sum(bool(e[3]) for e in entries)
        start = time.perf_counter()
        try:
            return self._decode(entries, use, keep=keep)
        finally:
            self.seconds += time.perf_counter() - start

    def totals(self) -> tuple[float, ...]:
        return self.cells, self.rows, self.llm.usage.forward_passes, self.seconds


def measure(llm: LlamaCppLLM, methods: list[str], questions: int) -> dict[str, dict[str, float]]:
    counter, out, rows = Counted(llm), Path(tempfile.mkdtemp(prefix="causalrag-floor-")), {}
    print(f"  runs (answers per question) in {out}", flush=True)
    # CIS runs again with its p(K) cache warm, as in cost.py (only log p(K|Q) is computed per question)
    for method, label in [(m, m) for m in methods] + ([("cis", "cis (p(K) warm)")] if "cis" in methods else []):
        llm.clear_cache()
        before = counter.totals()
        config = EvalConfig(dataset="hotpotqa", methods=[method], limit=questions, params={method: registry()[method].cpu_params}, backend="llamacpp")
        seconds = sum(r["wall_seconds"] for r in run_eval(config, out / (method if label == method else f"{method}-warm"), llm=llm, progress=False))
        counts = (now - then for now, then in zip(counter.totals(), before))
        rows[label] = {"seconds": seconds / questions} | {k: v / questions for k, v in zip(("cells", "rows", "calls", "decoding"), counts)}
        print(f"  {label}: {rows[label]['seconds']:.2f} s/question ({machine()})", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument("--methods", default="all", help="Comma-separated; standard_rag is always measured (the ratios' base).")
    args = parser.parse_args()
    chosen = list(registry()) if args.methods == "all" else args.methods.split(",")
    methods = ["standard_rag", *[m for m in chosen if m != "standard_rag"]]
    print(f"floor: {args.questions} HotpotQA questions, CPU-sized knobs, llama.cpp; {machine()}", flush=True)
    llm = LlamaCppLLM()
    llm.generate(["Question: What is the capital of France?\nAnswer:"], max_new_tokens=4)  # warm-up
    unit = unit_costs(llm)
    print(f"unit costs: a = {unit['a'] * 1e3:.2f} ms a prompt token, b = {unit['b'] * 1e3:.2f} ms a logit row, "
          f"c = {unit['c'] * 1e3:.2f} ms a decode call", flush=True)
    rows = measure(llm, methods, args.questions)
    for r in rows.values():
        r["work"] = unit["a"] * r["cells"] + unit["b"] * r["rows"] + unit["c"] * r["calls"]
    base = rows["standard_rag"]
    print("\n| method | s/q | × std | in llama.cpp s/q | outside s/q | cells/q | logit rows/q | decode calls/q | a·cells | b·rows | c·calls | work s/q | work × std |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for method, r in rows.items():
        print(f"| {method} | {r['seconds']:.2f} | {r['seconds'] / base['seconds']:.2f} | {r['decoding']:.2f} | {r['seconds'] - r['decoding']:.2f} | "
              f"{r['cells']:.0f} | {r['rows']:.0f} | {r['calls']:.0f} | {unit['a'] * r['cells']:.2f} | {unit['b'] * r['rows']:.2f} | "
              f"{unit['c'] * r['calls']:.2f} | {r['work']:.2f} | {r['work'] / base['work']:.2f} |")
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()
