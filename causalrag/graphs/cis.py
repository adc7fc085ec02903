"""CIS retrieval (Causal Knowledge Retrieval): retrieve top-N → rerank by CIS, keep top-k → answer.

Before it, standard RAG's reading (``retrieve``, ``answer``) and ``assess`` look at the shape of the
evidence (:mod:`causalrag.nodes.triage`): nothing conflicts → that answer stands; the sources disagree →
the reranking above; the model's knowledge overrules the passages → ``trust_knowledge``.
``mechanism="paper"`` reranks for every question.
"""

from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from causalrag.graphs.registry import Method
from causalrag.nodes.cis import rerank_cis, retrieve, retrieve_candidates
from causalrag.nodes.common import answer, answer_reranked, context
from causalrag.nodes.triage import assess, route_by_shape, trust_knowledge
from causalrag.state.base import InputState
from causalrag.state.cis import CISContext, CISOutput, CISState


def route_at_start(state: CISState, runtime: Runtime[CISContext]) -> Literal["retrieve", "retrieve_candidates"]:
    """The paper's path goes straight to its own steps; every other path first reads the passages as standard RAG."""
    return "retrieve_candidates" if context(runtime).mechanism == "paper" else "retrieve"


def build() -> StateGraph[CISState, CISContext, InputState, CISOutput]:
    graph = StateGraph(CISState, context_schema=CISContext, input_schema=InputState, output_schema=CISOutput)
    graph.add_node("retrieve", retrieve)
    graph.add_node("answer", answer)
    graph.add_node("assess", assess)
    graph.add_node("trust_knowledge", trust_knowledge)
    graph.add_node("retrieve_candidates", retrieve_candidates)
    graph.add_node("rerank_cis", rerank_cis)
    graph.add_node("answer_reranked", answer_reranked)
    graph.add_conditional_edges(START, route_at_start)
    graph.add_edge("retrieve", "answer")
    graph.add_edge("answer", "assess")
    # no "paper" route here: the paper's path never reaches the assessment (route_at_start)
    graph.add_conditional_edges(
        "assess", route_by_shape, {"keep": END, "knowledge": "trust_knowledge", "vote": "retrieve_candidates"}
    )
    graph.add_edge("trust_knowledge", END)
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
