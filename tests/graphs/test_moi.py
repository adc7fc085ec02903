"""MoI graph with a fake LLM and a real in-memory store: every variant's route, the batched
calls, the trace figures (w, u), streaming, reuse of ``rerank_moi`` and bad input."""

import pytest
from langgraph.graph import END, START, StateGraph

import causalrag
from causalrag.errors import EmptyQuestionError
from causalrag.graphs.registry import build_graph
from causalrag.nodes.common import retrieve
from causalrag.nodes.moi import rerank_moi
from causalrag.state.base import InputState
from causalrag.state.moi import MoIContext, MoIOutput, MoIState
from causalrag.tools.store import Passage, Store
from tests.fakes import FakeLLM

QUESTION = "What is the capital city of Australia?"
MIXTURE = ["retrieve_candidates", "permute", "score", "solve", "answer_reranked"]


def passage_lines(prefix: str) -> list[str]:
    return [line for line in prefix.splitlines() if line.startswith("[")]


def saliency(prefix: str, continuation: str) -> float:
    """Fake log p(q | passages): the Canberra passage helps, the more so the earlier it comes
    (primacy, as the paper's Fig. 6); every passage adds a little; no passages → -20."""
    lines = passage_lines(prefix)
    bias = [(len(lines) - i) / len(lines) for i in range(len(lines))]
    return -20.0 + sum(b * (3.0 if "Canberra:" in line else 0.2) for b, line in zip(bias, lines, strict=True))


def run(llm, store, **params):
    """MoI's own path (its routing: tests/graphs/test_routing.py)."""
    return build_graph("moi", llm=llm, store=store, **params).invoke({"question": QUESTION})


def titles(docs):
    return [d.metadata["title"] for d in docs]


def test_moi_scores_permutations_in_one_batch_and_answers_in_utility_order(memory_store):
    llm = FakeLLM(default=" Canberra", logprob=saliency)
    state = run(llm, memory_store, candidates=5, k=3)
    assert [e["node"] for e in state["trace"]] == MIXTURE
    permute, score, solve = state["trace"][1:4]
    assert permute["permutations"] == 15 and permute["positions"] == 5  # |S| = 2n unpruned, and 5 singletons
    assert score["llm_calls"] == 16 and score["forward_passes"] == 1  # 15 prompts + log p(q), one call
    assert sum(1 for p, _ in llm.scored if "(none)" in p) == 1  # p(q) once per question
    assert all(c == " " + QUESTION for _, c in llm.scored)
    assert sum(solve["w"]) == pytest.approx(1.0, abs=1e-3) and solve["w"][0] == max(solve["w"])
    assert len(solve["u"]) == 5 and solve["u"][solve["ranking"][0]] == max(solve["u"])
    assert titles(state["documents"])[0] == "Canberra" and len(state["documents"]) == 3
    assert len(state["ranking"]) == 5 and state["answer"] == "Canberra"
    assert state["position_weights"] == pytest.approx(solve["w"], abs=1e-4) and len(state["utilities"]) == 5
    # the answer prompt reads the reranked passages (top one next to the question)
    assert llm.prompts[-1].split("Question: " + QUESTION)[0].rstrip().splitlines()[-1].startswith("[3] Canberra:")


def test_cyclic_pruned_proposal_costs_n_short_prompts(memory_store):
    llm = FakeLLM(default=" Canberra", logprob=saliency)
    state = run(llm, memory_store, candidates=5, proposal="cyclic", prefix=2, singletons=False)
    assert state["trace"][1]["permutations"] == 5 and state["trace"][1]["positions"] == 2
    scored = [p for p, _ in llm.scored if "(none)" not in p]
    assert len(scored) == 5 and all(len(passage_lines(p)) == 2 for p in scored)
    assert len(state["trace"][3]["w"]) == 2 and state["trace"][3]["identifiable"] is False
    assert titles(state["documents"])[0] == "Canberra"


def recency(prefix: str, continuation: str) -> float:
    """Fake log p(q | passages) of a model whose later passages weigh most (the mirror of :func:`saliency`)."""
    lines = passage_lines(prefix)
    bias = [(i + 1) / len(lines) for i in range(len(lines))]
    return -20.0 + sum(b * (3.0 if "Canberra:" in line else 0.2) for b, line in zip(bias, lines, strict=True))


