"""Astute RAG state and tunables (Wang et al., 2024, "Astute RAG", Algorithm 1, §3.3-§3.5, §4.1).

A *group* is one consolidated passage ⟨Dⱼ, Sⱼ⟩: ``{"sources": ["ext 2", "int 1"], "claim": str}``,
where ``ext i`` is the i-th retrieved passage and ``int i`` the i-th passage from the model's
memory; after finalization it also has ``answer`` and ``confidence`` (a share in [0, 1]).
"""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.documents import Document

from causalrag.state.base import Assessment, OutputState, RoutedContext, TriageState


class AstuteState(TriageState):
    internal: list[Document]
    """I: passages the model wrote from its own memory (§3.3); empty when it abstained."""
    pool: list[Document]
    """D₀ = E ⊕ I with their source labels (``metadata["label"]``), in prompt order (§3.4)."""
    groups: list[dict]
    """⟨Dⱼ, Sⱼ⟩: the latest consolidated groups (§3.4)."""
    readings: list[dict]
    """Scored judgment only: every source read alone, ``{"source", "answer", "probability"}`` (the isolate step)."""
    iteration: int
    """j: consolidation rounds run so far."""
    converged: bool
    """Scored judgment only: the last round moved no source, so the remaining rounds are skipped."""
    candidates: list[dict]
    """The final groups with one answer and a confidence each (§3.5)."""
    chosen: int
    """Index into ``candidates`` of the answer selected as most reliable (-1: none)."""


class AstuteOutput(OutputState, total=False):
    """What a run returns: the answer and its evidence, plus the method's intermediate evidence."""

    internal: list[Document]
    readings: list[dict]
    groups: list[dict]
    candidates: list[dict]
    chosen: int
    assessment: Assessment


@dataclass(kw_only=True)
class AstuteContext(RoutedContext):
    """Astute RAG tunables, with the paper's defaults where it gives them.

    ``k`` (inherited) is the number of retrieved passages E: the paper uses 10 web passages
    (§4.1); we keep the library default of 5, because the bundled 270M model reads every passage
    in each consolidation call.
    """

    max_internal: int = 1
    """m̂, the most passages the model may write from memory (§3.3); it may write fewer, or none
    ("I don't know"). The paper leaves m̂ open; we take 1, one call's worth of short text.
    0 turns internal knowledge off (then only retrieved passages are consolidated)."""
    iterations: int = 2
    """t, the number of consolidation rounds (§3.4). The paper reports t = 1, 2 and 3; we default to
    t = 2, the smallest setting where the loop refines its own last groups."""
    combined: bool = False
    """Merge the last consolidation round with answering in one call (§3.5, ``a = M(p_ans, q, ⟨D₀,S₀⟩,
    ⟨Dₜ,Sₜ⟩)``): t - 1 consolidation calls, then one combined call; with t = 1 that is the paper's
    single-call shortcut on the initial passages. False: t consolidation calls, then one answer per
    group (batched) and a selection call."""
    reverse: bool = True
    """Present retrieved passages in reverse rank order, the best next to the question (§4.1 default)."""
    internal_tokens: int = 48
    """Token budget per passage from memory (the paper caps all outputs at 1,024; a 270M model on a CPU
    needs tighter caps)."""
    consolidation_tokens: int = 80
    """Token budget of one consolidation (or combined) output: a few ``Group i [labels]: claim`` lines."""

    def consolidation_rounds(self) -> int:
        """Separate consolidation calls: t, or t - 1 when the last round is merged with answering (t ≥ 1)."""
        t = max(1, self.iterations)
        return t - 1 if self.combined else t
