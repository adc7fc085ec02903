"""Astute RAG (Wang et al., 2024): elicit internal knowledge → source-aware consolidation ⟲ t → finalize.

Algorithm 1 of the paper, one node per step: the model writes up to m̂ passages from memory
(``elicit``, §3.3) beside the retrieved E (``retrieve``); ``build_pool`` labels every passage by source
(D₀, S₀); ``consolidate`` regroups them t times (§3.4); ``propose`` answers each group with a
confidence and ``select`` keeps the most reliable answer (§3.5). With ``combined=True`` the last
round is merged with answering in ``answer_combined`` (t = 1: one call on D₀, the paper's shortcut).

Before any of it, standard RAG's reading (``answer``) and ``assess`` look at the shape of the
evidence (:mod:`causalrag.nodes.triage`): nothing conflicts → that answer stands; the sources
disagree → the consolidation above; the model's knowledge overrules the passages → the internal
passages decide (``trust_knowledge``), unless a counterfactual contrast already weighed the answer on
the retrieved passages; the sources scatter over lone answers and one passage is the one the question
is asked of → its answer (``answer_focus``). ``mechanism="paper"`` runs the paper's path for every question.
"""

from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from causalrag.graphs.registry import Method
from causalrag.nodes.astute import answer_combined, build_pool, consolidate, elicit, propose, select
from causalrag.nodes.common import answer, context, retrieve
from causalrag.nodes.triage import answer_focus, assess, contrasted, recall, route_by_shape, trust_knowledge
from causalrag.state.astute import AstuteContext, AstuteOutput, AstuteState
from causalrag.state.base import InputState


def route_after_retrieve(state: AstuteState, runtime: Runtime[AstuteContext]) -> Literal["recall", "elicit"]:
    """The paper's path goes straight to its own steps; every other path first reads the passages as standard RAG."""
    return "elicit" if context(runtime).mechanism == "paper" else "recall"


def route_after_assess(
    state: AstuteState, runtime: Runtime[AstuteContext]
) -> Literal["elicit", "trust_knowledge", "answer_focus", "__end__"]:
    """Keep ends; the focus route answers from its passage (``answer_focus``); a counterfactual contrast's
    answer goes straight to ``trust_knowledge`` (it was weighed on the retrieved passages themselves, and on
    the dev half the memory passages only chose back the passages' answer: docs/results.md, 2026-11-26);
    every other route first writes memory passages."""
    route = route_by_shape(state)
    if route == "keep":
        return "__end__"
    if route == "focus":
        return "answer_focus"
    return "trust_knowledge" if contrasted(state, context(runtime)) else "elicit"


def route_after_elicit(state: AstuteState) -> Literal["build_pool", "trust_knowledge"]:
    return "trust_knowledge" if route_by_shape(state) == "knowledge" else "build_pool"


def route_after_pool(state: AstuteState, runtime: Runtime[AstuteContext]) -> Literal["consolidate", "answer_combined"]:
    return "consolidate" if context(runtime).consolidation_rounds() > 0 else "answer_combined"


def route_after_consolidate(
    state: AstuteState, runtime: Runtime[AstuteContext]
) -> Literal["consolidate", "propose", "answer_combined"]:
    """Loop on the iteration counter, stopping early once a scored round moved no source (converged)."""
    ctx = context(runtime)
    if state["iteration"] < ctx.consolidation_rounds() and not state.get("converged"):
        return "consolidate"
    return "answer_combined" if ctx.combined else "propose"


def build() -> StateGraph[AstuteState, AstuteContext, InputState, AstuteOutput]:
    graph = StateGraph(AstuteState, context_schema=AstuteContext, input_schema=InputState, output_schema=AstuteOutput)
    graph.add_node("retrieve", retrieve)
    graph.add_node("recall", recall)
    graph.add_node("answer", answer)
    graph.add_node("assess", assess)
    graph.add_node("elicit", elicit)
    graph.add_node("trust_knowledge", trust_knowledge)
    graph.add_node("answer_focus", answer_focus)
    graph.add_node("build_pool", build_pool)
    graph.add_node("consolidate", consolidate)
    graph.add_node("propose", propose)
    graph.add_node("select", select)
    graph.add_node("answer_combined", answer_combined)
    graph.add_edge(START, "retrieve")
    graph.add_conditional_edges("retrieve", route_after_retrieve)
    graph.add_edge("recall", "answer")
    graph.add_edge("answer", "assess")
    graph.add_conditional_edges("assess", route_after_assess, ["elicit", "trust_knowledge", "answer_focus", END])
    graph.add_edge("answer_focus", END)
    graph.add_conditional_edges("elicit", route_after_elicit)
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
