"""Summarize a run folder: a method × metric table with 95 % bootstrap intervals, Markdown, CSV and plots.

Rows are (method, K injected passages). Answer metrics are means over questions with a
percentile bootstrap interval (questions resampled with replacement, seeded); retrieval metrics
average over results that returned evidence; ``misled`` (the answer states a wrong answer that the
injected passages assert) only exists for K > 0. Cost is per question; ``× std`` divides a method's
seconds (and LLM calls) per question by ``standard_rag``'s at the same K when the run has it.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from causalrag.errors import CausalRAGError
from causalrag.eval.runner import CONFIG, read_results

QUALITY = ("em", "f1", "acc", "recall", "ndcg", "misled")
COST = ("llm_calls", "prompt_tokens", "new_tokens", "seconds")
LABELS = {"em": "EM", "f1": "F1", "acc": "Acc", "recall": "R@k", "ndcg": "NDCG@k", "misled": "misled",
          "llm_calls": "calls/q", "prompt_tokens": "prompt tok/q", "new_tokens": "new tok/q", "seconds": "s/q"}
BASELINE = "standard_rag"


@dataclass
class Stat:
    mean: float | None
    low: float | None = None
    high: float | None = None
    n: int = 0

    def text(self, digits: int = 2, sep: str = " ") -> str:
        """``mean (low–high)``; ``sep="\n"`` puts the interval on its own line (narrow terminals)."""
        if self.mean is None:
            return "–"
        if self.low is None:
            return f"{self.mean:.{digits}f}"
        return f"{self.mean:.{digits}f}{sep}({self.low:.{digits}f}–{self.high:.{digits}f})"


def bootstrap(values: Sequence[float], *, resamples: int = 2000, seed: int = 0, level: float = 0.95) -> Stat:
    """Mean and percentile bootstrap interval; None values are left out."""
    data = np.asarray([v for v in values if v is not None], dtype=float)
    if data.size == 0:
        return Stat(None)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    return Stat(float(data.mean()), float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail)), int(data.size))


def summarize(rows: Sequence[dict], *, resamples: int = 2000, seed: int = 0) -> list[dict]:
    """One summary per (method, K): n, errors, quality stats with intervals, cost means and ratios."""
    groups: dict[tuple[str, int], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["method"], int(r["inject"])), []).append(r)
    summary = []
    for (method, k), group in groups.items():
        entry: dict = {"method": method, "inject": k, "n": len(group), "errors": sum(1 for r in group if r.get("error"))}
        for metric in QUALITY:
            entry[metric] = bootstrap([r.get(metric) for r in group], resamples=resamples, seed=seed)
        for metric in COST:
            entry[metric] = Stat(float(np.mean([r.get(metric) or 0 for r in group])))
        entry["fallbacks"] = sum(r.get("fallbacks") or 0 for r in group)
        summary.append(entry)
    baseline = {e["inject"]: e for e in summary if e["method"] == BASELINE}
    for e in summary:
        ref = baseline.get(e["inject"])
        for metric in ("seconds", "llm_calls"):
            denominator = ref[metric].mean if ref else None
            e[f"{metric}_ratio"] = e[metric].mean / denominator if denominator else None
    order = {m: i for i, m in enumerate(dict.fromkeys(r["method"] for r in rows))}
    return sorted(summary, key=lambda e: (e["inject"], order[e["method"]]))


# --------------------------------------------------------------------------- outputs
QUALITY_COLUMNS = ["method", "K", "n", *(LABELS[m] for m in QUALITY)]
COST_COLUMNS = ["calls/q", "new tok/q", "s/q", "× std s", "× std calls", "errors"]
COLUMNS = QUALITY_COLUMNS + COST_COLUMNS


def table_rows(summary: Sequence[dict], *, sep: str = " ") -> list[list[str]]:
    """The report table as strings, in ``COLUMNS`` order (``sep`` goes between a mean and its interval)."""
    ratio = lambda v: "–" if v is None else f"{v:.2f}"  # noqa: E731
    return [
        [e["method"], str(e["inject"]), str(e["n"]), *(e[m].text(sep=sep) for m in QUALITY),
         e["llm_calls"].text(1), e["new_tokens"].text(0), e["seconds"].text(2),
         ratio(e["seconds_ratio"]), ratio(e["llm_calls_ratio"]), str(e["errors"])]
        for e in summary
    ]


FALLBACK_COLUMNS = ["method", "step", "runs", "fell back", "rate"]


def fallback_rows(rows: Sequence[dict]) -> list[list[str]]:
    """Per method and step that can fall back: runs, runs that fell back (any ``*fallback*`` count > 0) and the rate."""
    totals: dict[tuple[str, str], list[int]] = {}
    for r in rows:
        for step, figures in (r.get("fallback_steps") or {}).items():
            total = totals.setdefault((r["method"], step), [0, 0])
            total[0] += figures["runs"]
            total[1] += figures["fallbacks"]
    return [[m, step, str(runs), str(fell), f"{fell / runs:.0%}" if runs else "–"] for (m, step), (runs, fell) in totals.items()]


def markdown_table(summary: Sequence[dict]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(summary)]
    return "\n".join(lines)


def fallback_markdown(rows: Sequence[dict]) -> str:
    """The fallback table (empty when no step reported any)."""
    table = fallback_rows(rows)
    if not table:
        return ""
    lines = ["Parse fallbacks per judgment step (a step's run counts once however many of its outputs fell back):", "",
             "| " + " | ".join(FALLBACK_COLUMNS) + " |", "|" + "---|" * len(FALLBACK_COLUMNS)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in table]) + "\n\n"


def write_csv(summary: Sequence[dict], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["method", "inject", "n", "errors", *(f"{m}{s}" for m in QUALITY for s in ("", "_low", "_high")),
                         *COST, "seconds_ratio", "llm_calls_ratio", "fallbacks"])
        for e in summary:
            writer.writerow([e["method"], e["inject"], e["n"], e["errors"],
                             *(v for m in QUALITY for v in (e[m].mean, e[m].low, e[m].high)),
                             *(e[m].mean for m in COST), e["seconds_ratio"], e["llm_calls_ratio"], e["fallbacks"]])


def plot_accuracy(summary: Sequence[dict], path: Path) -> None:
    """Acc and F1 against the number of injected passages, one line per method, 95 % intervals as bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
    for ax, metric in zip(axes, ("acc", "f1")):
        for method in dict.fromkeys(e["method"] for e in summary):
            points = sorted((e["inject"], e[metric]) for e in summary if e["method"] == method and e[metric].mean is not None)
            if not points:
                continue
            ks = [k for k, _ in points]
            means = np.array([s.mean for _, s in points])
            errors = np.array([[s.mean - s.low for _, s in points], [s.high - s.mean for _, s in points]])
            ax.errorbar(ks, means, yerr=errors, marker="o", capsize=3, label=method)
        ax.set_xlabel("injected misleading passages K")
        ax.set_ylabel(LABELS[metric])
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    fig.suptitle("Accuracy vs injected distractors (95 % bootstrap intervals)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_cost(summary: Sequence[dict], path: Path) -> None:
    """Seconds and LLM calls per question for each method (averaged over K)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = list(dict.fromkeys(e["method"] for e in summary))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, metric in zip(axes, ("seconds", "llm_calls")):
        values = [np.mean([e[metric].mean for e in summary if e["method"] == m]) for m in methods]
        ax.bar(methods, values, color="tab:blue")
        ax.set_ylabel(LABELS[metric])
        ax.tick_params(axis="x", rotation=30)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle("Cost per question")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


@dataclass
class Report:
    summary: list[dict]
    markdown: Path
    csv: Path
    plots: list[Path]
    fallbacks: list[list[str]]
    """``fallback_rows``: per method and judgment step, runs, runs that fell back, rate."""


def write_report(folder: str | Path, *, resamples: int = 2000) -> Report:
    """Read ``folder/results.jsonl``; write ``report.md``, ``report.csv``, ``accuracy_vs_inject.png``, ``cost.png``."""
    folder = Path(folder)
    rows = read_results(folder)
    if not rows:
        raise CausalRAGError(f"No results in {folder}: run `causalrag eval --out {folder}` first.")
    config = json.loads((folder / CONFIG).read_text(encoding="utf-8")) if (folder / CONFIG).exists() else {}
    summary = summarize(rows, resamples=resamples)
    plots = [folder / "accuracy_vs_inject.png", folder / "cost.png"]
    plot_accuracy(summary, plots[0])
    plot_cost(summary, plots[1])
    described = ", ".join(f"{k}={config[k]}" for k in ("dataset", "setting", "seed", "instruction", "model", "backend", "params") if k in config)
    markdown = folder / "report.md"
    markdown.write_text(
        f"# Evaluation report: {folder.name}\n\n{described}\n\n"
        f"Mean (95 % bootstrap interval, {resamples} resamples) over questions; K = injected misleading passages; "
        "R@k/NDCG@k over the evidence each method used; misled = the answer states a wrong answer the injected "
        f"passages assert; × std = ratio to {BASELINE} at the same K.\n\n"
        f"{markdown_table(summary)}\n\n{fallback_markdown(rows)}![accuracy](accuracy_vs_inject.png)\n\n![cost](cost.png)\n",
        encoding="utf-8",
    )
    csv_path = folder / "report.csv"
    write_csv(summary, csv_path)
    return Report(summary, markdown, csv_path, plots, fallback_rows(rows))