def test_singletons_let_the_data_decide_the_sign_of_u_that_the_prior_would_guess(memory_store):
    """Orderings of all n passages identify only (w − 1/n)(u − ū); the front-heavy prior then fits a recency-biased
    model upside down and ranks the passage that answers last. Each passage scored alone fixes it."""
    paper = run(FakeLLM(default=" Canberra", logprob=recency), memory_store, candidates=5, singletons=False)
    assert paper["trace"][3]["identifiable"] is False and titles(paper["documents"])[-1] == "Canberra"
    llm = FakeLLM(default=" Canberra", logprob=recency)
    state = run(llm, memory_store, candidates=5)
    solve = state["trace"][3]
    assert solve["identifiable"] is True and titles(state["documents"])[0] == "Canberra"
    assert solve["w"][-1] == max(solve["w"])  # the bias is learned, not assumed
    alone = [p for p, _ in llm.scored if len(passage_lines(p)) == 1]
    assert len(alone) == 5 and len(llm.scored) == 16  # 10 orderings, 5 singletons, log p(q): one batch


def test_max_permutations_budget_caps_the_sample(memory_store):
    llm = FakeLLM(default=" Canberra", logprob=saliency)
    state = run(llm, memory_store, candidates=4, max_permutations=7, singletons=False)
    assert state["trace"][1]["permutations"] == 7 and len(llm.scored) == 8
    state = run(FakeLLM(logprob=saliency), memory_store, candidates=3, k=3, max_permutations=50, singletons=False)
    assert state["trace"][1]["permutations"] == 6  # all 3! orders


def test_bayes_saliency_baseline_scores_each_passage_alone(memory_store):
    llm = FakeLLM(default=" Canberra", logprob=saliency)
    state = run(llm, memory_store, variant="bayes_saliency", candidates=5)
    scored = [p for p, _ in llm.scored if "(none)" not in p]
    assert len(scored) == 5 and all(len(passage_lines(p)) == 1 for p in scored)
    assert state["position_weights"] == [1.0] and titles(state["documents"])[0] == "Canberra"
    assert [e["node"] for e in state["trace"]] == MIXTURE


def test_random_baseline_shuffles_without_scoring(memory_store):
    llm = FakeLLM(default=" Canberra", logprob=saliency)
    state = run(llm, memory_store, variant="random", candidates=5, seed=1)
    assert [e["node"] for e in state["trace"]] == ["retrieve_candidates", "shuffle", "answer_reranked"]
    assert llm.scored == [] and sorted(state["trace"][1]["ranking"]) == list(range(5))
    other = run(FakeLLM(logprob=saliency), memory_store, variant="random", candidates=5, seed=2)
    assert state["ranking"] != other["ranking"] and sorted(state["ranking"]) == sorted(other["ranking"])


def test_self_consistency_votes_over_one_batched_generate(memory_store):
    replies = {"[1] Sydney:": " Sydney", "[1] Canberra:": " Canberra"}  # answer = passage read first
    llm = FakeLLM(replies, default=" Canberra.")
    state = run(llm, memory_store, variant="self_consistency", sc_permutations=6, candidates=5)
    assert [e["node"] for e in state["trace"]] == ["retrieve_candidates", "permute", "vote"]
    vote = state["trace"][2]
    assert vote["llm_calls"] == 6 and vote["forward_passes"] == 1  # one batched generate
    said = ["Sydney" if "[1] Sydney:" in p else "Canberra" for p in llm.prompts]  # what the fake replied
    assert (said.count("Canberra"), said.count("Sydney")) == (4, 2)
    assert state["votes"] == {"canberra": 4, "sydney": 2} and state["answer"] == "Canberra"  # the majority
    assert vote["vote_fallbacks"] == 0


def test_self_consistency_with_only_empty_answers_falls_back_to_empty(memory_store):
    state = run(FakeLLM(default="\n\n"), memory_store, variant="self_consistency", sc_permutations=3)
    assert (
        state["answer"] == "" and state["trace"][2]["vote_fallbacks"] == 1 and state["trace"][2]["empty_answers"] == 3
    )


def test_stream_shows_permutations_scores_weights_and_utilities(memory_store):
    graph = build_graph(
        "moi",
        llm=FakeLLM(default=" Canberra", logprob=saliency),
        store=memory_store,
        candidates=4,
        k=4,
    )
    events = list(graph.stream({"question": QUESTION}, stream_mode=["updates", "custom"]))
    custom = {e["type"]: e for mode, e in events if mode == "custom"}
    assert {"evidence", "permutations", "scores", "position_weights", "utilities", "token", "answer"} <= set(custom)
    assert len(custom["permutations"]["permutations"]) == 12 and len(custom["scores"]["saliency"]) == 12  # 8 + 4 alone
    assert custom["utilities"]["utilities"][0]["title"] == "Canberra"
    assert [next(iter(u)) for mode, u in events if mode == "updates"] == MIXTURE


