"""clean_weight.py RUN [RUN ...]: the rules' thresholds fitted at several clean weights, validated out of group.

For each weight of a lost clean question in the fit's objective (``calibrate.CLEAN_WEIGHT``), fit the thresholds
leaving one passage style out, and one condition out, and decide the held-out group with them; beside them the
hand-set rules on the same records. Prints, per weight, the clean and conflict wins/losses summed over the
held-out groups, and the thresholds fitted on every row. Dev calibration runs only: this decides.
"""

import sys
from collections import Counter

from causalrag.eval import calibrate
from causalrag.eval.report import CONDITION_GROUPS

WEIGHTS = (1.0, 2.0, 4.0, 8.0)
rows = [row for folder in sys.argv[1:] for row in calibrate.read_rows(folder)]
print(f"{len(rows)} rows; styles {dict(Counter(calibrate.style_of(r) for r in rows))}")


def summed(table, label):
    """(clean wins, clean losses, conflict wins, conflict losses, all wins, all losses) over held-out groups."""
    out = Counter()
    for t in table.values():
        for pool, tally in t.items():
            if not pool.startswith(label + " "):
                continue
            name = pool.removeprefix(label + " ")
            out[f"{name} won"] += tally.wins
            out[f"{name} lost"] += tally.losses
        out["all won"] += t[label].wins
        out["all lost"] += t[label].losses
    return out


def line(name, counts):
    """One printed row: won/lost per condition group and over all."""
    parts = [f"{g} {counts[g + ' won']}/{counts[g + ' lost']}" for g in (*CONDITION_GROUPS, "all")]
    return f"  {name:<22} " + "  ".join(parts)


for weight in WEIGHTS:
    calibrate.CLEAN_WEIGHT = weight
    fitted = calibrate.fitter("gemma", 0.0, "rules")
    print(f"clean weight {weight:g}: fitted on all rows: {vars(calibrate.fit_thresholds(rows))}")
    for by_name, by in (("style out", calibrate.style_of), ("condition out", calibrate.condition_of)):
        table = calibrate.validate(rows, by, fitted, calibrate.rules_of())
        print(line(f"fitted, {by_name}", summed(table, "fitted")))
        if weight == WEIGHTS[0]:
            print(line(f"rules, {by_name}", summed(table, "rules")))
