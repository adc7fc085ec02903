"""Fit ``triage``'s decision policy for one model on dev data, and validate it out of condition and style.

One calibration run (:func:`calibration_config`) runs ``triage`` with every probe (``probes="all"``) and the vote
route forced, so each result row holds the whole evidence record and every route's answer: ``keep`` is the joint
reading, ``knowledge`` the closed-book answer, ``focus`` the focus probe's, ``vote`` the row's prediction.
:func:`fit_policy` then fits, per route, a multinomial logistic model (scikit-learn) of its outcome against keep
(loss, tie, win) on the questions where their answers differ; :func:`~causalrag.nodes.decide.decide_fitted`
takes the route with the largest predicted gain when it clears the margin.

:func:`validate` refits leaving out one group at a time (a condition, or a passage style) and decides that
group with the policy fitted on the rest, beside the rules policy replayed on the same records: a policy that
only fits one condition or one style cannot pass. The margin is chosen by this same out-of-group validation,
on the calibration data alone.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from causalrag.eval.metrics import containment
from causalrag.eval.report import CONDITION_GROUPS
from causalrag.eval.runner import EvalConfig
from causalrag.nodes.decide import (
    FEATURES,
    FITTED_ROUTES,
    FittedPolicy,
    Policy,
    RouteModel,
    RulePolicy,
    decide_with,
    features,
    route_answer,
)
from causalrag.state.triage import Evidence, Route
from causalrag.text import same_answer

MARGINS = (0.0, 0.05, 0.1, 0.2, 0.3)
"""The margins :func:`choose_margin` tries."""
CLEAN = ("clean_single", "clean_multi")
"""The clean conditions, where a question lost counts :data:`CLEAN_WEIGHT` times."""
OUTCOMES = ("loss", "tie", "win")
"""A route's outcome against keep, by :func:`outcome`'s number (0, 1, 2)."""


def calibration_config(dataset: str, **kwargs: Any) -> EvalConfig:
    """The run a calibration needs: ``triage`` with every probe and the vote route forced, on ``dataset``."""
    return EvalConfig(dataset=dataset, methods=["triage"],
                      params={"triage": {"route": "vote", "probes": "all", "vote_size": "cpu"}}, **kwargs)


def read_rows(folder: str | Path) -> list[dict[str, Any]]:
    """The calibration run's result rows that hold an evidence record."""
    path = Path(folder) / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r.get("method") == "triage" and r.get("evidence") and not r.get("error")]


def answers_of(row: dict[str, Any]) -> dict[str, str]:
    """Every route's answer for one calibration row (a route with nothing to give is left out)."""
    evidence: Evidence = row["evidence"]
    found = {"keep": evidence.get("standard", ""), "vote": str(row.get("prediction") or "")}
    routes: tuple[Route, ...] = ("knowledge", "focus")
    for route in routes:
        answer = route_answer(evidence, route)
        if answer is not None:
            found[route] = answer
    return found


def outcome(row: dict[str, Any], route: str) -> int | None:
    """0 loss, 1 tie, 2 win of ``route`` against keep; None where it gives nothing or keep's very answer."""
    answers = answers_of(row)
    if route not in answers or same_answer(answers[route], answers["keep"]):
        return None
    right = containment(answers[route], row["answers"]) - containment(answers["keep"], row["answers"])
    return int(right) + 1