def test_rerank_moi_is_a_drop_in_node(memory_store):
    graph = StateGraph(MoIState, context_schema=MoIContext, input_schema=InputState, output_schema=MoIOutput)
    graph.add_node("retrieve", retrieve)
    graph.add_node("rerank_moi", rerank_moi)
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "rerank_moi")
    graph.add_edge("rerank_moi", END)
    ctx = MoIContext(llm=FakeLLM(logprob=saliency), store=memory_store, k=4)
    state = graph.compile().invoke({"question": QUESTION}, context=ctx)
    assert titles(state["documents"])[0] == "Canberra" and len(state["ranking"]) == 4
    assert state["trace"][-1]["permutations"] == 12 and sum(state["trace"][-1]["w"]) == pytest.approx(1.0, abs=1e-3)


# Eq. 4 end to end: log p(q | π) − log p(q) is exactly Σ_j w_j · u_π(j) over the pruned orders scored
W = [0.6, 0.3, 0.1]  # position bias of the first 3 positions (the prompts hold prefix=3 passages)
U = {  # utility of each passage
    "Canberra": 2.0,
    "Parliament House": 1.8,
    "Sydney": 0.5,
    "Melbourne": 0.2,
    "Perth": -0.5,
}
TEXTS = {
    "Canberra": "Canberra is the capital city of Australia.",
    "Parliament House": "Parliament House in Canberra is where Australia's parliament meets.",
    "Sydney": "Sydney is the largest city in Australia.",
    "Melbourne": "Melbourne was the seat of government of Australia until 1927.",
    "Perth": "Perth is the capital of Western Australia.",
}


def titles_in(prefix: str) -> list[str]:
    return [line.split("] ", 1)[1].split(":", 1)[0] for line in passage_lines(prefix)]


def mixture(order: list[str]) -> float:
    """Σ_j w_j · u_order(j); 0 for the passage-free prompt of log p(q)."""
    return sum(w * U[t] for w, t in zip(W, order, strict=False))


@pytest.mark.parametrize("proposal", ["sampled", "tree"])
def test_solve_recovers_the_position_bias_and_the_utilities(proposal):
    """Random orders: the plain mean score of the orders holding a passage ranks Sydney first (it sat up front
    more often); the tree puts every passage at every position equally often (3 times in 15 orders). Either
    way Eq. 4 separates w from u and ranks Canberra first. The weak prior of the solve moves u by ~0.02."""
    passages = [Passage(t, x) for t, x in TEXTS.items()]
    llm = FakeLLM(default=" Canberra", logprob=lambda prefix, _: -20.0 + mixture(titles_in(prefix)))
    state = run(llm, Store.in_memory(passages), candidates=5, k=3, prefix=3, max_permutations=15, proposal=proposal)
    orders = [titles_in(p) for p, _ in llm.scored if "(none)" not in p]
    assert len(orders) == len(set(map(tuple, orders))) == 15 and all(len(o) == 3 for o in orders)
    if proposal == "sampled":
        mean = {t: sum(mixture(o) for o in orders if t in o) / sum(t in o for o in orders) for t in U}
        assert max(mean, key=mean.get) == "Sydney"
    else:
        assert all(sum(o[j] == t for o in orders) == 3 for t in U for j in range(3))
    solve = state["trace"][3]
    assert solve["identifiable"] and solve["solver_fallbacks"] == 0
    assert state["position_weights"] == pytest.approx(W, abs=0.01)
    title_of = {p.id: p.title for p in passages}
    best_first = sorted(U, key=U.get, reverse=True)
    assert [title_of[i] for i in state["ranking"]] == best_first
    assert dict(zip(best_first, sorted(state["utilities"], reverse=True), strict=True)) == pytest.approx(U, abs=0.05)
    assert titles(state["documents"]) == best_first[:3]
    # the answer prompt reads the top k in utility order, the best one next to the question
    read = titles_in(llm.prompts[-1].rsplit("Passages:", 1)[1])
    assert read == best_first[:3][::-1] and state["answer"] == "Canberra"


class EmptyStore:
    def retrieve(self, query, k, mode="dense", ids=None):
        return []


@pytest.mark.parametrize("variant", ["moi", "bayes_saliency", "random", "self_consistency"])
def test_no_passages_degrade_to_closed_book(variant):
    state = run(FakeLLM(default=" dunno", logprob=saliency), EmptyStore(), variant=variant)
    assert state["ranking"] == [] and state["documents"] == [] and state["answer"] == "dunno"


def test_empty_question_is_a_clear_error(memory_store):
    with pytest.raises(EmptyQuestionError):
        build_graph("moi", llm=FakeLLM(), store=memory_store).invoke({"question": " "})


def test_registered_with_paper_defaults():
    method = causalrag.METHODS["moi"]
    params = method.parameters()
    assert params["variant"] == "moi" and params["proposal"] == "sampled" and params["max_permutations"] == 0
    assert params["prefix"] == 0 and params["sc_permutations"] == 30 and params["shared_prefix"] == 1
