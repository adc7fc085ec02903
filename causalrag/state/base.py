"""State and context shared by every graph.

Every graph takes ``{"question": ...}`` and ends with ``answer``, ``documents`` (the evidence the
answer used) and ``trace`` (one entry per node run: seconds, LLM calls and tokens, plus the
method's own scores). Dependencies and tunables reach nodes as ``runtime.context``: a dataclass
per method that extends :class:`RAGContext`.
"""

from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, NotRequired, Self, TypedDict

from langchain_core.documents import Document

from causalrag.config import DEMO_COLLECTION
from causalrag.errors import UnknownParameterError

if TYPE_CHECKING:
    from causalrag.tools.backends.base import LLM
    from causalrag.tools.store import Store
else:
    # state is plain data and never imports the tools; at run time the two names resolve to Any, so that
    # typing.get_type_hints (the parameter checks, LangGraph's schemas) reads the context's fields all the same
    LLM = Store = Any


class InputState(TypedDict):
    question: str


class OutputState(TypedDict):
    answer: str
    documents: list[Document]
    trace: Annotated[list[dict], operator.add]


class RAGState(InputState, OutputState):
    """Base graph state; methods subclass it with their intermediate evidence."""


@dataclass(kw_only=True)
class RAGContext:
    """What every graph reads from ``runtime.context``: plain data, no loading.

    ``llm`` and ``store`` default to the process-wide model (``CAUSALRAG_MODEL`` or the bundled
    Gemma 3 270M) and the process-wide ``collection`` store, which nodes look up when they first need
    them (``causalrag.nodes.common.llm_of`` / ``store_of``) without writing them into the context;
    pass your own objects to swap them.

    A context given to ``invoke``/``stream`` merges over the one ``build_graph`` bound, field by field
    (:meth:`over`): the fields its caller *named* win (the keyword arguments of its constructor, which
    for a dict context are the dict's keys, and any field assigned afterwards); every other field keeps
    the bound value. Naming a field counts even when the value equals the class default.
    """

    llm: LLM | None = None
    """An LLM tool (:class:`causalrag.tools.backends.base.LLM`); None → the process-wide default model."""
    store: Store | None = None
    """A :class:`causalrag.tools.store.Store`; None → ``collection`` (the demo collection is seeded on first use)."""
    collection: str = DEMO_COLLECTION
    k: int = 5
    """Passages given to the final answer step (top-k)."""
    retrieval: Literal["dense", "bm25", "hybrid"] = "dense"
    ids: list[str] | None = None
    """Restrict retrieval to these passage ids (e.g. one question's own paragraphs)."""
    max_new_tokens: int = 24
    """Token budget of the final short answer."""

    def __new__(cls, *args: Any, **fields: Any) -> Self:
        unknown = sorted(set(fields) - {f.name for f in dataclasses.fields(cls)})
        if unknown:  # e.g. context={"kk": 3}: one sentence rather than __init__'s TypeError
            raise UnknownParameterError(cls.__name__, unknown, sorted(f.name for f in dataclasses.fields(cls)))
        self = super().__new__(cls)
        object.__setattr__(self, "_named", frozenset(fields))  # LangGraph builds a dict context as cls(**dict)
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.__dict__:  # set again after __init__ set it once: the caller chose this value
            object.__setattr__(self, "_named", self.named() | {name})
            self.__dict__.pop("_over", None)
        object.__setattr__(self, name, value)

    def named(self) -> frozenset[str]:
        """The fields a caller chose: the constructor's keyword arguments and any field assigned since."""
        return self.__dict__.get("_named", frozenset())

    def over(self, base: RAGContext) -> RAGContext:
        """A context of ``base``'s class: this one's named fields over ``base``'s values (remembered per
        ``base``, so every node of a run sees the same object)."""
        kept = self.__dict__.get("_over")
        if kept is not None and kept[0] is base:
            return kept[1]
        known = {f.name for f in dataclasses.fields(base) if f.init}
        unknown = sorted(self.named() - known)
        if unknown:
            raise UnknownParameterError(type(base).__name__, unknown, sorted(known))
        values = {name: getattr(base, name) for name in known} | {name: getattr(self, name) for name in self.named()}
        merged = type(base)(**values)
        object.__setattr__(self, "_over", (base, merged))
        return merged


