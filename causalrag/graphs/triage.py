"""``triage``: our router over the papers' mechanisms (docs/methods/triage.md).

Probes: retrieve → ``recall`` (closed-book answer and confidence) → ``answer`` (standard RAG's joint reading)
→ ``read_alone`` (each passage alone, grouped) → ``contrast`` / ``focus_probe`` where the decision needs them
→ ``decide_route`` (:func:`causalrag.nodes.decide.decide` over the evidence record). Routes, each its own node:
``keep`` ends with the joint reading; ``vote`` runs ``answer_confirmed`` or a paper method's aggregation on the
same passages (``vote``, a subgraph); ``knowledge`` runs ``trust_knowledge`` (after Astute's ``elicit`` with
``knowledge_with="astute"``); ``focus`` runs ``answer_focus``.
"""

from functools import cache
from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from causalrag.graphs.registry import Method, get_method, make_context
from causalrag.nodes.astute import elicit
from causalrag.nodes.common import DEFAULT_CONTEXT_KEY, answer, context, emit, question_of, retrieve, traced
from causalrag.nodes.decide import RulePolicy, rival_of, taken_contrast, wants_focus
from causalrag.nodes.triage import (
    answer_confirmed,
    answer_focus,
    contrast,
    decide_route,
    every_probe,
    focus_probe,
    read_alone,
    recall,
    trust_knowledge,
)
from causalrag.state.base import InputState
from causalrag.state.triage import TriageContext, TriageOutput, TriageState


def route_after_reading(
    state: TriageState, runtime: Runtime[TriageContext]
) -> Literal["contrast", "focus_probe", "decide_route"]:
    """Pick the probe the decision needs next after the passages were read alone.

    Ask the contrast where the decision would weigh a rival answer, the focus probe where the sources
    scatter (both where they can be asked, with ``probes="all"``); neither when a route is forced.
    """
    ctx = context(runtime)
    policy, every = RulePolicy.of(ctx), every_probe(ctx)
    if ctx.route != "auto" and not every:
        return "decide_route"
    if rival_of(state["evidence"], policy, every=every) is not None:
        return "contrast"
    return "focus_probe" if wants_focus(state["evidence"], policy, every=every) else "decide_route"


def route_after_contrast(state: TriageState, runtime: Runtime[TriageContext]) -> Literal["focus_probe", "decide_route"]:
    """With ``probes="all"`` the focus probe runs after the contrast too, where it can be asked."""
    ctx = context(runtime)
    every = every_probe(ctx)
    return "focus_probe" if every and wants_focus(state["evidence"], RulePolicy.of(ctx), every=True) else "decide_route"


def route_by_decision(
    state: TriageState, runtime: Runtime[TriageContext]
) -> Literal["__end__", "answer_confirmed", "vote", "elicit", "trust_knowledge", "answer_focus"]:
    """The decided route's node.

    On the knowledge route, Astute's memory passages are written only where no contrast already weighed
    the answer on the retrieved passages themselves.
    """
    ctx, route = context(runtime), state["decision"]["route"]
    if route == "keep":
        return "__end__"
    if route == "vote":
        return "answer_confirmed" if ctx.vote_with == "confirm" else "vote"
    if route == "focus":
        return "answer_focus"
    contrasted = taken_contrast(state["evidence"], RulePolicy.of(ctx))
    return "elicit" if ctx.knowledge_with == "astute" and not contrasted else "trust_knowledge"


@cache
def voter(name: str) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The compiled graph of the paper method the vote route runs."""
    return get_method(name).build().compile(name=name)


@traced
def vote(state: TriageState, runtime: Runtime[TriageContext]) -> dict[str, Any]:
    """The vote route with ``vote_with`` a paper method, run as a subgraph.

    The method's own graph runs on the passages retrieved here (its retrieval restricted to their ids),
    with the readings made here.
    """
    ctx = context(runtime)
    docs = list(state.get("documents") or [])
    ids = [d.id for d in docs if d.id]
    params = dict(get_method(ctx.vote_with).cpu_params) if ctx.vote_size == "cpu" else {}
    params |= {"llm": ctx.llm, "store": ctx.store, "collection": ctx.collection, "k": ctx.k,
               "ids": ids if len(ids) == len(docs) else ctx.ids, "max_new_tokens": ctx.max_new_tokens}
    sub = make_context(ctx.vote_with, **params)
    result = voter(ctx.vote_with).invoke(
        {"question": question_of(state), "read": state.get("read") or {}},
        config={"configurable": {DEFAULT_CONTEXT_KEY: sub}},
        context=sub,
    )
    path = [e.get("node") for e in result.get("trace") or []]
    emit(runtime, "answer", "vote", answer=result["answer"], vote_with=ctx.vote_with)
    return {
        "answer": result["answer"],
        "documents": result.get("documents") or docs,
        "trace": [{"vote_with": ctx.vote_with, "vote_path": path, "answer": result["answer"]}],
    }


def build() -> StateGraph[TriageState, TriageContext, InputState, TriageOutput]:
    """The uncompiled triage graph: the probes, the decision, and one node per route."""
    graph = StateGraph(TriageState, context_schema=TriageContext, input_schema=InputState, output_schema=TriageOutput)
    graph.add_node("retrieve", retrieve)
    graph.add_node("recall", recall)
    graph.add_node("answer", answer)
    graph.add_node("read_alone", read_alone)
    graph.add_node("contrast", contrast)
    graph.add_node("focus_probe", focus_probe)
    graph.add_node("decide_route", decide_route)
    graph.add_node("answer_confirmed", answer_confirmed)
    graph.add_node("vote", vote)
    graph.add_node("elicit", elicit)
    graph.add_node("trust_knowledge", trust_knowledge)
    graph.add_node("answer_focus", answer_focus)
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "recall")
    graph.add_edge("recall", "answer")
    graph.add_edge("answer", "read_alone")
    graph.add_conditional_edges("read_alone", route_after_reading)
    graph.add_conditional_edges("contrast", route_after_contrast)
    graph.add_edge("focus_probe", "decide_route")
    graph.add_conditional_edges("decide_route", route_by_decision)
    graph.add_edge("elicit", "trust_knowledge")
    for last in ("answer_confirmed", "vote", "trust_knowledge", "answer_focus"):
        graph.add_edge(last, END)
    return graph


METHOD = Method(
    "triage",
    build,
    TriageContext,
    "our router: probe the evidence, then keep standard RAG's answer, vote, trust the model, or focus",
    cpu_params={"vote_size": "cpu"},
)
