"""The one-call API, ``answer(question, method=..., collection=...)``, and what a program needs around a graph.

A program (such as the command line) finds here the registry, contexts, input checks and a run's results
as JSON.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from causalrag.budget import check_question, question_may_overflow
from causalrag.config import DEMO_COLLECTION
from causalrag.graphs.registry import Method, build_graph, get_method, make_context, methods, parse_params
from causalrag.nodes.common import doc_json, llm_of, question_of, summarize_trace
from causalrag.state.base import RAGContext
from causalrag.text import readable

__all__ = [
    "METHODS",
    "answer",
    "build_graph",
    "check_fits",
    "doc_json",
    "make_context",
    "parse_params",
    "question_text",
    "summarize_trace",
]


class _Methods(Mapping[str, Method]):
    """Read-only view of the registry (``causalrag.METHODS["cis"].parameters()``)."""

    def __getitem__(self, name: str) -> Method:
        return get_method(name)  # an UnknownMethodError is a KeyError too, so ``in`` and ``.get`` still work

    def __iter__(self) -> Iterator[str]:
        return iter(methods())

    def __len__(self) -> int:
        return len(methods())

    def __repr__(self) -> str:
        return f"METHODS({', '.join(self)})"


METHODS = _Methods()
"""Every registered method by name, baselines first: ``METHODS["cis"].parameters()``, ``.cpu_params``, ``.summary``."""


def answer(
    question: str,
    method: str = "standard_rag",
    collection: str = DEMO_COLLECTION,
    **params: Any,
) -> dict[str, Any]:
    """Run ``method`` on ``question``; returns the final state: ``answer``, ``documents``, ``trace``.

    ``params`` are the method's tunables (see ``METHODS[method].parameters()``) plus optional
    ``llm=`` and ``store=`` objects. Bad input fails here, before any graph runs: an empty question,
    a parameter of the wrong type or range, a question too long for the model.
    """
    question = question_text(question)
    ctx = make_context(method, collection=collection, **params)
    check_fits(question, ctx)
    return build_graph(method).invoke({"question": question}, context=ctx)


def question_text(question: str | bytes | None) -> str:
    """``question`` as a graph takes it: one clean line.

    Bytes that are not UTF-8 and control characters are made harmless; when nothing is left, that is an
    :class:`~causalrag.errors.EmptyQuestionError`.
    """
    text = question.decode("utf-8", "replace") if isinstance(question, bytes) else question or ""
    return question_of({"question": readable(text)})


def check_fits(question: str, context: RAGContext) -> None:
    """Raise :class:`~causalrag.errors.QuestionTooLongError` when ``question`` cannot fit the context's model.

    The error (one sentence) comes when the question leaves the model no room for a method's prompt and
    answer; it is checked before any retrieval, not deep in a backend.
    """
    if question_may_overflow(question):
        check_question(llm_of(context), question)
