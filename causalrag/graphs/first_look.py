"""The first look of a method that retrieves its own passages (MoI, CIS): standard RAG's reading and the
assessment of :mod:`causalrag.nodes.triage` before the method's own path.

START → retrieve → recall → answer → assess → ``keep`` (END) / ``knowledge`` (trust_knowledge) / ``focus``
(answer_focus) / ``vote`` (the method's own first node); ``mechanism="paper"`` goes from START straight to
that node. After the method's own steps, :func:`add_own_answer`: the paper's joint reading of its passages,
or on the vote route the answer they confirm across sources.
"""

from collections.abc import Callable
from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from causalrag.nodes.common import answer, answer_reranked, context, retrieve
from causalrag.nodes.triage import answer_confirmed, answer_focus, assess, recall, route_by_shape, trust_knowledge
from causalrag.state.base import RoutedContext, TriageState


def start(state: TriageState, runtime: Runtime[RoutedContext]) -> Literal["look", "paper"]:
    """The paper's path goes straight to the method's own steps; every other path first reads the passages as
    standard RAG."""
    return "paper" if context(runtime).mechanism == "paper" else "look"


def own_answer(state: TriageState, runtime: Runtime[RoutedContext]) -> Literal["paper", "vote"]:
    """After a method has reordered or chosen its passages: the paper's joint reading of them on its own path,
    the answer they confirm across sources on the vote route (``triage.answer_confirmed``)."""
    return "paper" if context(runtime).mechanism == "paper" else "vote"


def add_first_look(graph: StateGraph[Any, Any, Any, Any], own: str, top_k: Callable[..., Any] = retrieve) -> None:
    """Add the first look's nodes and edges to ``graph``, leading to its node ``own`` (``top_k``: the node that
    retrieves standard RAG's passages)."""
    graph.add_node("retrieve", top_k)
    graph.add_node("recall", recall)
    graph.add_node("answer", answer)
    graph.add_node("assess", assess)
    graph.add_node("trust_knowledge", trust_knowledge)
    graph.add_node("answer_focus", answer_focus)
    graph.add_conditional_edges(START, start, {"look": "retrieve", "paper": own})
    graph.add_edge("retrieve", "recall")
    graph.add_edge("recall", "answer")
    graph.add_edge("answer", "assess")
    # no "paper" route out of assess: the paper's path never reaches it
    graph.add_conditional_edges(
        "assess",
        route_by_shape,
        {"keep": END, "knowledge": "trust_knowledge", "focus": "answer_focus", "vote": own},
    )
    graph.add_edge("trust_knowledge", END)
    graph.add_edge("answer_focus", END)


def add_own_answer(graph: StateGraph[Any, Any, Any, Any], *after: str) -> None:
    """Add the two ways to answer from the passages a method has reordered or chosen, each its own node
    reached from the nodes ``after`` (:func:`own_answer`): ``answer_reranked`` and ``answer_confirmed``."""
    graph.add_node("answer_reranked", answer_reranked)
    graph.add_node("answer_confirmed", answer_confirmed)
    for node in after:
        graph.add_conditional_edges(node, own_answer, {"paper": "answer_reranked", "vote": "answer_confirmed"})
    graph.add_edge("answer_reranked", END)
    graph.add_edge("answer_confirmed", END)
