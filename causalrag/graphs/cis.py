"""CIS retrieval (Causal Knowledge Retrieval): retrieve top-N → rerank by CIS, keep top-k → answer."""

from langgraph.graph import END, START, StateGraph

from causalrag.graphs.registry import Method
from causalrag.nodes.cis import rerank_cis, retrieve_candidates
from causalrag.nodes.common import answer
from causalrag.state.base import InputState
from causalrag.state.cis import CISContext, CISOutput, CISState


def build() -> StateGraph[CISState, CISContext, InputState, CISOutput]:
    graph = StateGraph(CISState, context_schema=CISContext, input_schema=InputState, output_schema=CISOutput)
    graph.add_node("retrieve_candidates", retrieve_candidates)
    graph.add_node("rerank_cis", rerank_cis)
    graph.add_node("answer", answer)
    graph.add_edge(START, "retrieve_candidates")
    graph.add_edge("retrieve_candidates", "rerank_cis")
    graph.add_edge("rerank_cis", "answer")
    graph.add_edge("answer", END)
    return graph


METHOD = Method(
    "cis",
    build,
    CISContext,
    "rerank top-N by causal inference score log p(K|Q) − log p(K), answer from the top-k",
    paper="cis-causal-knowledge-retrieval.md",
    cpu_params={"n_candidates": 15},
)
