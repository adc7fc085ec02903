"""The method registry: every module in ``causalrag.graphs`` that defines ``METHOD`` is a method.

A new method needs no edit here: add ``graphs/<name>.py`` with ``build()`` and
``METHOD = Method(...)``, and ``build_graph``, the CLI, LangGraph Studio and the evaluation
harness pick it up.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph

from causalrag.errors import UnknownMethodError, UnknownParameterError
from causalrag.nodes.common import DEFAULT_CONTEXT_KEY
from causalrag.params import check_params, parse_assignments
from causalrag.state.base import RAGContext


@dataclass(frozen=True)
class Method:
    """A registered method: its name, graph builder, context dataclass and how it is listed."""

    name: str
    build: Callable[[], StateGraph[Any, Any, Any, Any]]
    """Returns the uncompiled graph (nodes and edges in the paper's order)."""
    context: type[RAGContext]
    """Dependencies and tunables, with the paper's defaults."""
    summary: str
    baseline: bool = False
    paper: str | None = None
    cpu_params: dict[str, Any] = field(default_factory=dict)
    """Smaller knobs (fewer candidates, rounds, iterations) that keep one question to about a minute
    on a CPU with the bundled model; ``causalrag demo`` and the quickstart use them on a CPU."""
    retrieves: bool = True
    """False for a method that never reads the store (``no_rag``): evaluation needs no passages for it."""

    def parameters(self) -> dict[str, Any]:
        """Tunable fields and their defaults (``llm`` and ``store`` are dependencies, not parameters)."""
        return {
            f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
            for f in dataclasses.fields(self.context)
            if f.name not in ("llm", "store")
        }


@cache
def methods() -> dict[str, Method]:
    """All methods, baselines first, then by name."""
    import causalrag.graphs as package

    found = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        if isinstance(getattr(module, "METHOD", None), Method):
            found.append(module.METHOD)
    return {m.name: m for m in sorted(found, key=lambda m: (not m.baseline, m.name))}


def get_method(name: str) -> Method:
    """The registered method ``name``; an unknown name is an :class:`~causalrag.errors.UnknownMethodError`."""
    registry = methods()
    if name not in registry:
        raise UnknownMethodError(name, list(registry))
    return registry[name]


def make_context(name: str, **params: Any) -> RAGContext:
    """The method's context with ``params`` over the paper's defaults.

    Unknown names and values of the wrong type or range are an error, before any graph runs.
    """
    method = get_method(name)
    known = {f.name for f in dataclasses.fields(method.context)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise UnknownParameterError(name, unknown, sorted(known))
    return method.context(**check_params(name, method.context, params))


def parse_params(name: str, assignments: Sequence[str]) -> dict[str, Any]:
    """``NAME=VALUE`` strings (the command line's ``--param``) → values of method ``name``'s parameters, checked."""
    return parse_assignments(name, get_method(name).context, assignments)


def build_graph(name: str, *, checkpointer: Any = None, **params: Any) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile method ``name``; ``params`` (and ``llm=``, ``store=``) become its default context.

    A ``context=`` passed to ``invoke``/``stream`` merges over these defaults for that run, field by
    field: the fields it names win, every other field (``llm`` and ``store`` too) keeps its bound value.
    A dict names its keys (``context={"k": 5}`` changes ``k`` only); a context dataclass names the
    fields given to its constructor and any assigned afterwards (``StandardRAGContext(k=5)`` likewise),
    even when a value equals the class default (:meth:`causalrag.state.base.RAGContext.over`).
    """
    defaults = make_context(name, **params)
    graph = get_method(name).build().compile(checkpointer=checkpointer, name=name)
    return graph.with_config(configurable={DEFAULT_CONTEXT_KEY: defaults})
