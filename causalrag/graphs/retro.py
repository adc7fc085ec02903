"""RetroRAG (Xiao et al.): collate → discover → answer → self-consistency check ⟲ re-query.

Each pass is one iteration L: evidence collation revises the source evidence E_s (earlier
passages can be dropped for better ones), evidence discovery keeps gated inferences E_i, the
Answerer writes (a, r) and a temperature-1.0 answer a_sc, and the loop stops once s_sc > t
(or after ``max_iterations``); otherwise the re-query generator targets the missing information.
"""

from typing import Literal

from langgraph.graph import END, START, StateGraph

from causalrag.graphs.registry import Method
from causalrag.nodes.common import retrieve
from causalrag.nodes.retro import answer_from_evidence, check, collate, discover, requery
from causalrag.state.base import ReadInput
from causalrag.state.retro import RetroContext, RetroOutput, RetroState


def route_after_check(state: RetroState) -> Literal["requery", "__end__"]:
    """Stop when the answer is self-consistent (s_sc > t) or the iteration budget is spent."""
    return "__end__" if state.get("stop_reason") else "requery"  # END, spelled as the Literal names it


def build() -> StateGraph[RetroState, RetroContext, ReadInput, RetroOutput]:
    """The uncompiled RetroRAG graph: the collate → discover → answer → check loop."""
    graph = StateGraph(RetroState, context_schema=RetroContext, input_schema=ReadInput, output_schema=RetroOutput)
    graph.add_node("retrieve", retrieve)
    graph.add_node("collate", collate)
    graph.add_node("discover", discover)
    graph.add_node("answer_from_evidence", answer_from_evidence)
    graph.add_node("check", check)
    graph.add_node("requery", requery)
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "collate")
    graph.add_edge("collate", "discover")
    graph.add_edge("discover", "answer_from_evidence")
    graph.add_edge("answer_from_evidence", "check")
    graph.add_conditional_edges("check", route_after_check, ["requery", END])
    graph.add_edge("requery", "collate")
    return graph


METHOD = Method(
    "retro",
    build,
    RetroContext,
    "evidence collation + discovery loop with a self-consistency stop",
    paper="Xiao et al., Retrieval-Augmented Generation by Evidence Retroactivity in LLMs (RetroRAG)",
    cpu_params={"max_iterations": 2},
)
