"""Standard RAG baseline: retrieve the top-k passages, answer from them."""

from langgraph.graph import END, START, StateGraph

from causalrag.graphs.registry import Method
from causalrag.nodes.common import answer, retrieve
from causalrag.state.base import InputState, OutputState, RAGContext, RAGState


def build() -> StateGraph[RAGState, RAGContext, InputState, OutputState]:
    """The uncompiled standard RAG graph: ``retrieve`` then ``answer``."""
    graph = StateGraph(RAGState, context_schema=RAGContext, input_schema=InputState, output_schema=OutputState)
    graph.add_node("retrieve", retrieve)
    graph.add_node("answer", answer)
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "answer")
    graph.add_edge("answer", END)
    return graph


METHOD = Method("standard_rag", build, RAGContext, "retrieve top-k, answer from them", baseline=True)
