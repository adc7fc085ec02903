"""The cost of robustness: every method's seconds, LLM calls, prompt and new tokens per question and
its ratio to ``standard_rag``, on each backend, measured in one run (with the answers' EM / F1 /
containment beside them, so a speed-up that costs answers shows).

The harness of docs/performance.md's cost tables: the bundled HotpotQA questions, each retrieving from its own 10
paragraphs (distractor setting), or any ``causalrag eval`` dataset (``--dataset "robust?split=dev" --shard 1/40``:
a spread of the robustness suite's questions over its conditions), every method with the demo's CPU-sized knobs
(``Method.cpu_params``; ``--full`` for the papers' defaults). Methods run one after another over all questions
(method-major), each starting with llama.cpp's prompt cache emptied, so no method is served prompts another method
decoded; within a method the cache works as in use (the few-shot header stays cached across questions).
Each backend starts with a warmed-up model and CIS's p(K) cache empty (a fresh ``CAUSALRAG_HOME``; the
cache is per model name, so one backend's priors would serve the other's): a method's cold row includes computing
every prior once. With ``--caches cold,warm`` every method then runs again over the same questions with its
disk caches warm (a collection queried before: CIS's p(K) cache) and the model's prompt cache emptied again, and
warm rows are multiples of standard_rag's warm row. A method that records routes (triage) also gets one line per
route: its seconds on the questions it took that route on, as a multiple of standard_rag's on the same questions.
``CAUSALRAG_DTYPE=bfloat16`` measures the transformers half with bf16 weights.

Each method runs with scored tokens normalized over the full vocabulary ("full", before issue 32) and over
the shortlist (``causalrag.tools.shortlist``, "shortlist"), back to back on the same loaded model, and the
table gives both as multiples of the same run's ``standard_rag`` (``--shortlist full`` or ``shortlist``: one).
CIS's p(K) cache is emptied before each cold run, so both cold runs compute every prior.

Usage: ``python benchmarks/cost.py [--questions 5] [--dataset hotpotqa] [--shard I/N] [--methods all]
[--backends transformers,llamacpp] [--full] [--shortlist full,shortlist] [--caches cold]``
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
WARM = " (warm)"


def runs(methods: list[str], caches: tuple[str, ...]) -> list[tuple[str, str]]:
    """(method, label) in order: with ``warm``, each method again right after its cold run with its disk caches
    warm (the steady state of a collection queried before: CIS computes only log p(K|Q) per question)."""
    return [(m, label) for m in methods for label in ([m, m + WARM] if "warm" in caches else [m])]


def prior_home(homes: dict[str, str], label: str, mode: str) -> None:
    """A fresh ``CAUSALRAG_HOME`` (empty p(K) cache) for every cold run; a warm run reuses its cold run's."""
    if not label.endswith(WARM) or mode not in homes:
        homes[mode] = tempfile.mkdtemp(prefix=f"causalrag-cost-{mode}-")
    os.environ["CAUSALRAG_HOME"] = homes[mode]


def switch(llm, mode: str, kept) -> None:
    """Scored tokens over the full vocabulary or the shortlist (the backend's ``shortlist`` attribute is the switch)."""
    if hasattr(llm, "shortlist"):
        llm.shortlist = kept if mode == "shortlist" else None


def measure(
    backend: str,
    methods: list[str],
    questions: int | None,
    full: bool,
    out: Path,
    modes: tuple[str, ...] = MODES,
    llm=None,
    *,
    dataset: str = "hotpotqa",
    shard: str | None = None,
    caches: tuple[str, ...] = ("cold",),
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
    for method, label in runs(methods, caches):
        for mode in modes:
            prior_home(homes, label, mode)
            switch(llm, mode, kept)
            if hasattr(llm, "clear_cache"):
                llm.clear_cache()
            params = {} if full else {method: registry()[method].cpu_params}
            config = EvalConfig(
                dataset=dataset, methods=[method], limit=questions, params=params, backend=backend, shard=shard
            )
            folder = out / f"{backend}-{mode}-{label.split()[0]}{'-warm' if label != method else ''}"
            results = run_eval(config, folder, llm=llm, progress=False)
            row = rows[mode][label] = {
                c: statistics.mean(r["wall_seconds" if c == "seconds" else c] for r in results) for c in COLUMNS
            }
            row |= {m: statistics.mean(r[m] for r in results) for m in ("em", "f1", "acc")}
            row["errors"] = sum(bool(r["error"]) for r in results)
            row["answers"] = [r["prediction"] for r in results]
            row["each"] = {r["question_id"]: r["wall_seconds"] for r in results}
            row["routes"] = {r["question_id"]: r.get("route") for r in results}
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
            base = rows[m].get(base_of(label))
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
    lines += [line for m in modes for label in first for line in route_lines(rows[m], label, m)]
    return "\n".join(lines)


def base_of(label: str) -> str:
    """The row a label's ratio divides by: standard_rag's, warm for a warm row."""
    return "standard_rag" + WARM if label.endswith(WARM) else "standard_rag"


def route_lines(rows: dict[str, dict], label: str, mode: str) -> list[str]:
    """Per route a method recorded: its seconds on the questions of that route over standard_rag's on the same."""
    routes, base = rows[label]["routes"], rows.get(base_of(label))
    if base is None or not any(routes.values()):
        return []
    lines = []
    for route in sorted({r for r in routes.values() if r}):
        ids = [q for q, r in routes.items() if r == route and q in base["each"]]
        ratio = sum(rows[label]["each"][q] for q in ids) / sum(base["each"][q] for q in ids)
        lines.append(f"  {label}, {mode}, route {route}: {ratio:.2f}× standard_rag on its {len(ids)} question(s)")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=None, help="First N questions (default 5; all with --shard).")
    parser.add_argument("--dataset", default="hotpotqa", help="A `causalrag eval` dataset, e.g. 'robust?split=dev'.")
    parser.add_argument("--shard", default=None, help="I/N: a spread of the dataset's questions (by id hash).")
    parser.add_argument(
        "--caches", default="cold", help="cold, or cold,warm: each method again with its disk caches warm."
    )
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
    caches = tuple(args.caches.split(","))
    questions = args.questions if args.questions or args.shard else 5
    chosen = list(registry()) if args.methods == "all" else args.methods.split(",")
    methods = ["standard_rag", *[m for m in chosen if m != "standard_rag"]]
    backends = [b for b in args.backends.split(",") if b != "llamacpp" or importlib.util.find_spec("llama_cpp")]
    started = time.perf_counter()
    print(
        f"cost per question: {args.dataset}, {f'shard {args.shard}' if args.shard else ''} "
        f"{f'first {questions} questions' if questions else 'every question'}, distractor setting, "
        f"{'paper defaults' if args.full else 'CPU-sized knobs'}; "
        f"transformers weights: CAUSALRAG_DTYPE={settings().dtype}; {machine()}",
        flush=True,
    )
    out = Path(tempfile.mkdtemp(prefix="causalrag-cost-runs-"))
    results = {
        b: measure(
            b, methods, questions, args.full, out, modes, dataset=args.dataset, shard=args.shard, caches=caches
        )
        for b in backends
    }
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
