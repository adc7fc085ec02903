"""CF-RAG (Qin et al. 2025): counterfactual exploration → parallel hypotheses → causal arbitration.

Algorithm 1: counterfactual queries (validated) → dialectical retrieval + dedup/filter →
spectral clusters + stratified samples → M hypotheses in parallel (one ``Send`` branch each) →
Ψ = (1 − λ)·φ_coh + λ·φ_causal → consensus? accept a_{j*} : synthesize the top 3.
"""


from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from causalrag.graphs.registry import Method
from causalrag.nodes.cf_rag import (
    accept,
    arbitrate,
    cluster_and_sample,
    dialectical_retrieve,
    explore_counterfactuals,
    hypothesize,
    synthesize,
)
from causalrag.nodes.common import retrieve
from causalrag.state.base import ReadInput
from causalrag.state.cf_rag import CFRAGContext, CFRAGOutput, CFRAGState, Route


def send_hypotheses(state: CFRAGState) -> list[Send]:
    """Fan out: one ``hypothesize`` branch per evidence sample E_j (Algorithm 1, lines 7-9).

    Each branch gets the readings of its own passages alone.
    """
    read = state.get("read") or {}
    return [
        Send(
            "hypothesize",
            {
                "question": state["question"],
                "index": j,
                "documents": docs,
                "candidates": state.get("candidates") or [],
                "read": {d.id: read[d.id] for d in docs if d.id in read},
            },
        )
        for j, docs in enumerate(state["samples"])
    ]


def route_after_arbitrate(state: CFRAGState) -> Route:
    """HighConsensus → accept the best hypothesis; otherwise synthesize the top 3 (lines 15-18)."""
    return "accept" if state.get("consensus") else "synthesize"


def build() -> StateGraph[CFRAGState, CFRAGContext, ReadInput, CFRAGOutput]:
    """The uncompiled CF-RAG graph, nodes in Algorithm 1's order."""
    graph = StateGraph(CFRAGState, context_schema=CFRAGContext, input_schema=ReadInput, output_schema=CFRAGOutput)
    graph.add_node("retrieve", retrieve)
    graph.add_node("explore_counterfactuals", explore_counterfactuals)
    graph.add_node("dialectical_retrieve", dialectical_retrieve)
    graph.add_node("cluster_and_sample", cluster_and_sample)
    graph.add_node("hypothesize", hypothesize)
    graph.add_node("arbitrate", arbitrate)
    graph.add_node("accept", accept)
    graph.add_node("synthesize", synthesize)
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "explore_counterfactuals")
    graph.add_edge("explore_counterfactuals", "dialectical_retrieve")
    graph.add_edge("dialectical_retrieve", "cluster_and_sample")
    graph.add_conditional_edges("cluster_and_sample", send_hypotheses, ["hypothesize"])
    graph.add_edge("hypothesize", "arbitrate")
    graph.add_conditional_edges("arbitrate", route_after_arbitrate, ["accept", "synthesize"])
    graph.add_edge("accept", END)
    graph.add_edge("synthesize", END)
    return graph


METHOD = Method(
    "cf_rag",
    build,
    CFRAGContext,
    "counterfactual queries, dialectical evidence, parallel hypotheses, causal arbitration",
    paper="Qin et al. 2025, Counterfactual Reasoning for Retrieval-Augmented Generation",
    cpu_params={"n_counterfactuals": 2, "hypotheses": 2},
)
