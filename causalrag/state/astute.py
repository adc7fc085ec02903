"""Astute RAG state and tunables (Wang et al., 2024, "Astute RAG", Algorithm 1, §3.3-§3.5, §4.1).

A *group* is one consolidated passage ⟨Dⱼ, Sⱼ⟩ (:class:`Group`): ``{"sources": ["ext 2", "int 1"], "claim": ...}``,
where ``ext i`` is the i-th retrieved passage and ``int i`` the i-th passage from the model's
memory; after finalization it also has ``answer`` and ``confidence`` (a share in [0, 1]).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Required, TypedDict

from langchain_core.documents import Document

from causalrag.state.base import JudgedContext, OutputState, ReadingRecord, ReadState, ReadUpdate


class Group(TypedDict, total=False):
    """⟨Dⱼ, Sⱼ⟩: one consolidated passage (§3.4).

    A round that answers as it groups (the combined step, a scored round) also names the group's ``answer``; a
    final group (a *candidate*, §3.5) has its ``confidence`` too.
    """

    sources: Required[list[str]]
    """Source labels: ``ext i`` (the i-th retrieved passage) or ``int i`` (the i-th passage from memory)."""
    claim: Required[str]
    """What the group's sources state, in a few words."""
    answer: str
    confidence: float | None
    """A share in [0, 1] (None: the model gave none)."""


Candidate = Group
"""A final group (§3.5): a :class:`Group` with its ``answer`` and ``confidence``. One type for both, because a
round's groups become the candidates as they are (the scored rounds and the combined step answer as they group)."""


class SourceReading(ReadingRecord):
    """Scored judgment: one source read alone, by its label."""

    source: str


class AstuteState(ReadState):
    """Astute RAG's state: the passages from memory, the labelled pool, its groups round by round, the candidates."""

    internal: list[Document]
    """I: the passages the model wrote from its own memory (§3.3), empty when it abstained."""

    pool: list[Document]
    """D₀ = E ⊕ I with their source labels (``metadata["label"]``), in prompt order (§3.4)."""
    groups: list[Group]
    """⟨Dⱼ, Sⱼ⟩: the latest consolidated groups (§3.4)."""
    readings: list[SourceReading]
    """Scored judgment only: every source read alone (the isolate step)."""
    iteration: int
    """j: consolidation rounds run so far."""
    converged: bool
    """Scored judgment only: the last round moved no source, so the remaining rounds are skipped."""
    candidates: list[Candidate]
    """The final groups with one answer and a confidence each (§3.5)."""
    chosen: int
    """Index into ``candidates`` of the answer selected as most reliable (-1: none)."""


class AstuteUpdate(ReadUpdate, total=False):
    """What an Astute RAG node writes: any keys of :class:`AstuteState` (the rounds write overlapping ones)."""

    internal: list[Document]
    pool: list[Document]
    groups: list[Group]
    readings: list[SourceReading]
    iteration: int
    converged: bool
    candidates: list[Candidate]
    chosen: int


class AstuteOutput(OutputState, total=False):
    """What a run returns: the answer and its evidence, plus the method's intermediate evidence."""

    internal: list[Document]
    readings: list[SourceReading]
    groups: list[Group]
    candidates: list[Candidate]
    chosen: int


@dataclass(kw_only=True)
class AstuteContext(JudgedContext):
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