def fit_route(rows: Sequence[dict[str, Any]], route: str, *, c: float = 0.5) -> RouteModel | None:
    """The multinomial logistic model of ``route``'s outcome against keep, or None with too few examples."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    pairs = [(features(r["evidence"]), found) for r in rows if (found := outcome(r, route)) is not None]
    if len(pairs) < 8 or len({y for _, y in pairs}) < 2:
        return None
    x = np.array([p[0] for p in pairs], dtype=float)
    y = np.array([p[1] for p in pairs])
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, max_iter=2000).fit((x - mean) / scale, y)
    coef = np.full((3, x.shape[1]), 0.0)
    intercept = np.full(3, -30.0)  # an outcome never seen is given no chance
    if len(model.classes_) == 2:  # a binary fit keeps one row: the second class against the first
        low, high = model.classes_
        coef[high], intercept[high] = model.coef_[0], model.intercept_[0]
        intercept[low] = 0.0
    else:
        for row, label in enumerate(model.classes_):
            coef[label], intercept[label] = model.coef_[row], model.intercept_[row]
    return RouteModel(tuple(mean.tolist()), tuple(scale.tolist()), tuple(map(tuple, coef.tolist())),
                      tuple(intercept.tolist()))


def fit_policy(rows: Sequence[dict[str, Any]], *, model: str, margin: float, provenance: str = "") -> FittedPolicy:
    """A policy over every route with enough examples in ``rows``."""
    routes: dict[str, RouteModel] = {r: m for r in FITTED_ROUTES if (m := fit_route(rows, r)) is not None}
    return FittedPolicy(model=model, margin=margin, routes=routes, provenance=provenance)


GRID: dict[str, tuple[float, ...]] = {
    "knowledge_confidence": (0.0, -0.25, -0.5, -0.75, -1.0, -1.5, -2.0),
    "minority_confidence": (-0.5, -1.0, -1.5, -2.0, -3.0, -5.0, -1000.0),
    "knowledge_fit": (1.0, 2.0, 3.0, 4.0, 6.0, 1000.0),
    "knowledge_familiarity": (5.0, 10.0, 20.0, 1000.0),
    "contrast_confidence": (-1.0, -1.5, -2.25, -3.0, -5.0, -1000.0),
    "focus_margin": (1.0, 2.0, 3.0, 1000.0),
    "focus_joint": (1.0, 1.5, 2.0),
}
"""The values :func:`fit_thresholds` tries for each threshold of the rules (1000 and −1000 turn a rule off).

The focus probe records a passage only at the collection's ``focus_margin`` (1) and ``focus_joint`` (2) or better,
so those two are fitted only the stricter way. What each threshold means and how its default was set:
``docs/results.md#tuning-record``."""
CLEAN_WEIGHT = 2.0
"""How much a clean question lost counts against a conflict won, in :func:`objective`: do no harm first."""


def objective(rows: Sequence[dict[str, Any]], policy: Policy) -> float:
    """Wins − losses against keep over ``rows``, a clean question lost counting :data:`CLEAN_WEIGHT` times."""
    total = 0.0
    for row in rows:
        keep = containment(answers_of(row)["keep"], row["answers"])
        gain = containment(final_answer(row, policy)[1], row["answers"]) - keep
        total += gain * (CLEAN_WEIGHT if gain < 0 and condition_of(row) in CLEAN else 1.0)
    return total


def fit_thresholds(rows: Sequence[dict[str, Any]], *, passes: int = 2) -> RulePolicy:
    """The rules' thresholds fitted to ``rows`` by coordinate search over :data:`GRID`.

    The search starts from the hand-set defaults (their provenance: ``docs/results.md#tuning-record``); each
    threshold in turn takes the grid value with the best :func:`objective`, keeping its value on a tie.
    """
    best = RulePolicy()
    score = objective(rows, best)
    for _ in range(passes):
        for name, values in GRID.items():
            for value in values:
                trial = replace(best, **{name: value})
                if (found := objective(rows, trial)) > score:
                    best, score = trial, found
    return best


def final_answer(row: dict[str, Any], policy: Policy) -> tuple[Route, str]:
    """The route ``policy`` takes on this row's evidence, and the answer that route gives."""
    decision = decide_with(row["evidence"], policy)
    route = decision["route"]
    answers = answers_of(row)
    if route == "knowledge":
        return route, decision["believed"] or answers.get("knowledge", answers["keep"])
    return route, answers.get(route, answers["keep"])


