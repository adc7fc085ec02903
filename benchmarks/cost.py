"""The cost of robustness: every method's seconds, LLM calls, prompt and new tokens per question and
its ratio to ``standard_rag``, on each backend, measured in one run (with the answers' EM / F1 /
containment beside them, so a speed-up that costs answers shows).

The harness of docs/performance.md's cost table: the bundled HotpotQA questions, each retrieving from its own 10
paragraphs (distractor setting), every method with the demo's CPU-sized knobs (``Method.cpu_params``;
``--full`` for the papers' defaults). Methods run one after another over all questions (method-major),
each starting with llama.cpp's prompt cache emptied, so no method is served prompts another method
decoded; within a method the cache works as in use (the few-shot header stays cached across questions).
Each backend starts with a warmed-up model and CIS's p(K) cache empty (a fresh ``CAUSALRAG_HOME``; the
cache is per model name, so one backend's priors would serve the other's): CIS's first row includes computing
every prior once; CIS then runs again over the same questions with the cache warm (a collection queried before).
``CAUSALRAG_DTYPE=bfloat16`` measures the transformers half with bf16 weights.

Each method runs with scored tokens normalized over the full vocabulary ("full", before issue 32) and over
the shortlist (``causalrag.tools.shortlist``, "shortlist"), back to back on the same loaded model, and the
table gives both as multiples of the same run's ``standard_rag`` (``--shortlist full`` or ``shortlist``: one).
CIS's p(K) cache is emptied before each cold run, so both cold runs compute every prior.

Usage: ``python benchmarks/cost.py [--questions 5] [--methods all] [--backends transformers,llamacpp] [--full]
[--shortlist full,shortlist]``
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

os.environ["CAUSALRAG_HOME"] = tempfile.mkdtemp(
    prefix="causalrag-cost-"
)  # no user state (and a fresh one per backend below)

from causalrag.config import settings  # noqa: E402
from causalrag.eval.runner import EvalConfig, run_eval  # noqa: E402
from causalrag.graphs.registry import methods as registry  # noqa: E402
from causalrag.tools.llm import load_llm  # noqa: E402

COLUMNS = ("seconds", "llm_calls", "prompt_tokens", "new_tokens")


def machine() -> str:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent
    ).stdout.strip()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"commit {commit or '?'}; {len(os.sched_getaffinity(0))} cores; load average {load}"


MODES = ("full", "shortlist")


def runs(methods: list[str]) -> list[tuple[str, str]]:
    """(method, label) in order: CIS again with its p(K) cache warm (the steady state of a collection that
    has been queried before: only log p(K|Q) is computed per question) right after its cold run."""
    return [(m, label) for m in methods for label in ([m, f"{m} (p(K) warm)"] if m.startswith("cis") else [m])]


def prior_home(homes: dict[str, str], label: str, mode: str) -> None:
    """A fresh ``CAUSALRAG_HOME`` (empty p(K) cache) for every run but a warm CIS run, which reuses its cold run's."""
    if not label.endswith("(p(K) warm)") or mode not in homes:
        homes[mode] = tempfile.mkdtemp(prefix=f"causalrag-cost-{mode}-")
    os.environ["CAUSALRAG_HOME"] = homes[mode]


def switch(llm, mode: str, kept) -> None:
    """Scored tokens over the full vocabulary or the shortlist (the backend's ``shortlist`` attribute is the switch)."""
    if hasattr(llm, "shortlist"):
        llm.shortlist = kept if mode == "shortlist" else None


def measure(
    backend: str, methods: list[str], questions: int, full: bool, out: Path, modes: tuple[str, ...] = MODES, llm=None
) -> dict[str, dict[str, dict[str, float]]]:
    """{mode: {label: figures}}: every method in every mode, the modes of one method back to back."""
    os.environ["CAUSALRAG_HOME"] = tempfile.mkdtemp(prefix=f"causalrag-cost-{backend}-")  # p(K) cold for each backend
    if llm is None:
        os.environ["CAUSALRAG_SHORTLIST"] = (
            "1" if "shortlist" in modes else "0"
        )  # loaded with it; switched per mode below
        llm = load_llm(backend=backend)
    llm.generate(
        ["Question: What is the capital of France?\nAnswer:"], max_new_tokens=4
    )  # one-time warm-up, outside every figure
    kept = getattr(llm, "shortlist", None)
    rows: dict[str, dict[str, dict[str, float]]] = {mode: {} for mode in modes}
    homes: dict[str, str] = {}
    for method, label in runs(methods):
        for mode in modes:
            prior_home(homes, label, mode)
            switch(llm, mode, kept)
            if hasattr(llm, "clear_cache"):
                llm.clear_cache()
            params = {} if full else {method: registry()[method].cpu_params}
            config = EvalConfig(dataset="hotpotqa", methods=[method], limit=questions, params=params, backend=backend)
            folder = out / f"{backend}-{mode}-{label.split()[0]}{'-warm' if label != method else ''}"
            results = run_eval(config, folder, llm=llm, progress=False)
            row = rows[mode][label] = {
                c: statistics.mean(r["wall_seconds" if c == "seconds" else c] for r in results) for c in COLUMNS
            }
            row |= {m: statistics.mean(r[m] for r in results) for m in ("em", "f1", "acc")}
            row["errors"] = sum(bool(r["error"]) for r in results)
            row["answers"] = [r["prediction"] for r in results]
            print(f"  {backend} {mode} {label}: {row['seconds']:.2f} s/question ({machine()})", flush=True)
    switch(llm, "shortlist", kept)
    return rows


