"""RetroRAG (Xiao et al.): collate → discover → answer → self-consistency check ⟲ re-query.

Each pass is one iteration L: evidence collation revises the source evidence E_s (earlier
passages can be dropped for better ones), evidence discovery keeps gated inferences E_i, the
Answerer writes (a, r) and a temperature-1.0 answer a_sc, and the loop stops once s_sc > t
(or after ``max_iterations``); otherwise the re-query generator targets the missing information.

Before the loop, standard RAG's reading (``answer``) and ``assess`` look at the shape of the evidence
(:mod:`causalrag.nodes.triage`): nothing conflicts → that answer stands; the sources disagree → the
loop; the model's knowledge overrules the passages → ``trust_knowledge``; the sources scatter over
lone answers and one passage is the one the question is asked of → ``answer_focus``. ``mechanism="paper"``
runs the loop for every question.
"""

from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from causalrag.graphs.registry import Method
from causalrag.nodes.common import answer, context, retrieve
from causalrag.nodes.retro import answer_from_evidence, check, collate, discover, requery
from causalrag.nodes.triage import answer_focus, assess, recall, route_by_shape, trust_knowledge
from causalrag.state.base import InputState
from causalrag.state.retro import RetroContext, RetroOutput, RetroState


def route_after_retrieve(state: RetroState, runtime: Runtime[RetroContext]) -> Literal["recall", "collate"]:
    """The paper's path goes straight to its loop; every other path first reads the passages as standard RAG."""
    return "collate" if context(runtime).mechanism == "paper" else "recall"


def route_after_check(state: RetroState) -> Literal["requery", "__end__"]:
    """Stop when the answer is self-consistent (s_sc > t) or the iteration budget is spent."""
    return "__end__" if state.get("stop_reason") else "requery"  # END, spelled as the Literal names it


def build() -> StateGraph[RetroState, RetroContext, InputState, RetroOutput]:
    graph = StateGraph(RetroState, context_schema=RetroContext, input_schema=InputState, output_schema=RetroOutput)
    graph.add_node("retrieve", retrieve)
    graph.add_node("recall", recall)
    graph.add_node("answer", answer)
    graph.add_node("assess", assess)
    graph.add_node("trust_knowledge", trust_knowledge)
    graph.add_node("answer_focus", answer_focus)
    graph.add_node("collate", collate)
    graph.add_node("discover", discover)
    graph.add_node("answer_from_evidence", answer_from_evidence)
    graph.add_node("check", check)
    graph.add_node("requery", requery)
    graph.add_edge(START, "retrieve")
    graph.add_conditional_edges("retrieve", route_after_retrieve)
    graph.add_edge("recall", "answer")
    graph.add_edge("answer", "assess")
    graph.add_conditional_edges(
        "assess",
        route_by_shape,
        {"keep": END, "knowledge": "trust_knowledge", "focus": "answer_focus", "vote": "collate", "paper": "collate"},
    )
    graph.add_edge("trust_knowledge", END)
    graph.add_edge("answer_focus", END)
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