Judgment = Literal["auto", "score", "generate"]
Mechanism = Literal["auto", "paper", "vote", "knowledge", "keep"]
Route = Literal["keep", "vote", "knowledge", "focus", "paper"]


@dataclass(kw_only=True)
class JudgedContext(RAGContext):
    """A method whose steps judge evidence (which answer, which group, consistent or not)."""

    judge: Judgment = "auto"
    """How each judgment step is made. "score": a scored choice among explicit options (candidate
    answers, groups, yes/no), the options' log-probabilities as the model's reply, read per passage
    and then aggregated (``causalrag.nodes.evidence``); "generate": the paper's prompts answered in
    free text and parsed afterwards; "auto": "score" when the model can score its replies (every
    local backend; the openai backend on the completions API or with the chat template), else
    "generate". Measured with the bundled 270M model in docs/methods.md."""


class ReadingRecord(TypedDict):
    """One passage read alone (:class:`causalrag.nodes.evidence.Reading` as plain data)."""

    answer: str | None
    probability: float
    relevance: float
    how: str


class ChoiceRecord(TypedDict):
    """A scored choice among options as plain data (:meth:`causalrag.tools.backends.base.Choice.as_dict`)."""

    options: list[str]
    scores: list[float]
    """Each option's log-probability (minus the content-free prompt's, when one was given)."""
    probs: list[float]
    """The scores normalized over the options."""


class GroupRecord(TypedDict):
    """Sources (passage ids or labels) whose answers agree."""

    answer: str
    sources: list[str]


class FocusRecord(TypedDict):
    """The passage a question is asked of among lone look-alikes (:func:`causalrag.nodes.triage.focus`)."""

    answer: str
    """Its answer: a scored choice, given that passage alone, among the lone answers and the joint reading's."""
    passage: str
    """Its id."""
    margin: float
    """How much likelier the question is asked of it than of any other answer's passage (nats, summed)."""
    joint: float
    """How much likelier the question is asked of it and the runner-up together than of it alone (nats)."""


class Assessment(TypedDict, total=False):
    """What :func:`causalrag.nodes.triage.assess` saw: the shape of the evidence and the mechanism it chose."""

    shape: str
    """``agree``, ``conflict``, ``scattered``, ``corroborated``, ``unanswered``, ``unsupported``, ``compared``
    or ``contradicted`` (empty when skipped)."""
    route: Route
    standard: str
    """Standard RAG's answer (the joint reading)."""
    closed_book: str
    """The model's answer with no passage."""
    believed: str | None
    """The answer the model's knowledge holds against what the passages say, when it overrules them."""
    groups: list[GroupRecord]
    confidence: float
    """Mean per-token log-probability of ``closed_book``."""
    fit: float
    """How much better the first group's passages read with the rival answer (``closed_book`` where they
    all agree, else the runner-up group's) in place of theirs
    (:func:`causalrag.nodes.triage.counterfactual_fit`); present when it was asked."""
    familiarity: float
    """How much likelier the rival's words are than the first group's answer's with no passage (nats);
    present with ``fit``."""
    focus: FocusRecord
    """Where the sources scatter (shape ``scattered``): the passage the question is asked of and its answer;
    present when one stood out (route ``focus`` when its answer differs from the joint reading's)."""


class TriageState(RAGState):
    """State of a method that looks at the shape of its evidence before deciding (``causalrag.nodes.triage``)."""

    closed_book: NotRequired[str]
    """The model's answer with no passage (``triage.recall``), before standard RAG's reading."""
    closed_book_confidence: NotRequired[float]
    """How sure the model is of ``closed_book`` (``triage.confidence``), scored in ``recall``."""
    assessment: Assessment
    read: dict[str, ReadingRecord]
    """Each passage's reading alone, by id: read once per run, reused by every later step."""
    internal: NotRequired[list[Document]]
    """Passages the model wrote from its own memory, for a method that writes them (Astute RAG's I)."""