def table(backend: str, rows: dict[str, dict[str, dict[str, float]]]) -> str:
    """One line per method: each mode's seconds and multiple of that mode's standard_rag, then the first mode's
    calls and tokens, each mode's EM / F1 / Acc, errors, and (two modes) the answers that differ."""
    modes, first = list(rows), next(iter(rows.values()))
    both = " / ".join(modes)
    lines = [
        f"\n{backend}",
        "| method |" + "".join(f" {m} s/q | {m} × std |" for m in modes)
        + f" calls/q | prompt tok/q | new tok/q | EM ({both}) | F1 | Acc | errors | answers changed |",
        "|---|" + "---|---|" * len(modes) + "---|" * 8,
    ]
    for label, r in first.items():
        times = ""
        for m in modes:
            base = rows[m].get("standard_rag")
            times += (
                f" {rows[m][label]['seconds']:.2f} | {rows[m][label]['seconds'] / base['seconds']:.2f} |"
                if base
                else f" {rows[m][label]['seconds']:.2f} | – |"
            )
        scores = " | ".join(" / ".join(f"{rows[m][label][k]:.2f}" for m in modes) for k in ("em", "f1", "acc"))
        answers = [rows[m][label]["answers"] for m in modes]
        changed = sum(a != b for a, b in zip(answers[0], answers[-1], strict=True))
        errors = sum(rows[m][label]["errors"] for m in modes)
        lines.append(
            f"| {label} |{times} {r['llm_calls']:.1f} | {r['prompt_tokens']:.0f} | {r['new_tokens']:.0f} | "
            f"{scores} | {errors:.0f} | {changed} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument(
        "--methods", default="all", help="Comma-separated; standard_rag is always measured (the ratios' base)."
    )
    parser.add_argument("--backends", default="transformers,llamacpp")
    parser.add_argument(
        "--full", action="store_true", help="The papers' defaults instead of the demo's CPU-sized knobs."
    )
    parser.add_argument(
        "--shortlist", default="full,shortlist", help="Scored tokens over the full vocabulary, the shortlist, or both."
    )
    args = parser.parse_args()
    modes = tuple(m for m in MODES if m in args.shortlist.split(","))
    chosen = list(registry()) if args.methods == "all" else args.methods.split(",")
    methods = ["standard_rag", *[m for m in chosen if m != "standard_rag"]]
    backends = [b for b in args.backends.split(",") if b != "llamacpp" or importlib.util.find_spec("llama_cpp")]
    started = time.perf_counter()
    print(
        f"cost per question: {args.questions} HotpotQA questions, distractor setting, "
        f"{'paper defaults' if args.full else 'CPU-sized knobs'}; "
        f"transformers weights: CAUSALRAG_DTYPE={settings().dtype}; {machine()}",
        flush=True,
    )
    out = Path(tempfile.mkdtemp(prefix="causalrag-cost-runs-"))
    results = {b: measure(b, methods, args.questions, args.full, out, modes) for b in backends}
    for backend, rows in results.items():
        print(table(backend, rows))
    if len(results) > 1:
        first, *others = backends
        for other in others:
            for mode in modes:
                speedups = ", ".join(
                    f"{m} {results[first][mode][m]['seconds'] / results[other][mode][m]['seconds']:.1f}×"
                    for m in results[first][mode]
                )
                print(f"\n{other} vs {first} ({mode}), time per question: {speedups}")
    print(f"\ntotal {time.perf_counter() - started:.0f} s; {machine()}")


if __name__ == "__main__":
    main()
