"""The one-call API: ``answer(question, method=..., collection=...)``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from causalrag.config import DEMO_COLLECTION
from causalrag.graphs.registry import Method, build_graph, make_context, methods
from causalrag.nodes.common import question_of


class _Methods(Mapping[str, Method]):
    """Read-only view of the registry (``causalrag.METHODS["cis"].parameters()``)."""

    def __getitem__(self, name: str) -> Method:
        return methods()[name]

    def __iter__(self):
        return iter(methods())

    def __len__(self) -> int:
        return len(methods())

    def __repr__(self) -> str:
        return f"METHODS({', '.join(self)})"


METHODS = _Methods()


def answer(
    question: str,
    method: str = "standard_rag",
    collection: str = DEMO_COLLECTION,
    **params: Any,
) -> dict:
    """Run ``method`` on ``question``; returns the final state: ``answer``, ``documents``, ``trace``.

    ``params`` are the method's tunables (see ``METHODS[method].parameters()``) plus optional
    ``llm=`` and ``store=`` objects.
    """
    question_of({"question": question})  # fail before loading anything
    ctx = make_context(method, collection=collection, **params)
    return build_graph(method).invoke({"question": question}, context=ctx)


__all__ = ["METHODS", "answer", "build_graph"]
