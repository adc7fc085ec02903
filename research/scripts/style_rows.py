"""style_rows.py PAIRED_CSV METHOD[,METHOD]: Markdown rows from a `causalrag report --against` paired.csv.

One row per method (clean, conflict, misled under conflict, worst-case Acc, all with its interval), then the
baseline's counts and accuracies. Bold: the interval excludes 0.
"""

import csv
import sys


def signed(x: str | float) -> str:
    """A difference as the results pages write it: +.12, −.03, ±.00."""
    value = float(x)
    digits = f"{abs(value):.2f}"[1:]
    return "±.00" if abs(value) < 0.005 else ("+" if value > 0 else "−") + digits


def cell(row: dict | None, interval: bool = False) -> str:
    """ΔAcc (with its interval if asked), bold when the interval excludes 0, then wins/losses."""
    if row is None:
        return "–"
    low, high = float(row["d_acc_low"] or 0), float(row["d_acc_high"] or 0)
    text = signed(row["d_acc"]) + (f" [{signed(low)}, {signed(high)}]" if interval else "")
    if row["d_acc_low"] and (low > 0 or high < 0):
        text = f"**{text}**"
    return f"{text} ({row['wins']}/{row['losses']})"


rows = list(csv.DictReader(open(sys.argv[1])))


def get(method: str, group: str) -> dict | None:
    """The paired row of a method and condition group at K = 0."""
    return next((r for r in rows if r["method"] == method and r["condition"] == group and r["inject"] == "0"), None)


for method in sys.argv[2].split(","):
    clean, conflict, worst, everything = (get(method, g) for g in ("clean", "conflict", "worst_case", "all"))
    misled = float(conflict["misled"]) if conflict else float("nan")
    worst_acc = float(worst["acc"]) if worst else float("nan")
    cells = [cell(clean), cell(conflict), f"{misled:.2f}", f"{worst_acc:.2f}", cell(everything, True)]
    print(f"| {method} | {' | '.join(cells)} |")
first = sys.argv[2].split(",")[0]
base = {g: get(first, g) for g in ("clean", "conflict", "worst_case", "all")}
print("standard RAG n / Acc:", {g: (r["n"], r["base_acc"]) for g, r in base.items() if r},
      "misled:", base["conflict"] and base["conflict"]["base_misled"])
