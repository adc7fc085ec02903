"""Summarize a run folder: a method × metric table, and a paired comparison of every method with a baseline.

Both give 95 % bootstrap intervals, as Markdown, CSV and plots.

**Per-method table** (``report.md``): rows are (method, K injected passages). Answer metrics are means
over questions with a BCa bootstrap interval (``bootstrap``: questions resampled with replacement,
seeded); retrieval metrics average over results that returned evidence; ``misled`` (the answer states
a wrong answer that the pool's planted or injected passages assert) exists only where such answers do.
Cost is per question; ``× std`` divides a method's seconds (and LLM calls) per question by
``standard_rag``'s at the same K when the run has it. Then, where the results record them: the share of
each routed method's results per route (``route_table``), how often two methods give the same normalized
answer to the same question (``agreement``) and each method's most common node paths (``common_paths``).

**Paired table** (``paired.md``, ``paired_summary``): each method against a baseline on the
questions both answered (same ``question_id`` and K; a result without its partner is left out and
counted), per condition of the question set, per pooled group of conditions (``CONDITION_GROUPS``)
and over all questions. It gives both accuracies, ΔAcc = Acc(method) − Acc(baseline) with a bootstrap
interval of the mean per-question difference (the questions are resampled, so both answers to a
question stay together), Δmisled likewise where misled is defined, wins (method right, baseline
wrong) and losses (the reverse), and McNemar's exact p: the two-sided binomial test of wins against
losses (only the questions the two disagree on carry information). A result that raised (``error``)
counts as a wrong answer. Results of runs written before conditions were recorded only pool into
``all``.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from types import ModuleType
from typing import Literal, TypedDict

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from causalrag.errors import CausalRAGError
from causalrag.eval.runner import CONFIG, ResultRow, read_results
from causalrag.text import normalize_answer

QualityMetric = Literal["em", "f1", "acc", "recall", "ndcg", "misled"]
"""A result's answer or retrieval metric (a mean with an interval in the report)."""
CostMetric = Literal["llm_calls", "prompt_tokens", "new_tokens", "seconds"]
"""A result's cost figure (a mean per question in the report)."""
QUALITY: tuple[QualityMetric, ...] = ("em", "f1", "acc", "recall", "ndcg", "misled")
COST: tuple[CostMetric, ...] = ("llm_calls", "prompt_tokens", "new_tokens", "seconds")
LABELS = {"em": "EM", "f1": "F1", "acc": "Acc", "recall": "R@k", "ndcg": "NDCG@k", "misled": "misled",
          "llm_calls": "calls/q", "prompt_tokens": "prompt tok/q", "new_tokens": "new tok/q", "seconds": "s/q"}
BASELINE = "standard_rag"
CONDITION_GROUPS: dict[str, tuple[str, ...]] = {
    "clean": ("clean_single", "clean_multi"),
    "conflict": ("conflict_majority_right", "conflict_majority_wrong", "correlation_trap", "planted_instruction"),
    "worst_case": ("all_wrong", "no_relevant"),
}
"""Pooled conditions of the robustness suite: the groups its targets are stated on
(the Results page, docs/results.md).

A group is reported for a method when the paired questions hold every one of its conditions, so a pooled figure
always means the same pool."""
ALL = "all"
"""The pool of every paired question (also where results carry no condition)."""


@dataclass
class Stat:
    """A mean over questions and its interval (none for a cost, which has no interval)."""

    mean: float | None
    """None when no question had a value."""
    low: float | None = None
    high: float | None = None
    n: int = 0
    """The number of values."""

    def text(self, digits: int = 2, sep: str = " ", *, signed: bool = False) -> str:
        r"""The figure as text: ``mean (low–high)``, or ``+mean [+low, +high]`` with ``signed``.

        ``signed`` suits differences, whose bounds may be negative; ``sep="\n"`` puts the interval on its own
        line (narrow terminals).
        """
        if self.mean is None:
            return "–"
        form = f"+.{digits}f" if signed else f".{digits}f"
        if self.low is None:
            return f"{self.mean:{form}}"
        if signed:
            return f"{self.mean:{form}}{sep}[{self.low:{form}}, {self.high:{form}}]"
        return f"{self.mean:{form}}{sep}({self.low:{form}}–{self.high:{form}})"


