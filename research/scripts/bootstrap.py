"""The report's bootstrap, side by side in one run: the hand-rolled percentile interval it used before vs
:func:`causalrag.eval.report.bootstrap` (``scipy.stats.bootstrap``, BCa), with scipy's percentile method too.

1. Intervals on realistic samples (200 Bernoulli rows at several rates, 200 paired differences, 50 rows
   near 1), each with the interval's width.
2. Coverage: how often each 95 % interval holds the true rate over simulated samples (the reason for BCa).
3. Speed: ``summarize`` and ``paired_summary`` on a synthetic suite-sized run, hand-rolled vs scipy.

Usage: ``python research/scripts/bootstrap.py [--questions 400] [--trials 400]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

import numpy as np
from scipy import stats

from causalrag.eval import report
from causalrag.eval.report import CONDITION_GROUPS, Stat, bootstrap, paired_summary, summarize


def hand_rolled(values: Sequence[float | None], *, resamples: int = 2000, seed: int = 0) -> Stat:
    """The report's bootstrap before scipy (percentile interval, numpy resampling), kept here as the reference."""
    data = np.asarray([v for v in values if v is not None], dtype=float)
    if data.size == 0:
        return Stat(None)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    tail = 2.5  # a 95 % interval
    low, high = np.percentile(means, tail), np.percentile(means, 100 - tail)
    return Stat(float(data.mean()), float(low), float(high), int(data.size))


def scipy_percentile(values: Sequence[float], *, resamples: int = 2000, seed: int = 0) -> Stat:
    """scipy's percentile interval; a constant sample gets [mean, mean] as in the report (scipy refuses it)."""
    data = np.asarray(values, dtype=float)
    if data.min() == data.max():
        return Stat(float(data[0]), float(data[0]), float(data[0]), data.size)
    ci = stats.bootstrap((data,), np.mean, n_resamples=resamples, method="percentile", vectorized=True,
                         rng=np.random.default_rng(seed)).confidence_interval
    return Stat(float(data.mean()), float(ci.low), float(ci.high), data.size)


METHODS = {"hand-rolled percentile": hand_rolled, "scipy percentile": scipy_percentile, "scipy BCa (report)": bootstrap}


def samples(rng: np.random.Generator) -> dict[str, np.ndarray]:
    base = rng.random(200) < 0.35
    better = np.where(rng.random(200) < 0.8, base, rng.random(200) < 0.6)  # a method agreeing with the baseline on 80 %
    return {
        "Bernoulli n=200 p=.50": (rng.random(200) < 0.5).astype(float),
        "Bernoulli n=200 p=.20": (rng.random(200) < 0.2).astype(float),
        "Bernoulli n=200 p=.03 (misled)": (rng.random(200) < 0.03).astype(float),
        "paired diff n=200": better.astype(float) - base.astype(float),
        "Bernoulli n=50 p=.96": (rng.random(50) < 0.96).astype(float),
    }


def coverage(p: float, n: int, trials: int, rng: np.random.Generator) -> dict[str, float]:
    """Share of ``trials`` samples of ``n`` Bernoulli(p) rows whose interval holds p (a constant sample's point
    interval misses)."""
    hits = dict.fromkeys(METHODS, 0)
    for t in range(trials):
        data = (rng.random(n) < p).astype(float)
        for name, method in METHODS.items():
            s = method(data, seed=t)
            hits[name] += s.low <= p <= s.high
    return {name: h / trials for name, h in hits.items()}


def suite_rows(questions: int, rng: np.random.Generator) -> list[dict]:
    conditions = [c for members in CONDITION_GROUPS.values() for c in members]
    rows = []
    for method, skill in [("standard_rag", .4), ("no_rag", .3), ("astute", .5), ("cf_rag", .45), ("retro", .42),
                          ("cis", .4), ("moi", .41)]:
        for q in range(questions):
            acc = float(rng.random() < skill)
            rows.append({"key": f"{method}|{q}", "method": method, "question_id": str(q), "inject": 0,
                         "condition": conditions[q % len(conditions)], "acc": acc, "em": acc, "f1": acc, "recall": 0.5,
                         "ndcg": 0.5, "misled": float(rng.random() < 0.2), "llm_calls": 1, "prompt_tokens": 1,
                         "new_tokens": 1, "seconds": 1.0, "error": None})
    return rows


def timed(fn, *args, **kwargs) -> float:
    start = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=400, help="Questions per method of the synthetic run.")
    parser.add_argument("--trials", type=int, default=400, help="Simulated samples per coverage setting.")
    args = parser.parse_args()
    rng = np.random.default_rng(0)

    print("1. 95 % intervals (2000 resamples, seed 0): mean [low, high] width")
    for label, data in samples(rng).items():
        print(f"  {label}")
        for name, method in METHODS.items():
            s = method(data)
            print(f"    {name:<24} {s.mean:+.3f} [{s.low:+.3f}, {s.high:+.3f}]  {s.high - s.low:.3f}")

    print(f"\n2. coverage of the true rate over {args.trials} samples (nominal 0.95)")
    for p, n in [(0.5, 50), (0.1, 50), (0.04, 100), (0.3, 200)]:
        found = coverage(p, n, args.trials, rng)
        print(f"  p={p:<4} n={n:<4} " + "  ".join(f"{name}: {c:.3f}" for name, c in found.items()))

    rows = suite_rows(args.questions, rng)
    print(f"\n3. speed on {len(rows)} rows (7 methods × {args.questions} questions, 8 conditions), 2000 resamples")
    new_summary, new_paired = timed(summarize, rows), timed(paired_summary, rows)
    report.bootstrap = hand_rolled  # the same code paths with the old interval
    try:
        old_summary, old_paired = timed(summarize, rows), timed(paired_summary, rows)
    finally:
        report.bootstrap = bootstrap
    for name, old, new in (("summarize", old_summary, new_summary), ("paired_summary", old_paired, new_paired)):
        print(f"  {name:<15} hand-rolled {old:.2f} s   scipy BCa {new:.2f} s   ratio {new / old:.2f}")


if __name__ == "__main__":
    main()
