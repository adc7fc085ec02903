"""Closed-book baseline: the model answers from its own knowledge, no retrieval."""

from langgraph.graph import END, START, StateGraph

from causalrag.graphs.registry import Method
from causalrag.nodes.common import answer
from causalrag.state.base import InputState, OutputState, RAGContext, RAGState


def build() -> StateGraph[RAGState, RAGContext, InputState, OutputState]:
    """The uncompiled closed-book graph: one ``answer`` node."""
    graph = StateGraph(RAGState, context_schema=RAGContext, input_schema=InputState, output_schema=OutputState)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    return graph


METHOD = Method("no_rag", build, RAGContext, "closed book: answer without retrieval", baseline=True, retrieves=False)