def bootstrap(values: Sequence[float | None], *, resamples: int = 2000, seed: int = 0, level: float = 0.95) -> Stat:
    """The mean of ``values`` and its BCa bootstrap interval; None values are left out.

    The interval is ``scipy.stats.bootstrap``'s, seeded: the same data give the same interval. BCa rather than
    the percentile method: our means are proportions, often near 0 or 1 (misled rates, accuracies of hard
    conditions) on 25–200 questions, where the bootstrap distribution is skewed and the percentile interval is
    too narrow on the side of the bound; BCa corrects that bias and skew, and is scipy's default.
    ``research/scripts/bootstrap.py`` compares the two: the same intervals to ±0.005 at rates near 1/2, and for 100
    questions at a rate of 0.04 the percentile interval held the true rate in 88 % of simulated samples, BCa in
    97 %. A sample whose values are all equal (every question right, n = 1, a difference that is always 0) has
    the interval [mean, mean], which BCa cannot compute; an empty one has no mean (shown "–").

    Args:
        values: One value per question (None: the question has none).
        resamples: Bootstrap resamples.
        seed: Seed of the resampling.
        level: Confidence level of the interval.
    """
    data = np.asarray([v for v in values if v is not None], dtype=float)
    if data.size == 0:
        return Stat(None)
    mean = float(data.mean())
    if np.all(data == data[0]):
        return Stat(mean, mean, mean, int(data.size))
    # batch=200 bounds the memory of resamples and jackknife (n × n floats without it) at n ~ 10^4
    result = stats.bootstrap((data,), np.mean, n_resamples=resamples, confidence_level=level, method="BCa",
                             vectorized=True, batch=200, rng=np.random.default_rng(seed))
    low, high = result.confidence_interval
    return Stat(mean, float(low), float(high), int(data.size))


class MethodSummary(TypedDict, total=False):
    """One row of the per-method table: a method's results at one K (:func:`summarize` sets every key)."""

    method: str
    inject: int
    """K, the number of injected misleading passages."""
    n: int
    """Results."""
    errors: int
    """Results whose method raised."""
    em: Stat
    f1: Stat
    acc: Stat
    recall: Stat
    ndcg: Stat
    misled: Stat
    llm_calls: Stat
    prompt_tokens: Stat
    new_tokens: Stat
    seconds: Stat
    fallbacks: int
    """Parse fallbacks over the results."""
    seconds_ratio: float | None
    """Seconds per question over :data:`BASELINE`'s at the same K (None without it)."""
    llm_calls_ratio: float | None
    """LLM calls per question over :data:`BASELINE`'s at the same K (None without it)."""


def summarize(rows: Sequence[ResultRow], *, resamples: int = 2000, seed: int = 0) -> list[MethodSummary]:
    """One summary per (method, K): n, errors, quality stats with intervals, cost means and ratios."""
    groups: dict[tuple[str, int], list[ResultRow]] = {}
    for r in rows:
        groups.setdefault((r["method"], int(r["inject"])), []).append(r)
    summary: list[MethodSummary] = []
    for (method, k), group in groups.items():
        entry: MethodSummary = {
            "method": method,
            "inject": k,
            "n": len(group),
            "errors": sum(1 for r in group if r.get("error")),
        }
        for metric in QUALITY:
            entry[metric] = bootstrap([r.get(metric) for r in group], resamples=resamples, seed=seed)
        for figure in COST:
            entry[figure] = Stat(float(np.mean([r.get(figure) or 0 for r in group])))
        entry["fallbacks"] = sum(r.get("fallbacks") or 0 for r in group)
        summary.append(entry)
    baseline = {e["inject"]: e for e in summary if e["method"] == BASELINE}
    for e in summary:
        ref = baseline.get(e["inject"])
        e["seconds_ratio"] = _ratio(e["seconds"], ref["seconds"] if ref else None)
        e["llm_calls_ratio"] = _ratio(e["llm_calls"], ref["llm_calls"] if ref else None)
    order = {m: i for i, m in enumerate(dict.fromkeys(r["method"] for r in rows))}
    return sorted(summary, key=lambda e: (e["inject"], order[e["method"]]))


def _ratio(cost: Stat, baseline: Stat | None) -> float | None:
    """A mean cost over the baseline's (None without a baseline, or when its cost is 0)."""
    denominator = baseline.mean if baseline else None
    return cost.mean / denominator if denominator and cost.mean is not None else None


