"""Astute RAG (Wang et al., 2024): elicit internal knowledge → source-aware consolidation ⟲ t → finalize.

Algorithm 1 of the paper, one node per step: the model writes up to m̂ passages from memory
(``elicit``, §3.3) beside the retrieved E (``retrieve``); ``build_pool`` labels every passage by source
(D₀, S₀); ``consolidate`` regroups them t times (§3.4); ``propose`` answers each group with a
confidence and ``select`` keeps the most reliable answer (§3.5). With ``combined=True`` the last
round is merged with answering in ``answer_combined`` (t = 1: one call on D₀, the paper's shortcut).
"""

from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from causalrag.graphs.registry import Method
from causalrag.nodes.astute import answer_combined, build_pool, consolidate, elicit, propose, select
from causalrag.nodes.common import context, retrieve
from causalrag.state.astute import AstuteContext, AstuteOutput, AstuteState
from causalrag.state.base import ReadInput


def route_after_pool(state: AstuteState, runtime: Runtime[AstuteContext]) -> Literal["consolidate", "answer_combined"]:
    """Consolidate when a separate round is left; otherwise go straight to the merged last step (t = 1, combined)."""
    return "consolidate" if context(runtime).consolidation_rounds() > 0 else "answer_combined"


def route_after_consolidate(
    state: AstuteState, runtime: Runtime[AstuteContext]
) -> Literal["consolidate", "propose", "answer_combined"]:
    """Loop on the iteration counter, stopping early once a scored round moved no source (converged)."""
    ctx = context(runtime)
    if state["iteration"] < ctx.consolidation_rounds() and not state.get("converged"):
        return "consolidate"
    return "answer_combined" if ctx.combined else "propose"


def build() -> StateGraph[AstuteState, AstuteContext, ReadInput, AstuteOutput]:
    """The uncompiled Astute RAG graph, nodes in Algorithm 1's order."""
    graph = StateGraph(AstuteState, context_schema=AstuteContext, input_schema=ReadInput, output_schema=AstuteOutput)
    graph.add_node("retrieve", retrieve)
    graph.add_node("elicit", elicit)
    graph.add_node("build_pool", build_pool)
    graph.add_node("consolidate", consolidate)
    graph.add_node("propose", propose)
    graph.add_node("select", select)
    graph.add_node("answer_combined", answer_combined)
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "elicit")
    graph.add_edge("elicit", "build_pool")
    graph.add_conditional_edges("build_pool", route_after_pool)
    graph.add_conditional_edges("consolidate", route_after_consolidate)
    graph.add_edge("propose", "select")
    graph.add_edge("select", END)
    graph.add_edge("answer_combined", END)
    return graph


METHOD = Method(
    "astute",
    build,
    AstuteContext,
    "Astute RAG: memory passages + retrieved, source-aware consolidation (t rounds), most reliable answer",
    paper="astute-rag.md",
    cpu_params={"iterations": 1},
)
