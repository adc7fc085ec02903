"""MoI, Mixture-of-Intervention (Lee et al.): retrieve_candidates (n) → permute → score → solve → answer.

The baselines of the paper run through the same graph (``variant=``): ``bayes_saliency``
(permute gives singletons), ``random`` (shuffle → answer), ``self_consistency`` (permute → vote).

Before it, standard RAG's reading (``retrieve``, ``answer``) and ``assess`` look at the shape of the
evidence (:mod:`causalrag.nodes.triage`): nothing conflicts → that answer stands; the sources disagree →
the mixture above, then the answer the passages in utility order confirm across sources (``answer_confirmed``);
the model's knowledge overrules the passages → ``trust_knowledge``; the sources scatter over lone answers and
one passage is the one the question is asked of → ``answer_focus``. ``mechanism="paper"`` runs the mixture for
every question and reads the passages together in utility order (``answer_reranked``).
"""

from typing import Literal

from langgraph.graph import END, StateGraph
from langgraph.runtime import Runtime

from causalrag.graphs.first_look import add_first_look, add_own_answer
from causalrag.graphs.registry import Method
from causalrag.nodes.common import context
from causalrag.nodes.moi import permute, retrieve_candidates, score, shuffle, solve, vote
from causalrag.state.base import InputState
from causalrag.state.moi import MoIContext, MoIOutput, MoIState


def route_after_retrieve(state: MoIState, runtime: Runtime[MoIContext]) -> Literal["permute", "shuffle"]:
    return "shuffle" if context(runtime).variant == "random" else "permute"


def route_after_permute(state: MoIState, runtime: Runtime[MoIContext]) -> Literal["score", "vote"]:
    return "vote" if context(runtime).variant == "self_consistency" else "score"


def build() -> StateGraph[MoIState, MoIContext, InputState, MoIOutput]:
    graph = StateGraph(MoIState, context_schema=MoIContext, input_schema=InputState, output_schema=MoIOutput)
    add_first_look(graph, "retrieve_candidates")
    graph.add_node("retrieve_candidates", retrieve_candidates)
    graph.add_node("permute", permute)
    graph.add_node("score", score)
    graph.add_node("solve", solve)
    graph.add_node("shuffle", shuffle)
    graph.add_node("vote", vote)
    graph.add_conditional_edges("retrieve_candidates", route_after_retrieve)
    graph.add_conditional_edges("permute", route_after_permute)
    graph.add_edge("score", "solve")
    add_own_answer(graph, "solve", "shuffle")
    graph.add_edge("vote", END)
    return graph


METHOD = Method(
    "moi",
    build,
    MoIContext,
    "score permuted orders of the passages, separate position bias from utility, answer in utility order",
    paper="moi-mixture-of-intervention.md",
)