# --------------------------------------------------------------------------- paired comparison with a baseline
class PairedFigures(TypedDict):
    """The paired figures of a method against the baseline on one cell of questions (:func:`paired_summary`)."""

    n: int
    """Paired questions."""
    base_acc: float
    acc: float
    d_acc: Stat
    """ΔAcc = Acc(method) − Acc(baseline), with the interval of the mean per-question difference."""
    n_misled: int
    """Paired questions where misled is defined for both."""
    base_misled: float | None
    misled: float | None
    d_misled: Stat
    wins: int
    """Questions the method got right and the baseline wrong."""
    losses: int
    """Questions the baseline got right and the method wrong."""
    p: float
    """McNemar's exact two-sided p (:func:`mcnemar_exact`)."""
    errors: int
    """Results of the method that raised (counted as wrong)."""
    base_errors: int


class PairedEntry(PairedFigures):
    """One row of the paired table: a method against the baseline at one K, on one condition or pool."""

    method: str
    inject: int
    condition: str
    """A condition, a pooled group (:data:`CONDITION_GROUPS`) or :data:`ALL`."""
    unpaired: tuple[int, int]
    """(The method's results without a baseline partner, the baseline's results at the method's K values without
    a partner), left out of every figure."""


def correct(row: ResultRow) -> float:
    """Containment accuracy of a result; a result that raised (``error``) is a wrong answer."""
    return 0.0 if row.get("error") else float(row.get("acc") or 0)


def mcnemar_exact(wins: int, losses: int) -> float:
    """McNemar's exact two-sided p: the binomial test of ``wins`` among the ``wins + losses`` discordant questions.

    The test is against 1/2; p is 1 when the two never disagree.
    """
    return float(stats.binomtest(wins, wins + losses, 0.5).pvalue) if wins + losses else 1.0


def _pools(conditions: Sequence[str]) -> list[tuple[str, set[str] | None]]:
    """The cells of a paired table, each with its conditions (``None``: every question).

    Each named condition (the suite's order, then others as they come), each group whose conditions are all
    present, then ``all``.
    """
    suite = [c for members in CONDITION_GROUPS.values() for c in members]
    order = {c: i for i, c in enumerate(suite)}
    named = sorted(dict.fromkeys(c for c in conditions if c), key=lambda c: order.get(c, len(suite)))
    groups = [(name, set(members)) for name, members in CONDITION_GROUPS.items() if set(members) <= set(named)]
    return [(c, {c}) for c in named] + groups + [(ALL, None)]


def _compare(pairs: Sequence[tuple[ResultRow, ResultRow]], *, resamples: int, seed: int) -> PairedFigures:
    """The paired figures of one cell: accuracies, Δ with intervals, wins/losses, McNemar's p, errors."""
    acc = np.array([correct(m) for m, _ in pairs])
    base = np.array([correct(b) for _, b in pairs])
    misled = np.array([(m["misled"], b["misled"]) for m, b in pairs
                       if m.get("misled") is not None and b.get("misled") is not None], dtype=float).reshape(-1, 2)
    wins, losses = int(np.sum(acc > base)), int(np.sum(acc < base))
    return {
        "n": len(pairs), "base_acc": float(base.mean()), "acc": float(acc.mean()),
        "d_acc": bootstrap(acc - base, resamples=resamples, seed=seed),
        "n_misled": len(misled),
        "base_misled": float(misled[:, 1].mean()) if len(misled) else None,
        "misled": float(misled[:, 0].mean()) if len(misled) else None,
        "d_misled": bootstrap(misled[:, 0] - misled[:, 1], resamples=resamples, seed=seed),
        "wins": wins, "losses": losses, "p": mcnemar_exact(wins, losses),
        "errors": sum(1 for m, _ in pairs if m.get("error")), "base_errors": sum(1 for _, b in pairs if b.get("error")),
    }


