"""CIS retrieval (Causal Knowledge Retrieval): retrieve top-N → rerank by CIS, keep top-k → answer.

Before it, standard RAG's reading (``retrieve``, ``answer``) and ``assess`` look at the shape of the
evidence (:mod:`causalrag.nodes.triage`): nothing conflicts → that answer stands; the sources disagree →
the reranking above, then the answer the top-k confirm across sources (``answer_confirmed``); the model's
knowledge overrules the passages → ``trust_knowledge``; the sources scatter over lone answers and one passage
is the one the question is asked of → ``answer_focus``. ``mechanism="paper"`` reranks for every question and
reads the top-k together (``answer_reranked``).
"""

from langgraph.graph import StateGraph

from causalrag.graphs.first_look import add_first_look, add_own_answer
from causalrag.graphs.registry import Method
from causalrag.nodes.cis import rerank_cis, retrieve, retrieve_candidates
from causalrag.state.base import InputState
from causalrag.state.cis import CISContext, CISOutput, CISState


def build() -> StateGraph[CISState, CISContext, InputState, CISOutput]:
    graph = StateGraph(CISState, context_schema=CISContext, input_schema=InputState, output_schema=CISOutput)
    add_first_look(graph, "retrieve_candidates", retrieve)
    graph.add_node("retrieve_candidates", retrieve_candidates)
    graph.add_node("rerank_cis", rerank_cis)
    graph.add_edge("retrieve_candidates", "rerank_cis")
    add_own_answer(graph, "rerank_cis")
    return graph


METHOD = Method(
    "cis",
    build,
    CISContext,
    "rerank top-N by causal inference score log p(K|Q) − log p(K), answer from the top-k",
    paper="cis-causal-knowledge-retrieval.md",
    cpu_params={"n_candidates": 15},
)
