"""The first look of a method that retrieves its own passages (MoI, CIS): standard RAG's reading and the
assessment of :mod:`causalrag.nodes.triage` before the method's own path.

START → retrieve → recall → answer → assess → ``keep`` (END) / ``knowledge`` (trust_knowledge) / ``vote`` (the
method's own first node); ``mechanism="paper"`` goes from START straight to that node.
"""

from collections.abc import Callable
from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from causalrag.nodes.common import answer, context, retrieve
from causalrag.nodes.triage import assess, recall, route_by_shape, trust_knowledge
from causalrag.state.base import RoutedContext, TriageState


def start(state: TriageState, runtime: Runtime[RoutedContext]) -> Literal["look", "paper"]:
    """The paper's path goes straight to the method's own steps; every other path first reads the passages as
    standard RAG."""
    return "paper" if context(runtime).mechanism == "paper" else "look"


def add_first_look(graph: StateGraph[Any, Any, Any, Any], own: str, top_k: Callable[..., Any] = retrieve) -> None:
    """Add the first look's nodes and edges to ``graph``, leading to its node ``own`` (``top_k``: the node that
    retrieves standard RAG's passages)."""
    graph.add_node("retrieve", top_k)
    graph.add_node("recall", recall)
    graph.add_node("answer", answer)
    graph.add_node("assess", assess)
    graph.add_node("trust_knowledge", trust_knowledge)
    graph.add_conditional_edges(START, start, {"look": "retrieve", "paper": own})
    graph.add_edge("retrieve", "recall")
    graph.add_edge("recall", "answer")
    graph.add_edge("answer", "assess")
    # no "paper" route out of assess: the paper's path never reaches it
    graph.add_conditional_edges("assess", route_by_shape, {"keep": END, "knowledge": "trust_knowledge", "vote": own})
    graph.add_edge("trust_knowledge", END)
