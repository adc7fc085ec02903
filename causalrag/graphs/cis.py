"""CIS retrieval (Causal Knowledge Retrieval): retrieve top-N → rerank by CIS, keep top-k → answer.

Before it, standard RAG's reading (``retrieve``, ``answer``) and ``assess`` look at the shape of the
evidence (:mod:`causalrag.nodes.triage`): nothing conflicts → that answer stands; the sources disagree →
the reranking above; the model's knowledge overrules the passages → ``trust_knowledge``.
``mechanism="paper"`` reranks for every question.
"""

from langgraph.graph import END, StateGraph

from causalrag.graphs.first_look import add_first_look
from causalrag.graphs.registry import Method
from causalrag.nodes.cis import rerank_cis, retrieve, retrieve_candidates
from causalrag.nodes.common import answer_reranked
from causalrag.state.base import InputState
from causalrag.state.cis import CISContext, CISOutput, CISState


def build() -> StateGraph[CISState, CISContext, InputState, CISOutput]:
    graph = StateGraph(CISState, context_schema=CISContext, input_schema=InputState, output_schema=CISOutput)
    add_first_look(graph, "retrieve_candidates", retrieve)
    graph.add_node("retrieve_candidates", retrieve_candidates)
    graph.add_node("rerank_cis", rerank_cis)
    graph.add_node("answer_reranked", answer_reranked)
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