@dataclass(kw_only=True)
class RoutedContext(RAGContext):
    """A robust method that picks its mechanism from the shape of the evidence (``causalrag.nodes.triage``).
    Every method but the baselines is one; those that also judge evidence extend :class:`JudgedContext` too."""

    mechanism: Mechanism = "auto"
    """"auto": chosen per question from the assessment (standard RAG's answer when nothing conflicts,
    the method's own aggregation when sources disagree, the model's knowledge when it overrules the
    passages); "paper": the paper's own path for every question, no assessment; "vote", "knowledge",
    "keep": one mechanism for every question (ablations)."""
    knowledge_confidence: float = -0.5
    """How sure (mean per-token log-probability of its closed-book answer; −0.5 ≈ 0.61 per token) the
    model must be before its own answer overrules what the passages say. Measured on the robustness
    suite's dev half (docs/results.md): above it the bundled model's closed-book answers were right
    nearly always; below it, overruling the passages cost more than it won. That holds for famous facts:
    on correlation traps its sure answers were right about half the time, on multi-hop questions one
    time in seven (docs/methods.md); raise it for such questions."""
    minority_confidence: float = -5.0
    """How sure the model must be of its own answer to side with a minority of the sources against the
    majority. The default takes any closed-book answer (the bundled model's all scored above −3.1 on the
    robustness suite's dev half): there, a closed-book answer that agreed with a minority of disagreeing sources
    was right 24 times in 28, and the 4 wrong ones were all at −1.5 or above, so asking for certainty
    there only lost right answers (docs/results.md, 2026-11-26)."""
    knowledge_fit: float = 3.0
    """How much better (log-probability summed over a passage, mean over the passages) the first group's
    passages must read with a rival answer in place of theirs before the rival is taken: the model's
    own answer where every passage agrees, the runner-up's where two sides of at least two sources
    dispute (:func:`causalrag.nodes.triage.rival_answer`). On the robustness suite's dev half a true
    passage never read better with a wrong rival by more than 1.7, and swapped passages read better
    with the right one by up to 12 (docs/results.md, 2026-11-26). Off the suite, where the true answer
    is a rare or invented name, passages read better with a familiar wrong one by up to 14 (docs/results.md,
    2026-11-27, night). A large value (1000) turns it off."""
    knowledge_familiarity: float = 10.0
    """How much more familiar (log-probability of the bare strings, nats) a rival answer may be than the
    passages' answer for the contrast to take it. Passages about an entity the model cannot know (an
    invented novel, a company's own staff) read better with any famous name in place of a rare one: on the
    robustness suite's fictional dev cards the contrast took a wrong rival 30 times (fit 4 to 38 nats), 25
    of them 16 to 42 nats more familiar than the passages' answer; where it took a right answer on the
    real dev cards (9 times), the rival was at most 8.5 nats more familiar but once (21: "Salvador Dalí"
    for the passages' "the Belgian surrealist") (docs/results.md, 2026-11-27, day). 1000 lifts the limit."""
    contrast_confidence: float = -2.25
    """How sure (mean per-token log-probability) the model must be of its own closed-book answer for the
    counterfactual contrast to weigh it against the passages. Below it the answer is a guess, and passages
    about an entity the model cannot know read better with a guess that copies their own words ("John
    Wexcombe" for the inventor of the Wexcombe relay) or is a familiar name. On the robustness suite's dev
    half the contrast took the model's answer 9 times: the 3 at −2.39 and below were all wrong, the lowest
    right one was at −2.14; −2.25 lies between (docs/results.md, 2026-11-27, evening). Applies only where the
    rival is the model's own answer, not a runner-up's; −1000 weighs every answer."""
    focus_margin: float = 1.0
    """How much likelier (log-probability summed over the question's tokens) the question must be as the one
    asked of a passage than of any other answer's passage, where the sources scatter over lone answers,
    before that passage's answer replaces the joint reading's (:func:`causalrag.nodes.triage.focus`). On the
    robustness suite's dev half every margin from 0 to 3 nats changed only wrong answers to right ones (16
    at 1, 13 at 2, 10 at 3); a value of 1000 turns the rule off (docs/results.md, 2026-11-27, late)."""
    focus_joint: float = 2.0
    """How much likelier the question must be asked of that passage and the runner-up together than of it
    alone for the pair to count as needed (a bridge or a comparison: the joint reading then stands). On the dev
    half bars of 1 to 3 nats lost no answer; with no such check (a large value) 5 bridge and comparison
    questions were lost."""
    option_votes: bool = False
    """Whether a passage read alone votes on a question that names its own options (yes/no; "…, A or
    B?"). Off, such a question is read jointly (shape ``compared``): a passage read alone can only pick
    one of the options, and the bundled model picks the question's favourite whatever the passage holds
    (docs/results.md, 2026-11-26). Turn it on for a model whose single-passage choices follow the passage."""