@dataclass
class Tally:
    """Paired with keep on one group of questions: how often a policy was right, won and lost."""

    questions: int = 0
    right: int = 0
    keep_right: int = 0
    wins: int = 0
    losses: int = 0

    def add(self, right: float, keep_right: float) -> None:
        """Count one question: the policy's containment (``right``) and keep's (``keep_right``), each 0 or 1."""
        self.questions += 1
        self.right += int(right)
        self.keep_right += int(keep_right)
        self.wins += int(right > keep_right)
        self.losses += int(right < keep_right)

    @property
    def delta(self) -> float:
        """ΔAcc against keep: (right − keep right) per question."""
        return (self.right - self.keep_right) / max(1, self.questions)


def style_of(row: dict[str, Any]) -> str:
    """A row's passage style (``clean`` for the suite's own handwritten passages)."""
    return str(row.get("style") or "clean")


def condition_of(row: dict[str, Any]) -> str:
    """A row's condition (``all`` for a question set without conditions)."""
    return str(row.get("condition") or "all")


def validate(
    rows: Sequence[dict[str, Any]],
    by: Callable[[dict[str, Any]], str],
    fitted: Callable[[Sequence[dict[str, Any]]], Policy],
    rules: Policy,
) -> dict[str, dict[str, Tally]]:
    """Per group (``by``): the policy fitted without that group, and the rules, each paired with keep there."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[by(row)].append(row)
    table: dict[str, dict[str, Tally]] = {}
    for name, held in sorted(groups.items()):
        policy = fitted([r for r in rows if by(r) != name])
        table[name] = defaultdict(Tally)
        for row in held:
            keep = containment(answers_of(row)["keep"], row["answers"])
            pool = next((p for p, members in CONDITION_GROUPS.items() if condition_of(row) in members), "other")
            for label, chosen in (("fitted", policy), ("rules", rules)):
                right = containment(final_answer(row, chosen)[1], row["answers"])
                table[name][label].add(right, keep)
                table[name][f"{label} {pool}"].add(right, keep)
    return table


def net(table: dict[str, dict[str, Tally]], label: str) -> tuple[int, int]:
    """(wins − losses over every group, wins − losses over the clean conditions)."""
    total = sum(t[label].wins - t[label].losses for t in table.values())
    clean = sum(t[label].wins - t[label].losses for name, t in table.items() if name in CLEAN)
    return total, clean


def choose_margin(rows: Sequence[dict[str, Any]], model: str) -> tuple[float, dict[float, tuple[int, int]]]:
    """The margin of :data:`MARGINS` whose policy, validated leaving one condition out, does best.

    The best margin loses no more clean questions than it wins and wins the most overall (ties: the larger
    margin, the more cautious). Returns it with every margin's (wins − losses overall, on the clean conditions).
    """
    scores = {}
    for margin in MARGINS:
        scores[margin] = net(validate(rows, condition_of, fitter(model, margin), rules_of()), "fitted")
    safe = [m for m in MARGINS if scores[m][1] >= 0] or list(MARGINS)
    return max(safe, key=lambda m: (scores[m][0], m)), scores


def fitter(model: str, margin: float, kind: str = "logistic") -> Callable[[Sequence[dict[str, Any]]], Policy]:
    """A function fitting a policy of ``kind`` on some rows (the folds of :func:`validate`).

    ``kind`` is ``rules`` (the thresholds) or ``logistic`` (a model of each route's gain, with this margin).
    """

    def fit(part: Sequence[dict[str, Any]]) -> Policy:
        return fit_thresholds(part) if kind == "rules" else fit_policy(part, model=model, margin=margin)

    return fit


def rules_of() -> Policy:
    """The hand-set rules (the thresholds' defaults, provenance: ``docs/results.md#tuning-record``), for comparison."""
    return RulePolicy()


def table_lines(table: dict[str, dict[str, Tally]], title: str, *, pooled: bool = False) -> list[str]:
    """A Markdown table of :func:`validate`'s result (``pooled``: a row per pooled group of conditions too)."""
    lines = [f"### {title}", "", "| held out | questions | keep Acc | fitted ΔAcc (won/lost) | rules ΔAcc (won/lost) |",
             "|---|---|---|---|---|"]
    for name, t in table.items():
        pools = [""] + ([f" {p}" for p in (*CONDITION_GROUPS, "other") if f"fitted {p}" in t] if pooled else [])
        for pool in pools:
            f, r = t[f"fitted{pool}"], t[f"rules{pool}"]
            keep = f.keep_right / max(1, f.questions)
            lines.append(f"| {name}{pool.replace(' ', ' · ')} | {f.questions} | {keep:.2f} | "
                         f"{f.delta:+.2f} ({f.wins}/{f.losses}) | {r.delta:+.2f} ({r.wins}/{r.losses}) |")
    return [*lines, ""]


def calibrate(
    folders: Sequence[str | Path], *, model: str, provenance: str, kind: str = "rules"
) -> tuple[dict[str, Any], list[str]]:
    """The policy fitted on the rows of calibration runs (its JSON), and its validation report (Markdown lines).

    Args:
        folders: Calibration run folders (:func:`calibration_config`).
        model: The model the policy is for (recorded in it).
        provenance: Where the rows come from (recorded in the policy and the report).
        kind: ``rules`` fits the rules' thresholds, ``logistic`` a model of each route's gain (its margin chosen
            leaving one condition out).
    """
    rows = [row for folder in folders for row in read_rows(folder)]
    if not rows:
        raise ValueError(f"no calibration rows in {', '.join(map(str, folders))}")
    report = [f"# Triage policy for {model} ({kind})", "", f"Fitted on {len(rows)} questions ({provenance}).", ""]
    if kind == "rules":
        thresholds = fit_thresholds(rows)
        data = thresholds.to_json(model=model, provenance=provenance)
        report += ["Thresholds: " + ", ".join(f"{k} {v:g}" for k, v in vars(thresholds).items()) + ".", ""]
        fitted = fitter(model, 0.0, "rules")
    else:
        margin, scores = choose_margin(rows, model)
        data = fit_policy(rows, model=model, margin=margin, provenance=provenance).to_json()
        report += ["Features: " + ", ".join(FEATURES) + ".", "", "Margin chosen leave-one-condition-out (wins − "
                   "losses against keep, all / clean): " + ", ".join(f"{m}: {s[0]:+d} / {s[1]:+d}"
                                                                    for m, s in scores.items()) + f" → {margin}.", ""]
        fitted = fitter(model, margin)
    report += ["Each group is decided by a policy fitted without it, beside the hand-set rules (which were set on "
               "the suite's dev half: on dev data their figures are in-sample).", ""]
    report += table_lines(validate(rows, condition_of, fitted, rules_of()), "Leave one condition out")
    if len({style_of(r) for r in rows}) > 1:
        report += table_lines(validate(rows, style_of, fitted, rules_of()), "Leave one passage style out", pooled=True)
    return data, report


# --------------------------------------------------------------------------- replaying policies over one run
COST_KEYS = ("seconds", "llm_calls", "prompt_tokens", "new_tokens", "forward_passes", "wall_seconds")
"""The cost fields of a result row, which a replayed row leaves out."""


def replay(
    rows: Sequence[dict[str, Any]], policies: dict[str, Policy], wrong: dict[str, list[str]]
) -> list[dict[str, Any]]:
    """Result rows (the run format) for ``standard_rag`` and each policy, decided on the same evidence records.

    A paired comparison in which every answer comes from one calibration run. ``wrong``: each question's planted
    wrong answers (``misled``). Cost fields are left empty: a replay measures no time.
    """
    from causalrag.eval.metrics import answer_scores

    out = []
    for row in rows:
        planted = wrong.get(row["question_id"], [])
        choices: dict[str, tuple[str | None, str]] = {"standard_rag": (None, answers_of(row)["keep"])}
        choices |= {name: final_answer(row, policy) for name, policy in policies.items()}
        for method, (route, prediction) in choices.items():
            out.append({**{k: v for k, v in row.items() if k not in COST_KEYS}, "method": method,
                        "key": f"{method}|K={row['inject']}|{row['question_id']}", "prediction": prediction,
                        **answer_scores(prediction, row["answers"]), "route": route, "path": [],
                        "misled": containment(prediction, planted) if planted else None, "replayed": True})
    return out
