"""``triage``'s decision: one pure function of the probes' evidence record and a policy.

:func:`decide` reads :class:`~causalrag.state.triage.Evidence` (the joint reading, the groups of agreeing
lone readings, the closed-book answer and its confidence, a counterfactual contrast, the focus probe) and
returns a :class:`~causalrag.state.triage.Decision`: keep / vote / knowledge / focus and the rule that
decided. It calls no model and reads no passage order (groups are sorted by size, then answer), so the same
passages in any order give the same decision, and a policy can be replayed over stored records.

:class:`RulePolicy` is the rules policy: the shapes below with their thresholds, set on the robustness suite's
dev half with the bundled model (docs/results.md, "Tuning record"). Its thresholds are log-probabilities of
one model: for another model they mean something else.

* ``keep`` — nothing conflicts; no passage answers alone but one states the joint reading's answer (a bridge);
  the question names its own options; the sources scatter with no plurality; or the joint reading and the
  closed-book answer agree on an answer the sources miss or their plurality gives (``corroborated``);
* ``vote`` — the sources disagree and one answer has a plurality of at least two, or the joint reading
  disagrees with every source that answers alone;
* ``knowledge`` — the model's own answer contradicts what the passages say and it is sure of it; or it sides
  with a minority in a dispute; or a counterfactual contrast found the passages read clearly better with the
  rival answer (and the rival is not merely a far more familiar string); or the passages are off topic
  (``unsupported``);
* ``focus`` — the sources scatter over lone answers and one passage is clearly the one the question is asked
  of, with an answer other than the joint reading's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from causalrag.state.base import GroupRecord
from causalrag.state.triage import Decision, Evidence, Route, Shape
from causalrag.text import mentions, normalize_answer, same_answer


@dataclass(frozen=True)
class RulePolicy:
    """The rules policy's thresholds (:class:`~causalrag.state.triage.TriageContext` documents each one)."""

    knowledge_confidence: float = -0.5
    minority_confidence: float = -5.0
    knowledge_fit: float = 3.0
    knowledge_familiarity: float = 10.0
    contrast_confidence: float = -2.25
    focus_margin: float = 1.0
    focus_joint: float = 2.0

    @classmethod
    def of(cls, ctx: Any) -> RulePolicy:
        """The policy a context's thresholds make."""
        return cls(**{f.name: getattr(ctx, f.name) for f in fields(cls)})

    def to_json(self, *, model: str, provenance: str = "") -> dict[str, Any]:
        """The policy file ``causalrag calibrate`` writes for these thresholds fitted to ``model``."""
        return {"kind": "rules", "model": model, "provenance": provenance, "thresholds": vars(self)}


def canonical(groups: Sequence[GroupRecord]) -> list[GroupRecord]:
    """Groups largest first, ties by answer, each group's sources sorted.

    The order does not depend on the passages' order.
    """
    ordered = sorted(groups, key=lambda g: (-len(g["sources"]), normalize_answer(g["answer"]), g["answer"]))
    return [GroupRecord(answer=g["answer"], sources=sorted(g["sources"])) for g in ordered]


def corroborated(groups: Sequence[GroupRecord], standard: str, closed: str) -> bool:
    """Whether the joint reading and the closed-book answer agree on an answer a vote could only throw away.

    That is an answer no source read alone gives, or the one the largest group gives.
    """
    return (
        bool(normalize_answer(closed))
        and same_answer(closed, standard)
        and (not any(same_answer(g["answer"], standard) for g in groups) or same_answer(groups[0]["answer"], standard))
    )


