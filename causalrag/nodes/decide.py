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

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from causalrag.state.base import GroupRecord
from causalrag.state.triage import Decision, Evidence, Route, Shape
from causalrag.text import normalize_answer, same_answer


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


def canonical(groups: Sequence[GroupRecord]) -> list[GroupRecord]:
    """Groups largest first, ties by answer, each group's sources sorted: an order that does not depend on the
    passages' order."""
    ordered = sorted(groups, key=lambda g: (-len(g["sources"]), normalize_answer(g["answer"]), g["answer"]))
    return [GroupRecord(answer=g["answer"], sources=sorted(g["sources"])) for g in ordered]


def corroborated(groups: Sequence[GroupRecord], standard: str, closed: str) -> bool:
    """Whether the joint reading and the closed-book answer agree on an answer that no source read alone
    gives, or that the largest group gives: a vote could only throw it away."""
    return (
        bool(normalize_answer(closed))
        and same_answer(closed, standard)
        and (not any(same_answer(g["answer"], standard) for g in groups) or same_answer(groups[0]["answer"], standard))
    )


def shape_of(evidence: Evidence, policy: RulePolicy) -> tuple[Shape, Route, str | None, str]:
    """(shape, route, believed answer, why) from the readings and the closed-book answer, before any contrast
    or focus probe."""
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
    if lone and not stated and shape in ("conflict", "scattered"):
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


KEEP_WHY: dict[str, str] = {
    "agree": "every source that answers alone agrees with the joint reading",
    "scattered": "the sources scatter with no plurality to trust",
    "unanswered": "no passage answers alone but one states the joint answer (a bridge)",
    "compared": "the question names its own options: the joint reading decides",
    "unsupported": "no passage supports an answer and the model has none",
}


def rival_of(evidence: Evidence, policy: RulePolicy) -> str | None:
    """The answer a counterfactual contrast weighs against the first group's, or None where none is asked:
    the runner-up's where two sides of at least two sources each dispute and the vote would decide; else the
    model's own where no source gives it (shape ``agree`` or ``conflict``) and it holds it at
    ``contrast_confidence`` or above (a guess is no knowledge to test)."""
    shape, route, _, _ = shape_of(evidence, policy)
    groups, closed = evidence.get("groups") or [], evidence.get("closed_book", "")
    if shape == "conflict" and route == "vote" and len(groups) >= 2 and len(groups[1]["sources"]) >= 2:
        return groups[1]["answer"]
    held = evidence.get("confidence", float("-inf")) >= policy.contrast_confidence
    given = any(same_answer(closed, g["answer"]) for g in groups)
    if shape in ("agree", "conflict") and held and normalize_answer(closed) and not given:
        return closed
    return None


def wants_focus(evidence: Evidence, policy: RulePolicy) -> bool:
    """Whether the focus probe is asked: the sources scatter over lone answers (nothing to vote with)."""
    return shape_of(evidence, policy)[0] == "scattered"


def decide(evidence: Evidence, policy: RulePolicy) -> Decision:
    """The route for this evidence and the rule that chose it."""
    shape, route, believed, why = shape_of(evidence, policy)
    contrast = evidence.get("contrast")
    if contrast and contrast["fit"] >= policy.knowledge_fit and contrast["familiarity"] <= policy.knowledge_familiarity:
        return Decision(
            route="knowledge", shape="contradicted", believed=contrast["rival"],
            why=f"the passages read {contrast['fit']:.1f} nats better with the rival answer in place of theirs",
        )
    focused = evidence.get("focus")
    if shape == "scattered" and focused and not same_answer(focused["answer"], evidence.get("standard", "")):
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
