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


TraceEntry = dict[str, Any]
"""One node run's record in ``trace``: ``node``, ``seconds``, ``llm_calls``, ``prompt_tokens``, ``new_tokens`` and
``forward_passes`` (and ``budget_dropped``/``budget_trimmed`` when passages were left out to fit the window), written
by :func:`causalrag.nodes.common.traced`, plus the figures the node reports itself (JSON-ready values by name)."""


class InputState(TypedDict):
    """What every graph takes: the question."""

    question: str


class OutputState(TypedDict):
    """What every graph returns: the answer, the evidence it used, and one trace entry per node run."""

    answer: str
    documents: list[Document]
    trace: Annotated[list[TraceEntry], operator.add]


class RAGState(InputState, OutputState):
    """Base graph state; methods subclass it with their intermediate evidence."""


class RAGUpdate(TypedDict, total=False):
    """What a node writes into :class:`RAGState`: any of its keys (LangGraph merges a node's return value).

    A node's ``trace`` holds one entry with its own figures; :func:`causalrag.nodes.common.traced` adds its
    time and LLM usage, and the state's reducer appends the entry to the run's trace.
    """

    answer: str
    documents: list[Document]
    trace: list[TraceEntry]


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
        """A context that remembers which fields its caller named (an unknown name is one sentence's error)."""
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
        named: frozenset[str] = self.__dict__.get("_named", frozenset())
        return named

    def over(self, base: RAGContext) -> RAGContext:
        """A context of ``base``'s class: this one's named fields over ``base``'s values.

        The merged context is remembered per ``base``, so every node of a run sees the same object.
        """
        kept: tuple[RAGContext, RAGContext] | None = self.__dict__.get("_over")
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


class ReadState(RAGState):
    """State of a method that reads passages alone for its scored judgments (``causalrag.nodes.evidence``)."""

    read: NotRequired[dict[str, ReadingRecord]]
    """Each passage's reading alone, by id: read once per run, reused by every later step."""


class ReadUpdate(RAGUpdate, total=False):
    """What a node writes into :class:`ReadState`: any of its keys, the readings made so far among them."""

    read: dict[str, ReadingRecord]
    """Each passage's reading alone, by id (the readings passed in, plus any this node made)."""


class ReadInput(InputState, total=False):
    """The input of a method that reads passages alone: the question, and readings made already."""

    read: dict[str, ReadingRecord]
    """Passages already read alone for this question, by id (``triage`` hands its readings to the method it
    votes with, so no passage is read twice)."""