def shape_of(evidence: Evidence, policy: RulePolicy) -> tuple[Shape, Route, str | None, str]:
    """(shape, route, believed answer, why) from the readings and the closed-book answer.

    This is the decision before any contrast or focus probe.
    """
    groups = evidence.get("groups") or []
    standard, closed = evidence.get("standard", ""), evidence.get("closed_book", "")
    sure, stated = evidence.get("confidence", float("-inf")), evidence.get("stated", True)
    shape: Shape
    if len(groups) >= 2:
        sizes = [len(g["sources"]) for g in groups]
        said, shape = groups[0]["answer"], "conflict" if sizes[0] >= 2 and sizes[0] > sizes[1] else "scattered"
    elif groups:
        said = groups[0]["answer"]
        shape = "agree" if not normalize_answer(standard) or same_answer(said, standard) else "conflict"
    else:
        said = standard
        shape = "compared" if evidence.get("compared") else "unanswered" if stated else "unsupported"
    singletons = all(len(g["sources"]) < 2 for g in groups)  # no answer has a second source
    lone = singletons and not any(same_answer(g["answer"], closed) for g in groups)
    echoed = any(mentions(g["answer"], standard) for g in groups)  # a long joint reading that lists a lone answer
    if lone and not stated and not echoed and shape in ("conflict", "scattered"):
        said, shape = standard, "unsupported"  # lone answers read out of off-topic passages support nothing
    if shape == "conflict" and corroborated(groups, standard, closed):
        return "corroborated", "keep", None, "the joint reading and the closed-book answer agree on it"
    if normalize_answer(closed) and not same_answer(closed, said):
        if shape == "unsupported":
            return shape, "knowledge", closed, "no passage supports an answer: the model's own stands"
        if sure >= policy.knowledge_confidence:
            return "contradicted", "knowledge", closed, "the model is sure of its own answer"
        minority = next((g["answer"] for g in groups[1:] if same_answer(g["answer"], closed)), None)
        disputed = not singletons or not stated  # among lone look-alikes a match is no witness
        if minority is not None and disputed and sure >= policy.minority_confidence:
            return "contradicted", "knowledge", minority, "the model's answer sides with a minority of the sources"
    if shape == "conflict":
        return shape, "vote", None, "the sources disagree and one answer leads"
    return shape, "keep", None, KEEP_WHY[shape]


KEEP_WHY: dict[Shape, str] = {
    "agree": "every source that answers alone agrees with the joint reading",
    "scattered": "the sources scatter with no plurality to trust",
    "unanswered": "no passage answers alone but one states the joint answer (a bridge)",
    "compared": "the question names its own options: the joint reading decides",
    "unsupported": "no passage supports an answer and the model has none",
}


def rival_of(evidence: Evidence, policy: RulePolicy, *, every: bool = False) -> str | None:
    """The answer a counterfactual contrast weighs against the first group's, or None where none is asked.

    It is the runner-up's where two sides of at least two sources each dispute and the vote would decide; else
    the model's own where no source gives it (shape ``agree`` or ``conflict``) and it holds it at
    ``contrast_confidence`` or above (a guess is no knowledge to test). ``every``: whatever the model's
    confidence and the route (a fitted policy's features).
    """
    shape, route, _, _ = shape_of(evidence, policy)
    groups, closed = evidence.get("groups") or [], evidence.get("closed_book", "")
    disputed = len(groups) >= 2 and len(groups[1]["sources"]) >= 2
    if disputed and (every or (shape == "conflict" and route == "vote")):
        return groups[1]["answer"]
    held = every or evidence.get("confidence", float("-inf")) >= policy.contrast_confidence
    given = any(same_answer(closed, g["answer"]) for g in groups)
    if (every or shape in ("agree", "conflict")) and held and groups and normalize_answer(closed) and not given:
        return closed
    return None


def wants_focus(evidence: Evidence, policy: RulePolicy, *, every: bool = False) -> bool:
    """Whether the focus probe is asked: the sources scatter over lone answers (nothing to vote with).

    With ``every``: wherever two answers or more have lone sources.
    """
    if every:
        return sum(len(g["sources"]) == 1 for g in evidence.get("groups") or []) >= 2
    return shape_of(evidence, policy)[0] == "scattered"


def taken_contrast(evidence: Evidence, policy: RulePolicy) -> bool:
    """Whether a contrast these rules ask (a record may hold any rival's) takes the rival.

    It does when the passages read ``knowledge_fit`` better with it and it is not merely a far more familiar
    string.
    """
    contrast = evidence.get("contrast")
    if contrast is None or contrast["rival"] != rival_of(evidence, policy):
        return False
    return contrast["fit"] >= policy.knowledge_fit and contrast["familiarity"] <= policy.knowledge_familiarity