def paired_summary(
    rows: Sequence[ResultRow], against: str = BASELINE, *, resamples: int = 2000, seed: int = 0
) -> list[PairedEntry]:
    """Every method but ``against`` paired with it, one entry per (method, K, condition or pool): see the module doc.

    Each entry also holds ``unpaired``: (the method's results without a baseline partner, the baseline's
    results at the method's K values without a partner), left out of every figure.
    """
    base = {(r["question_id"], int(r["inject"])): r for r in rows if r["method"] == against}
    if not base:
        raise CausalRAGError(f"The baseline {against!r} has no results in the run(s): run "
                             f"`causalrag eval --methods {against}` on the same dataset and settings, "
                             "or name a method that has results with --against.")
    methods = list(dict.fromkeys(r["method"] for r in rows if r["method"] != against))
    if not methods:
        raise CausalRAGError(
            f"The run(s) hold only the baseline {against!r}: add the results of a method to compare with it."
        )
    summary: list[PairedEntry] = []
    for method in methods:
        mine = [r for r in rows if r["method"] == method]
        pairs = [(r, base[key]) for r in mine if (key := (r["question_id"], int(r["inject"]))) in base]
        if not pairs:
            raise CausalRAGError(f"{method} and the baseline {against} share no question (the same question_id and K): "
                                 "run both on the same dataset with the same --inject values.")
        ks = sorted({int(m["inject"]) for m, _ in pairs})
        unpaired = (len(mine) - len(pairs), sum(1 for key in base if key[1] in ks) - len(pairs))
        for k in ks:
            at_k = [p for p in pairs if int(p[0]["inject"]) == k]
            conditions = [m.get("condition") or b.get("condition") or "" for m, b in at_k]
            for name, members in _pools(conditions):
                cell = [p for p, c in zip(at_k, conditions, strict=True) if members is None or c in members]
                summary.append({"method": method, "inject": k, "condition": name, "unpaired": unpaired,
                                **_compare(cell, resamples=resamples, seed=seed)})
    return summary


# --------------------------------------------------------------------------- outputs
QUALITY_COLUMNS = ["method", "K", "n", *(LABELS[m] for m in QUALITY)]
COST_COLUMNS = ["calls/q", "new tok/q", "s/q", "× std s", "× std calls", "errors"]
COLUMNS = QUALITY_COLUMNS + COST_COLUMNS


def table_rows(summary: Sequence[MethodSummary], *, sep: str = " ") -> list[list[str]]:
    """The report table as strings, in ``COLUMNS`` order (``sep`` goes between a mean and its interval)."""
    return [
        [e["method"], str(e["inject"]), str(e["n"]), *(e[m].text(sep=sep) for m in QUALITY),
         e["llm_calls"].text(1), e["new_tokens"].text(0), e["seconds"].text(2),
         _rate(e["seconds_ratio"]), _rate(e["llm_calls_ratio"]), str(e["errors"])]
        for e in summary
    ]


FALLBACK_COLUMNS = ["method", "step", "runs", "fell back", "rate"]


def fallback_rows(rows: Sequence[ResultRow]) -> list[list[str]]:
    """Per method and step that can fall back: runs, runs that fell back (any ``*fallback*`` count > 0) and the rate."""
    totals: dict[tuple[str, str], list[int]] = {}
    for r in rows:
        for step, figures in (r.get("fallback_steps") or {}).items():
            total = totals.setdefault((r["method"], step), [0, 0])
            total[0] += figures["runs"]
            total[1] += figures["fallbacks"]
    return [
        [m, step, str(runs), str(fell), f"{fell / runs:.0%}" if runs else "–"]
        for (m, step), (runs, fell) in totals.items()
    ]


# --------------------------------------------------------------------------- routes, agreement, paths
ROUTES = ("keep", "vote", "knowledge", "focus")
"""The routes of a routed method's decision (``row["route"]``), in the order the report shows them."""
NO_ROUTE = "no route"
"""The column of a routed method's results without a route (a question that raised)."""
AGREEMENT_COLUMNS = ["method A", "method B", "same answers / shared questions (share)"]
PATH_COLUMNS = ["method", "path", "results"]
TOP_PATHS = 3


def _paired_key(row: ResultRow) -> tuple[str, int]:
    """The question a result answers, as ``paired_summary`` pairs them: (question_id, K)."""
    return row["question_id"], int(row["inject"])


def _share(count: int, total: int) -> str:
    """``count (share)``, e.g. ``3 (60%)``."""
    return f"{count} ({count / total:.0%})" if total else str(count)


def route_counts(rows: Sequence[ResultRow]) -> dict[tuple[str, int], Counter[str]]:
    """Per (method, K) of a method that routed any question: how many of its results took each route.

    Results without a route count under ``NO_ROUTE``, as do those of runs written before routes were recorded.
    """
    routed = {r["method"] for r in rows if r.get("route") is not None}
    counts: dict[tuple[str, int], Counter[str]] = {}
    for r in rows:
        if r["method"] in routed:
            counts.setdefault((r["method"], int(r["inject"])), Counter())[r.get("route") or NO_ROUTE] += 1
    return counts


def route_columns(counts: dict[tuple[str, int], Counter[str]]) -> list[str]:
    """The route table's columns: method, K, n, the four routes, then any other route and ``NO_ROUTE`` seen."""
    seen = {route for c in counts.values() for route in c}
    others = sorted(seen - set(ROUTES) - {NO_ROUTE})
    return ["method", "K", "n", *ROUTES, *others, *([NO_ROUTE] if NO_ROUTE in seen else [])]


