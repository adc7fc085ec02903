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

With the scored-token shortlist (issue 32; ``causalrag.tools.shortlist``) a scored row costs ``b_s`` instead
of ``b``: llama.cpp stops before its output projection (the row's hidden state, minus the first run, per
extra row) plus the shortlist's projection and normalizer in torch, per row. Every method runs with the
full softmax ("full", before) and with the shortlist ("shortlist", after), back to back on one loaded model;
the table gives time and work of both as multiples of the same mode's ``standard_rag``. The shortlist's
projection runs outside ``_decode``: it is its own column, and part of "outside".

Usage: ``python benchmarks/floor.py [--questions 3] [--dataset hotpotqa] [--shard I/N] [--methods all]
[--shortlist full,shortlist]`` (``--dataset "robust?split=dev" --shard 1/40``: the suite's short passages, where
fixed costs weigh more than on HotpotQA's ten paragraphs)
(``--methods triage,triage@route=vote``: a method beside itself with one parameter set otherwise; ``--nodes``:
each method's cells, rows, calls and work per graph node as well).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from _needs import need

need("llamacpp", "llama_cpp")

from cost import MODES, machine, prior_home, runs, switch  # noqa: E402  (importing cost.py first gives the run a fresh CAUSALRAG_HOME)
from langgraph.config import get_config  # noqa: E402

from causalrag.corpus import hotpotqa_questions  # noqa: E402
from causalrag.eval.runner import EvalConfig, run_eval  # noqa: E402
from causalrag.graphs.registry import methods as registry  # noqa: E402
from causalrag.tools import coalesce  # noqa: E402
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
        llm._decode(
            [(t, p, (0,), p >= n - wanted) for p, t in enumerate(tokens)], lambda k, logits: log_normalizer(logits)
        )

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
    costs = {"a": a, "b": b, "c": c}
    if llm.shortlist is not None:
        states: list[np.ndarray] = []

        def hidden(wanted: int) -> None:
            states.clear()
            llm.clear_cache()
            llm._decode(
                [(t, p, (0,), p >= n - wanted) for p, t in enumerate(tokens)],
                lambda k, h: states.append(h),
                hidden=True,
            )

        decoded = (median_seconds(lambda: hidden(rows), repeats) - median_seconds(lambda: hidden(1), repeats)) / (
            rows - 1
        )
        hidden(rows)
        where = [(0, p + 1) for p in range(n - rows, n)]
        projected = (
            median_seconds(lambda: llm.shortlist.logprobs(np.stack(states), [tokens + [tokens[0]]], where), repeats)
            / rows
        )
        costs |= {"b_s": decoded + projected, "b_s_decode": decoded, "b_s_projection": projected}
        llm.clear_cache()
    return costs


class Counted:
    """Counts the cells, logit rows (full, and hidden-state rows for the shortlist) and decode calls of everything
    ``llm._decode`` runs, its seconds (llama.cpp's decoding plus reading what it returns), and the seconds of the
    shortlist's projections; and the same per graph node (``by_node``: the LangGraph node a decode ran in)."""

    def __init__(self, llm: LlamaCppLLM) -> None:
        self.cells = self.rows = self.hidden_rows = 0
        self.seconds = self.projecting = 0.0
        self.by_node: dict[str, Counter[str]] = defaultdict(Counter)
        self.llm, self._decode = llm, llm._decode
        llm._decode = self
        if llm.shortlist is not None:
            project = llm.shortlist.logprobs

            def timed(*args, **kwargs):
                start = time.perf_counter()
                try:
                    return project(*args, **kwargs)
                finally:
                    self.projecting += time.perf_counter() - start

            llm.shortlist.logprobs = timed

    def __call__(self, entries, use=None, *, keep=(), hidden=False):
        wanted = sum(bool(e[3]) for e in entries)
        calls, start = self.llm.usage.forward_passes, time.perf_counter()
        try:
            return self._decode(entries, use, keep=keep, hidden=hidden)
        finally:
            seconds = time.perf_counter() - start
            self.cells += len(entries)
            self.rows += 0 if hidden else wanted
            self.hidden_rows += wanted if hidden else 0
            self.seconds += seconds
            node = self.by_node[current_node()]
            node.update(cells=len(entries), rows=0 if hidden else wanted, hidden_rows=wanted if hidden else 0,
                        calls=self.llm.usage.forward_passes - calls)
            node["decoding"] += seconds

    def totals(self) -> tuple[float, ...]:
        return self.cells, self.rows, self.hidden_rows, self.llm.usage.forward_passes, self.seconds, self.projecting


def current_node() -> str:
    """The graph node running now (LangGraph's run metadata), else the nodes whose ``generate`` calls the coalescer
    is decoding as one batch (it decodes them in a fresh context), else "outside" a graph run."""
    try:
        return str(get_config().get("metadata", {}).get("langgraph_node", "outside"))
    except RuntimeError:
        return _coalesced_for or "outside"


_coalesced_for = ""


class _NamedCall(coalesce._Call):
    """A coalesced ``generate`` call that remembers the node it came from."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.node = current_node()


def _decode_naming_callers(self, calls, settings) -> None:
    global _coalesced_for
    _coalesced_for = "+".join(sorted({c.node for c in calls}))
    try:
        _decode_group(self, calls, settings)
    finally:
        _coalesced_for = ""


_decode_group = coalesce.Coalescer._decode
coalesce._Call, coalesce.Coalescer._decode = _NamedCall, _decode_naming_callers  # the floor's node names only


FIGURES = ("cells", "rows", "hidden_rows", "calls", "decoding", "projecting")


def measure(
    llm: LlamaCppLLM,
    methods: list[str],
    questions: int | None,
    modes: tuple[str, ...],
    *,
    dataset: str = "hotpotqa",
    shard: str | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """{mode: {label: per-question figures}}; the modes of one method back to back (cost.py's order)."""
    kept = llm.shortlist
    counter, out = Counted(llm), Path(tempfile.mkdtemp(prefix="causalrag-floor-"))
    rows: dict[str, dict[str, dict[str, float]]] = {mode: {} for mode in modes}
    homes: dict[str, str] = {}
    print(f"  runs (answers per question) in {out}", flush=True)
    # CIS alone again with its p(K) cache warm: the other methods keep no disk cache a rerun would change
    chosen = [(m, label) for m, label in runs(methods, ("cold", "warm")) if m == label or m.startswith("cis")]
    for spec, label in chosen:
        method, _, assignment = spec.partition("@")  # "triage@route=vote": the method with that parameter
        name, _, value = assignment.partition("=")
        for mode in modes:
            prior_home(homes, label, mode)
            switch(llm, mode, kept)
            llm.clear_cache()
            before, nodes_before = counter.totals(), {n: Counter(c) for n, c in counter.by_node.items()}
            config = EvalConfig(
                dataset=dataset,
                methods=[method],
                limit=questions,
                shard=shard,
                params={method: {**registry()[method].cpu_params, **({name: value} if name else {})}},
                backend="llamacpp",
            )
            results = run_eval(
                config, out / f"{mode}-{spec}{'' if label == spec else '-warm'}", llm=llm, progress=False
            )
            counts = (now - then for now, then in zip(counter.totals(), before, strict=True))
            asked = len(results)
            row = rows[mode][label] = {"seconds": sum(r["wall_seconds"] for r in results) / asked}
            row |= {k: v / asked for k, v in zip(FIGURES, counts, strict=True)}
            row["answers"] = [r["prediction"] for r in results]
            row["nodes"] = {
                n: {k: v / asked for k, v in (c - nodes_before.get(n, Counter())).items()}
                for n, c in counter.by_node.items()
                if c != nodes_before.get(n)
            }
            print(f"  {mode} {label}: {row['seconds']:.2f} s/question ({machine()})", flush=True)
    switch(llm, "shortlist", kept)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=None, help="First N questions (default 3; all with --shard).")
    parser.add_argument("--dataset", default="hotpotqa", help="A `causalrag eval` dataset, e.g. 'robust?split=dev'.")
    parser.add_argument("--shard", default=None, help="I/N: a spread of the dataset's questions (by id hash).")
    parser.add_argument(
        "--methods",
        default="all",
        help="Comma-separated; standard_rag is always measured (the ratios' base). METHOD@NAME=VALUE runs a "
        "method with one parameter set, e.g. triage@route=vote.",
    )
    parser.add_argument(
        "--shortlist", default="full,shortlist", help="Scored tokens over the full vocabulary, the shortlist, or both."
    )
    parser.add_argument("--nodes", action="store_true", help="Also each method's work per graph node (first mode).")
    args = parser.parse_args()
    modes = tuple(m for m in MODES if m in args.shortlist.split(","))
    chosen = list(registry()) if args.methods == "all" else args.methods.split(",")
    methods = ["standard_rag", *[m for m in chosen if m != "standard_rag"]]
    questions = args.questions if args.questions or args.shard else 3
    which = f"shard {args.shard}" if args.shard else ""
    print(f"floor: {args.dataset} {which} {questions or 'every'} question(s), distractor setting, CPU-sized knobs, "
          f"llama.cpp; {machine()}", flush=True)
    llm = LlamaCppLLM(shortlist="shortlist" in modes)
    llm.generate(["Question: What is the capital of France?\nAnswer:"], max_new_tokens=4)  # warm-up
    unit = unit_costs(llm)
    print(f"unit costs: a = {unit['a'] * 1e3:.2f} ms a prompt token, b = {unit['b'] * 1e3:.2f} ms a logit row, "
          f"c = {unit['c'] * 1e3:.2f} ms a decode call", flush=True)
    if "b_s" in unit:
        print(f"shortlist: b_s = {unit['b_s'] * 1e3:.2f} ms a scored row ({unit['b_s_decode'] * 1e3:.2f} in llama.cpp, "
              f"{unit['b_s_projection'] * 1e3:.2f} projecting {len(llm.shortlist)} + the row's tokens)", flush=True)
    rows = measure(llm, methods, questions, modes, dataset=args.dataset, shard=args.shard)
    for mode_rows in rows.values():
        for r in mode_rows.values():
            r["work"] = work(r, unit)
    print(
        "\n| method | mode | s/q | × std | in llama.cpp s/q | projection s/q | outside s/q | cells/q | logit rows/q | "
        "shortlist rows/q | decode calls/q | work s/q | work × std | answers changed |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    first = rows[modes[0]]
    for label in first:
        for mode in modes:
            r, base = rows[mode][label], rows[mode]["standard_rag"]
            changed = sum(a != b for a, b in zip(first[label]["answers"], r["answers"], strict=True))
            print(
                f"| {label} | {mode} | {r['seconds']:.2f} | {r['seconds'] / base['seconds']:.2f} | "
                f"{r['decoding']:.2f} | {r['projecting']:.2f} | "
                f"{r['seconds'] - r['decoding']:.2f} | {r['cells']:.0f} | "
                f"{r['rows']:.0f} | {r['hidden_rows']:.0f} | {r['calls']:.0f} | "
                f"{r['work']:.2f} | {r['work'] / base['work']:.2f} | {changed if mode != modes[0] else '–'} |"
            )
    if args.nodes:
        print(node_table(rows[modes[0]], unit))
    print(f"\n{machine()}")


def work(counts: dict[str, float], unit: dict[str, float]) -> float:
    """Seconds the counted cells, logit rows (full and shortlist) and decode calls take at the unit costs."""
    return (
        unit["a"] * counts.get("cells", 0)
        + unit["b"] * counts.get("rows", 0)
        + unit.get("b_s", 0.0) * counts.get("hidden_rows", 0)
        + unit["c"] * counts.get("calls", 0)
    )


def node_table(rows: dict[str, dict], unit: dict[str, float]) -> str:
    """Each method's work per graph node, per question asked, at the unit costs (a node's cells, rows and calls)."""
    base = rows["standard_rag"]["work"]
    lines = [
        "\n| method | node | cells/q | logit rows/q | shortlist rows/q | decode calls/q | in llama.cpp s/q "
        "| work s/q | work × standard_rag's |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, r in rows.items():
        for node, c in r["nodes"].items():
            seconds = work(c, unit)
            lines.append(
                f"| {label} | {node} | {c.get('cells', 0):.0f} | {c.get('rows', 0):.1f} "
                f"| {c.get('hidden_rows', 0):.1f} | {c.get('calls', 0):.1f} | {c.get('decoding', 0):.2f} "
                f"| {seconds:.2f} | {seconds / base:.2f} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
