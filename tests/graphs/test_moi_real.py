"""MoI end to end with the real bundled model on the real demo collection (small n: 4 passages)."""

import math

import pytest

from causalrag.graphs.registry import build_graph

pytestmark = pytest.mark.slow

QUESTION = "What is the capital city of Australia?"


def test_moi_ranks_every_candidate_and_answers(real_llm, demo_store):
    # n = 4 passages, |S| = 2n = 8 sampled orders: 9 scored sequences (with log p(q)) in one call
    state = build_graph("moi", llm=real_llm, store=demo_store, candidates=4, k=4).invoke({"question": QUESTION})
    trace = {e["node"]: e for e in state["trace"]}
    assert list(trace) == ["retrieve_candidates", "permute", "score", "solve", "answer"]
    assert len(state["ranking"]) == len(set(state["ranking"])) == 4
    assert set(state["ranking"]) == {d.id for d in state["documents"]}
    assert trace["score"]["llm_calls"] == 9 and trace["score"]["prompt_tokens"] > 400
    assert len(state["position_weights"]) == 4 and math.isclose(sum(state["position_weights"]), 1.0, abs_tol=1e-6)
    assert all(math.isfinite(u) for u in state["utilities"]) and trace["solve"]["solver_fallbacks"] == 0
    assert trace["solve"]["fit_rmse"] < max(state["utilities"]) - min(state["utilities"])
    # measured: the Canberra passage makes the question likelier than the Sydney/Melbourne ones
    titles = [d.metadata["title"] for d in state["documents"]]
    assert "Canberra" in titles[:2], titles
    assert "Canberra" in state["answer"]


def test_cyclic_pruned_variant_runs_cheaply(real_llm, demo_store):
    state = build_graph("moi", llm=real_llm, store=demo_store, candidates=4, k=4, proposal="cyclic", prefix=2).invoke(
        {"question": QUESTION}
    )
    trace = {e["node"]: e for e in state["trace"]}
    assert trace["permute"]["permutations"] == 4 and len(state["position_weights"]) == 2
    assert len(state["ranking"]) == 4 and state["answer"]
