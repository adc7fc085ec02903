"""The one-call API: ``answer(question, method=..., collection=...)``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from causalrag.budget import check_question, question_may_overflow
from causalrag.config import DEMO_COLLECTION
from causalrag.graphs.registry import Method, build_graph, get_method, make_context, methods
from causalrag.nodes.common import llm_of, question_of
from causalrag.text import readable


class _Methods(Mapping[str, Method]):
    """Read-only view of the registry (``causalrag.METHODS["cis"].parameters()``)."""

    def __getitem__(self, name: str) -> Method:
        return get_method(name)  # an UnknownMethodError is a KeyError too, so ``in`` and ``.get`` still work

    def __iter__(self):
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
) -> dict:
    """Run ``method`` on ``question``; returns the final state: ``answer``, ``documents``, ``trace``.

    ``params`` are the method's tunables (see ``METHODS[method].parameters()``) plus optional
    ``llm=`` and ``store=`` objects. Bad input fails here, before any graph runs: an empty question,
    a parameter of the wrong type or range, a question too long for the model.
    """
    question = question_of(
        {"question": readable(question.decode("utf-8", "replace") if isinstance(question, bytes) else question or "")}
    )
    ctx = make_context(method, collection=collection, **params)
    if question_may_overflow(question):
        check_question(llm_of(ctx), question)
    return build_graph(method).invoke({"question": question}, context=ctx)


__all__ = ["METHODS", "answer", "build_graph"]