def decide(evidence: Evidence, policy: RulePolicy) -> Decision:
    """The route for this evidence and the rule that chose it."""
    shape, route, believed, why = shape_of(evidence, policy)
    if taken_contrast(evidence, policy):
        contrast = evidence["contrast"]
        return Decision(
            route="knowledge", shape="contradicted", believed=contrast["rival"],
            why=f"the passages read {contrast['fit']:.1f} nats better with the rival answer in place of theirs",
        )
    focused = evidence.get("focus")
    standing_out = focused is not None and focused["margin"] >= policy.focus_margin
    alone = focused is not None and focused["joint"] < policy.focus_joint  # needs no second passage
    if shape == "scattered" and focused and standing_out and alone and not same_answer(focused["answer"],
                                                                                       evidence.get("standard", "")):
        return Decision(
            route="focus", shape=shape, believed=None,
            why=f"one passage is the one asked by {focused['margin']:.1f} nats, and answers otherwise",
        )
    return Decision(route=route, shape=shape, believed=believed, why=why)


def forced(evidence: Evidence, policy: RulePolicy, route: Route) -> Decision:
    """The decision with its route forced (an ablation); shape and believed answer as :func:`decide` saw them."""
    seen = decide(evidence, policy)
    believed = seen["believed"] or (evidence.get("closed_book") if route == "knowledge" else None)
    return Decision(route=route, shape=seen["shape"], believed=believed, why=f"forced: route={route}")


# --------------------------------------------------------------------------- a fitted policy
FEATURES = (
    "groups", "top_share", "second_share", "top_is_joint", "joint_given", "stated", "compared", "has_closed",
    "closed_is_joint", "closed_given", "closed_is_top", "confidence", "contrast_asked", "contrast_fit",
    "familiarity", "focus_found", "focus_margin", "focus_joint",
)
"""What a fitted policy reads of the evidence record (:func:`features`): counts and shares of the lone readings,
which readings agree, how sure the model is, and the contrast's and focus probe's numbers."""
FITTED_ROUTES: tuple[Route, ...] = ("vote", "knowledge", "focus")


def features(evidence: Evidence) -> list[float]:
    """The evidence record as numbers, in :data:`FEATURES` order (log-probabilities clipped to [−20, 20] nats)."""
    groups = evidence.get("groups") or []
    standard, closed = evidence.get("standard", ""), evidence.get("closed_book", "")
    total = sum(len(g["sources"]) for g in groups) or 1
    sizes = [len(g["sources"]) for g in groups] + [0, 0]
    contrast, focused = evidence.get("contrast"), evidence.get("focus")

    def clip(x: float) -> float:
        return max(-20.0, min(20.0, x))

    def agree(a: str, b: str) -> float:
        return float(bool(normalize_answer(a)) and same_answer(a, b))

    return [
        float(len(groups)), sizes[0] / total, sizes[1] / total,
        agree(groups[0]["answer"], standard) if groups else 0.0,
        float(any(same_answer(g["answer"], standard) for g in groups)),
        float(evidence.get("stated", True)), float(evidence.get("compared", False)),
        float(bool(normalize_answer(closed))), agree(closed, standard),
        float(any(agree(closed, g["answer"]) for g in groups)),
        agree(closed, groups[0]["answer"]) if groups else 0.0,
        clip(evidence.get("confidence", -20.0)),
        float(contrast is not None), clip(contrast["fit"]) if contrast else 0.0,
        clip(contrast["familiarity"]) if contrast else 0.0,
        float(focused is not None), clip(focused["margin"]) if focused else 0.0,
        clip(focused["joint"]) if focused else 0.0,
    ]