def route_table(rows: Sequence[ResultRow]) -> tuple[list[str], list[list[str]]]:
    """The route shares as (columns, rows of text): per routed method and K, each route's count and share."""
    counts = route_counts(rows)
    columns = route_columns(counts)
    table = []
    for (method, k), c in counts.items():
        n = sum(c.values())
        table.append([method, str(k), str(n), *(_share(c[route], n) for route in columns[3:])])
    return columns, table


class Agreement(TypedDict):
    """How often two methods give the same answer (:func:`agreement`)."""

    a: str
    """One method (the first of the two to come in the results)."""
    b: str
    """The other method."""
    same: int
    """Shared questions on which their normalized answers are equal."""
    shared: int
    """Questions both answered (same question and K)."""


def agreement(rows: Sequence[ResultRow]) -> list[Agreement]:
    """Per pair of methods (in the order they come): the questions both answered, and their equal answers.

    Questions are paired as ``paired_summary`` pairs them (same question and K); answers are compared
    normalized, and a result that raised or answered nothing agrees with none.
    """
    answers: dict[str, dict[tuple[str, int], str]] = {}
    for r in rows:
        if r.get("question_id") is None:
            continue
        said = "" if r.get("error") else normalize_answer(str(r.get("prediction") or ""))
        answers.setdefault(r["method"], {})[_paired_key(r)] = said
    pairs: list[Agreement] = []
    for a, b in combinations(answers, 2):
        shared = answers[a].keys() & answers[b].keys()
        same = sum(1 for q in shared if answers[a][q] and answers[a][q] == answers[b][q])
        pairs.append({"a": a, "b": b, "same": same, "shared": len(shared)})
    return [p for p in pairs if p["shared"]]


def agreement_rows(rows: Sequence[ResultRow]) -> list[list[str]]:
    """The agreement table as text, in ``AGREEMENT_COLUMNS`` order."""
    return [[p["a"], p["b"], f"{p['same']} / {p['shared']} ({p['same'] / p['shared']:.0%})"] for p in agreement(rows)]


def common_paths(rows: Sequence[ResultRow], top: int = TOP_PATHS) -> dict[str, list[tuple[str, int]]]:
    """Per method, its ``top`` most common node paths and how many results took each.

    A path is its node names joined with " → "; results without a recorded path (older runs) are left out.
    """
    paths: dict[str, Counter[str]] = {}
    for r in rows:
        if r.get("path") is not None:
            paths.setdefault(r["method"], Counter())[" → ".join(map(str, r["path"])) or "–"] += 1
    return {m: c.most_common(top) for m, c in paths.items()}


def path_rows(rows: Sequence[ResultRow]) -> list[list[str]]:
    """The common paths as text, in ``PATH_COLUMNS`` order."""
    return [[m, path, str(n)] for m, top in common_paths(rows).items() for path, n in top]


def _markdown_section(intro: str, columns: Sequence[str], table: Sequence[Sequence[str]]) -> str:
    """An intro line and a Markdown table, followed by a blank line; empty when the table is."""
    if not table:
        return ""
    lines = [intro, "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in table]) + "\n\n"


def routes_markdown(rows: Sequence[ResultRow]) -> str:
    """The route-share, agreement and common-path sections of ``report.md`` (each empty without data)."""
    columns, routes = route_table(rows)
    return (
        _markdown_section("Routes taken: per routed method and K, its results per route (share of its results):",
                          columns, routes)
        + _markdown_section("Answer agreement: per pair of methods, the questions (same question and K) on which "
                            "their normalized answers are equal, of the questions both answered:",
                            AGREEMENT_COLUMNS, agreement_rows(rows))
        + _markdown_section(f"Most common node paths: per method, its {TOP_PATHS} most frequent paths through "
                            "the graph and how many results took each:", PATH_COLUMNS, path_rows(rows))
    )


def markdown_table(summary: Sequence[MethodSummary]) -> str:
    """The per-method table (:func:`table_rows`) in Markdown."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(summary)]
    return "\n".join(lines)


def fallback_markdown(rows: Sequence[ResultRow]) -> str:
    """The fallback table (empty when no step reported any)."""
    table = fallback_rows(rows)
    if not table:
        return ""
    lines = ["Parse fallbacks per judgment step (a step's run counts once however many of its outputs fell back):", "",
             "| " + " | ".join(FALLBACK_COLUMNS) + " |", "|" + "---|" * len(FALLBACK_COLUMNS)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in table]) + "\n\n"


def write_csv(summary: Sequence[MethodSummary], path: Path) -> None:
    """Write the per-method table to ``path`` as CSV: every figure as a number, each interval's bounds apart."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(
            [
                "method",
                "inject",
                "n",
                "errors",
                *(f"{m}{s}" for m in QUALITY for s in ("", "_low", "_high")),
                *COST,
                "seconds_ratio",
                "llm_calls_ratio",
                "fallbacks",
            ]
        )
        for e in summary:
            writer.writerow([e["method"], e["inject"], e["n"], e["errors"],
                             *(v for m in QUALITY for v in (e[m].mean, e[m].low, e[m].high)),
                             *(e[m].mean for m in COST), e["seconds_ratio"], e["llm_calls_ratio"], e["fallbacks"]])


