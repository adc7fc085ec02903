"""CIS retrieval (Causal Knowledge Retrieval, §4): retrieve top-N → rerank by CIS, keep top-k → answer.

``retrieve_candidates`` takes the first stage's top N (BM25, §5.2.1); ``rerank_cis`` keeps the k with the
highest CIS(Q → K) = log p(K|Q) − log p(K) (§4.1), or the distilled cross-encoder's estimate of it (§4.2);
``answer_reranked`` reads those k together, best first.
"""

from langgraph.graph import END, START, StateGraph

from causalrag.graphs.registry import Method
from causalrag.nodes.cis import rerank_cis, retrieve_candidates
from causalrag.nodes.common import answer_reranked
from causalrag.state.base import InputState
from causalrag.state.cis import CISContext, CISOutput, CISState


def build() -> StateGraph[CISState, CISContext, InputState, CISOutput]:
    """The uncompiled CIS graph: retrieve candidates, rerank by CIS, answer."""
    graph = StateGraph(CISState, context_schema=CISContext, input_schema=InputState, output_schema=CISOutput)
    graph.add_node("retrieve_candidates", retrieve_candidates)
    graph.add_node("rerank_cis", rerank_cis)
    graph.add_node("answer_reranked", answer_reranked)
    graph.add_edge(START, "retrieve_candidates")
    graph.add_edge("retrieve_candidates", "rerank_cis")
    graph.add_edge("rerank_cis", "answer_reranked")
    graph.add_edge("answer_reranked", END)
    return graph


METHOD = Method(
    "cis",
    build,
    CISContext,
    "rerank top-N by causal inference score log p(K|Q) − log p(K), answer from the top-k",
    paper="cis-causal-knowledge-retrieval.md",
    cpu_params={"n_candidates": 15},
)