def route_answer(evidence: Evidence, route: Route) -> str | None:
    """What a route would answer, where the record tells it before the route runs.

    Returns:
        The route's answer; None where the route has nothing to give; ``""`` for the vote, whose answer is
        known only once it runs.
    """
    if route == "keep":
        return evidence.get("standard", "")
    if route == "knowledge":
        closed = evidence.get("closed_book", "")
        return closed if normalize_answer(closed) else None
    if route == "focus":
        focused = evidence.get("focus")
        return focused["answer"] if focused else None
    return "" if evidence.get("groups") else None


@dataclass(frozen=True)
class RouteModel:
    """A multinomial logistic model of one route against ``keep`` on the questions where their answers differ.

    It gives P(loss), P(tie), P(win) from the standardized features.
    """

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[tuple[float, ...], ...]
    """One row per outcome: loss, tie, win."""
    intercept: tuple[float, ...]

    def gain(self, x: Sequence[float]) -> float:
        """Expected accuracy gain over keep: P(win) − P(loss)."""
        z = [(v - m) / s for v, m, s in zip(x, self.mean, self.scale, strict=True)]
        logits = [b + sum(w * v for w, v in zip(row, z, strict=True)) for row, b in zip(self.coef, self.intercept,
                                                                                          strict=True)]
        top = max(logits)
        exp = [math.exp(v - top) for v in logits]
        return (exp[2] - exp[0]) / sum(exp)


@dataclass(frozen=True)
class FittedPolicy:
    """A policy fitted on dev data for one model (``causalrag calibrate``).

    Per route, a model of its expected gain over standard RAG's answer; the route with the largest gain is
    taken when it clears ``margin``.
    """

    model: str
    """The model it was fitted for (log-probabilities of one model mean nothing for another)."""
    margin: float
    routes: dict[str, RouteModel]
    provenance: str = ""
    """Which data fitted it (dataset, split, commit)."""

    def to_json(self) -> dict[str, Any]:
        """The policy file ``causalrag calibrate`` writes for this fit."""
        return {"kind": "fitted", "model": self.model, "margin": self.margin, "provenance": self.provenance,
                "features": list(FEATURES), "routes": {r: vars(m) for r, m in self.routes.items()}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FittedPolicy:
        """The fitted policy a policy file holds (one of another version of the features is refused)."""
        if data.get("kind") != "fitted" or list(data.get("features") or []) != list(FEATURES):
            raise ValueError("not a fitted policy of this version (refit it with `causalrag calibrate`)")
        routes = {r: RouteModel(tuple(m["mean"]), tuple(m["scale"]), tuple(map(tuple, m["coef"])),
                                tuple(m["intercept"])) for r, m in data["routes"].items()}
        return cls(str(data["model"]), float(data["margin"]), routes, str(data.get("provenance", "")))


def decide_fitted(evidence: Evidence, policy: FittedPolicy) -> Decision:
    """The route whose predicted gain over keep is largest, when it clears the margin; else keep."""
    standard = evidence.get("standard", "")
    x = features(evidence)
    gains = {}
    for route, model in policy.routes.items():
        answer = route_answer(evidence, route)  # type: ignore[arg-type]
        if answer is not None and not (answer and same_answer(answer, standard)):
            gains[route] = model.gain(x)
    shape = shape_of(evidence, RulePolicy())[0]
    best = max(gains, key=gains.__getitem__, default=None)
    if best is None or gains[best] < policy.margin:
        why = f"no route's predicted gain clears {policy.margin:.2f}" + (f" (best: {best} {gains[best]:+.2f})"
                                                                          if best else "")
        return Decision(route="keep", shape=shape, believed=None, why=why)
    believed = evidence.get("closed_book") if best == "knowledge" else None
    return Decision(route=best, shape=shape, believed=believed,  # type: ignore[typeddict-item]
                    why=f"predicted gain {gains[best]:+.2f} over keep (margin {policy.margin:.2f})")


Policy = RulePolicy | FittedPolicy


def decide_with(evidence: Evidence, policy: Policy) -> Decision:
    """:func:`decide` for the rules policy, :func:`decide_fitted` for a fitted one."""
    return decide_fitted(evidence, policy) if isinstance(policy, FittedPolicy) else decide(evidence, policy)