def _pyplot() -> ModuleType:
    """Matplotlib's pyplot on the Agg backend (files only: no display is needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _bars(figures: Sequence[Stat]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The means of ``figures``, and their intervals as matplotlib's ``yerr``: each bound's distance from the mean."""
    means, low, high = np.array([(s.mean, s.low, s.high) for s in figures], dtype=float).reshape(-1, 3).T
    return means, np.array([means - low, high - means])


def plot_accuracy(summary: Sequence[MethodSummary], path: Path) -> None:
    """Acc and F1 against the number of injected passages, one line per method, 95 % intervals as bars."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
    metrics: tuple[QualityMetric, ...] = ("acc", "f1")
    for ax, metric in zip(axes, metrics, strict=True):
        for method in dict.fromkeys(e["method"] for e in summary):
            points = sorted(
                (e["inject"], e[metric]) for e in summary if e["method"] == method and e[metric].mean is not None
            )
            if not points:
                continue
            ks = [k for k, _ in points]
            means, errors = _bars([s for _, s in points])
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


def plot_cost(summary: Sequence[MethodSummary], path: Path) -> None:
    """Seconds and LLM calls per question for each method (averaged over K)."""
    plt = _pyplot()
    methods = list(dict.fromkeys(e["method"] for e in summary))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    metrics: tuple[CostMetric, ...] = ("seconds", "llm_calls")
    for ax, metric in zip(axes, metrics, strict=True):
        values = [np.mean([e[metric].mean for e in summary if e["method"] == m]) for m in methods]
        ax.bar(methods, values, color="tab:blue")
        ax.set_ylabel(LABELS[metric])
        ax.tick_params(axis="x", rotation=30)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle("Cost per question")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


PAIRED_COLUMNS = ["method", "K", "condition", "n", "base Acc", "Acc", "ΔAcc [95 % CI]", "base misled", "misled",
                  "Δmisled [95 % CI]", "wins", "losses", "McNemar p", "errors"]
TERMINAL_COLUMNS = ["condition", "n", "Acc", "ΔAcc", "misled", "Δmisled", "W/L", "p", "err"]
TERMINAL_LEGEND = ("Acc, misled: baseline → method; Δ = method − baseline [95 % bootstrap interval]; "
                   "W/L = wins/losses; p = McNemar's exact p; err = errors of method/baseline, counted as wrong")


def _rate(value: float | None) -> str:
    """A rate or ratio to two decimals, or "–" for none."""
    return "–" if value is None else f"{value:.2f}"


def _paired_cells(e: PairedEntry, sep: str = " ") -> dict[str, str]:
    """One paired entry as text, by ``PAIRED_COLUMNS`` name; ``errors`` is the method's/the baseline's."""
    return {
        "method": e["method"], "K": str(e["inject"]), "condition": e["condition"], "n": str(e["n"]),
        "base Acc": _rate(e["base_acc"]), "Acc": _rate(e["acc"]),
        "ΔAcc [95 % CI]": e["d_acc"].text(sep=sep, signed=True),
        "base misled": _rate(e["base_misled"]), "misled": _rate(e["misled"]),
        "Δmisled [95 % CI]": e["d_misled"].text(sep=sep, signed=True),
        "wins": str(e["wins"]), "losses": str(e["losses"]),
        "McNemar p": "<0.001" if e["p"] < 0.001 else f"{e['p']:.3f}",
        "errors": f"{e['errors']}/{e['base_errors']}",
    }


def paired_rows(summary: Sequence[PairedEntry]) -> list[list[str]]:
    """The paired table as strings, in ``PAIRED_COLUMNS`` order."""
    return [[cells[c] for c in PAIRED_COLUMNS] for cells in map(_paired_cells, summary)]


def paired_blocks(summary: Sequence[PairedEntry], against: str) -> list[tuple[str, list[list[str]]]]:
    """The paired table for a terminal, narrower: one titled block per (method, K).

    Rows are in ``TERMINAL_COLUMNS`` order: baseline → method in one cell, each interval on its own line.
    """
    blocks: dict[str, list[list[str]]] = {}
    for e in summary:
        c = _paired_cells(e, sep="\n")
        blocks.setdefault(f"{e['method']} − {against} (K = {e['inject']})", []).append([
            c["condition"], c["n"], f"{c['base Acc']} → {c['Acc']}", c["ΔAcc [95 % CI]"],
            "–" if e["misled"] is None else f"{c['base misled']} → {c['misled']}", c["Δmisled [95 % CI]"],
            f"{c['wins']}/{c['losses']}", c["McNemar p"], c["errors"]])
    return list(blocks.items())


def paired_markdown(summary: Sequence[PairedEntry], against: str, *, resamples: int) -> str:
    """The paired table with its legend and, per method, the results left out for lack of a partner."""
    groups = "; ".join(f"{name} = {' + '.join(members)}" for name, members in CONDITION_GROUPS.items())
    legend = (
        f"Each method against **{against}** on the questions both answered (same question and K). "
        f"Δ = method − {against}; 95 % BCa bootstrap interval of the mean per-question difference "
        f"({resamples} resamples of the questions); wins = method right and baseline wrong, losses = the reverse; "
        "McNemar p = exact two-sided binomial test of wins against losses; "
        "errors (method/baseline) count as wrong answers. "
        f"Pooled rows: {groups}, shown when all their conditions are present; all = every paired question."
    )
    lines = [
        legend, "", "| " + " | ".join(PAIRED_COLUMNS) + " |", "|" + "---|" * len(PAIRED_COLUMNS),
        *("| " + " | ".join(row) + " |" for row in paired_rows(summary)),
    ]
    dropped = {e["method"]: e["unpaired"] for e in summary if any(e["unpaired"])}
    if dropped:
        lines += ["", "Left out for lack of a partner: " + "; ".join(
            f"{m}: {own} of its results, {theirs} of {against}'s" for m, (own, theirs) in dropped.items()) + "."]
    return "\n".join(lines)


def write_paired_csv(summary: Sequence[PairedEntry], path: Path) -> None:
    """Write the paired table to ``path`` as CSV: every figure as a number, each interval's bounds apart."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["method", "inject", "condition", "n", "base_acc", "acc", "d_acc", "d_acc_low", "d_acc_high",
                         "n_misled", "base_misled", "misled", "d_misled", "d_misled_low", "d_misled_high",
                         "wins", "losses", "mcnemar_p", "errors", "base_errors", "unpaired", "base_unpaired"])
        for e in summary:
            writer.writerow([e["method"], e["inject"], e["condition"], e["n"], e["base_acc"], e["acc"],
                             e["d_acc"].mean, e["d_acc"].low, e["d_acc"].high,
                             e["n_misled"], e["base_misled"], e["misled"],
                             e["d_misled"].mean, e["d_misled"].low, e["d_misled"].high,
                             e["wins"], e["losses"], e["p"], e["errors"], e["base_errors"], *e["unpaired"]])


