"""MoI, Mixture-of-Intervention (Lee et al.): retrieve_candidates (n) → permute → score → solve → answer.

The baselines of the paper run through the same graph (``variant=``): ``bayes_saliency``
(permute gives singletons), ``random`` (shuffle → answer), ``self_consistency`` (permute → vote).
"""

from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from causalrag.graphs.registry import Method
from causalrag.nodes.common import answer_reranked, context
from causalrag.nodes.moi import permute, retrieve_candidates, score, shuffle, solve, vote
from causalrag.state.base import InputState
from causalrag.state.moi import MoIContext, MoIOutput, MoIState


def route_after_retrieve(state: MoIState, runtime: Runtime[MoIContext]) -> Literal["permute", "shuffle"]:
    """The ``random`` baseline shuffles the candidates; every other variant permutes them."""
    return "shuffle" if context(runtime).variant == "random" else "permute"


def route_after_permute(state: MoIState, runtime: Runtime[MoIContext]) -> Literal["score", "vote"]:
    """The ``self_consistency`` baseline votes over the permutations; every other variant scores them."""
    return "vote" if context(runtime).variant == "self_consistency" else "score"


def build() -> StateGraph[MoIState, MoIContext, InputState, MoIOutput]:
    """The uncompiled MoI graph, with the paper's baselines as branches."""
    graph = StateGraph(MoIState, context_schema=MoIContext, input_schema=InputState, output_schema=MoIOutput)
    graph.add_node("retrieve_candidates", retrieve_candidates)
    graph.add_node("permute", permute)
    graph.add_node("score", score)
    graph.add_node("solve", solve)
    graph.add_node("shuffle", shuffle)
    graph.add_node("vote", vote)
    graph.add_node("answer_reranked", answer_reranked)
    graph.add_edge(START, "retrieve_candidates")
    graph.add_conditional_edges("retrieve_candidates", route_after_retrieve)
    graph.add_conditional_edges("permute", route_after_permute)
    graph.add_edge("score", "solve")
    graph.add_edge("solve", "answer_reranked")
    graph.add_edge("shuffle", "answer_reranked")
    graph.add_edge("answer_reranked", END)
    graph.add_edge("vote", END)
    return graph


METHOD = Method(
    "moi",
    build,
    MoIContext,
    "score permuted orders of the passages, separate position bias from utility, answer in utility order",
    paper="moi-mixture-of-intervention.md",
)
