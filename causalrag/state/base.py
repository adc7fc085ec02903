"""State and context shared by every graph.

Every graph takes ``{"question": ...}`` and ends with ``answer``, ``documents`` (the evidence the
answer used) and ``trace`` (one entry per node run: seconds, LLM calls and tokens, plus the
method's own scores). Dependencies and tunables reach nodes as ``runtime.context``: a dataclass
per method that extends :class:`RAGContext`.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.documents import Document

from causalrag.config import DEMO_COLLECTION


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
    Gemma 3 270M) and the ``collection`` store, which nodes resolve on first use
    (``causalrag.nodes.common.llm_of`` / ``store_of``); pass your own objects to swap them.
    """

    llm: Any = None
    """An LLM tool (``causalrag.tools.llm.LLM``); None → the process-wide default model."""
    store: Any = None
    """A ``causalrag.tools.store.Store``; None → ``collection`` (the demo collection is seeded on first use)."""
    collection: str = DEMO_COLLECTION
    k: int = 5
    """Passages given to the final answer step (top-k)."""
    retrieval: Literal["dense", "bm25", "hybrid"] = "dense"
    ids: list[str] | None = None
    """Restrict retrieval to these passage ids (e.g. one question's own paragraphs)."""
    max_new_tokens: int = 24
    """Token budget of the final short answer."""


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