def plot_paired(summary: Sequence[PairedEntry], against: str, path: Path) -> None:
    """ΔAcc per condition (pooled ones after the dashed line) with its interval, one marker per method, per K."""
    plt = _pyplot()
    ks = sorted({e["inject"] for e in summary})
    methods = list(dict.fromkeys(e["method"] for e in summary))
    # conditions in the order they come, then the pooled groups, then all
    labels = sorted(dict.fromkeys(e["condition"] for e in summary), key=lambda c: (c == ALL, c in CONDITION_GROUPS))
    plain = sum(1 for c in labels if c != ALL and c not in CONDITION_GROUPS)
    size = (max(6.0, 0.9 * len(labels) + 3), 4.2 * len(ks))
    fig, axes = plt.subplots(len(ks), 1, figsize=size, squeeze=False, sharey=True)
    step = 0.8 / len(methods)
    for ax, k in zip(axes[:, 0], ks, strict=True):
        for i, method in enumerate(methods):
            cells = [e for e in summary if e["method"] == method and e["inject"] == k]
            x = np.array([labels.index(e["condition"]) for e in cells]) + (i - (len(methods) - 1) / 2) * step
            means, errors = _bars([e["d_acc"] for e in cells])
            ax.errorbar(x, means, yerr=errors, fmt="o", capsize=3, label=method)
        ax.axhline(0, color="black", linewidth=0.8)
        if 0 < plain < len(labels):
            ax.axvline(plain - 0.5, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
        ax.set_ylabel(f"ΔAcc vs {against}")
        ax.set_title(f"K = {k} injected passages" if len(ks) > 1 else "")
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))  # outside: never over a marker
    fig.suptitle(f"Paired ΔAcc against {against} (95 % bootstrap intervals)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


@dataclass
class Report:
    """What :func:`write_report` wrote, and the tables it holds."""

    summary: list[MethodSummary]
    """:func:`summarize`'s entries, one per (method, K)."""
    markdown: Path
    csv: Path
    plots: list[Path]
    fallbacks: list[list[str]]
    """``fallback_rows``: per method and judgment step, runs, runs that fell back, rate."""
    routes: tuple[list[str], list[list[str]]] = field(default_factory=lambda: ([], []))
    """``route_table``: columns and rows of the route shares (no rows when no method routed)."""
    agreement: list[list[str]] = field(default_factory=list)
    """``agreement_rows``: per pair of methods, same answers of the questions both answered."""
    paths: list[list[str]] = field(default_factory=list)
    """``path_rows``: per method, its most common node paths (none for runs that did not record them)."""


def _results(folder: Path) -> list[ResultRow]:
    rows = read_results(folder)
    if not rows:
        raise CausalRAGError(f"No results in {folder}: run `causalrag eval --out {folder}` first.")
    return rows


def _described(folder: Path) -> str:
    """The run's settings as one line (from its ``config.json``)."""
    config = json.loads((folder / CONFIG).read_text(encoding="utf-8")) if (folder / CONFIG).exists() else {}
    names = ("dataset", "setting", "seed", "instruction", "model", "backend", "params")
    return ", ".join(f"{k}={config[k]}" for k in names if k in config)


def write_report(folder: str | Path, *, resamples: int = 2000) -> Report:
    """Read ``folder/results.jsonl``; write ``report.md``, ``report.csv``, ``accuracy_vs_inject.png``, ``cost.png``."""
    folder = Path(folder)
    rows = _results(folder)
    summary = summarize(rows, resamples=resamples)
    plots = [folder / "accuracy_vs_inject.png", folder / "cost.png"]
    plot_accuracy(summary, plots[0])
    plot_cost(summary, plots[1])
    markdown = folder / "report.md"
    markdown.write_text(
        f"# Evaluation report: {folder.name}\n\n{_described(folder)}\n\n"
        f"Mean (95 % BCa bootstrap interval, {resamples} resamples) over questions; K = injected misleading passages; "
        "R@k/NDCG@k over the evidence each method used; misled = the answer states a wrong answer the injected "
        f"passages assert; × std = ratio to {BASELINE} at the same K.\n\n"
        f"{markdown_table(summary)}\n\n{fallback_markdown(rows)}{routes_markdown(rows)}"
        "![accuracy](accuracy_vs_inject.png)\n\n![cost](cost.png)\n",
        encoding="utf-8",
    )
    csv_path = folder / "report.csv"
    write_csv(summary, csv_path)
    return Report(summary, markdown, csv_path, plots, fallback_rows(rows), route_table(rows), agreement_rows(rows),
                  path_rows(rows))


@dataclass
class PairedReport:
    """What :func:`write_paired_report` wrote."""

    summary: list[PairedEntry]
    """``paired_summary``'s entries."""
    markdown: Path
    csv: Path
    plot: Path


def write_paired_report(
    folder: str | Path, against: str = BASELINE, *, resamples: int = 2000, seed: int = 0
) -> PairedReport:
    """Read ``folder/results.jsonl``; write ``paired.md``, ``paired.csv`` and ``paired.png``.

    They compare every method with ``against`` (``paired_summary``).
    """
    folder = Path(folder)
    summary = paired_summary(_results(folder), against, resamples=resamples, seed=seed)
    paths = PairedReport(summary, folder / "paired.md", folder / "paired.csv", folder / "paired.png")
    plot_paired(summary, against, paths.plot)
    write_paired_csv(summary, paths.csv)
    paths.markdown.write_text(
        f"# Paired comparison with {against}: {folder.name}\n\n{_described(folder)}\n\n"
        f"{paired_markdown(summary, against, resamples=resamples)}\n\n![paired ΔAcc](paired.png)\n",
        encoding="utf-8",
    )
    return paths
