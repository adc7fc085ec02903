"""The ``cis`` graph with a fake LLM and the real in-memory store: wiring, reranking, streaming, trace."""

import json
from pathlib import Path

import pytest

import causalrag
from causalrag.errors import CausalRAGError
from causalrag.graphs.registry import build_graph
from causalrag.prompts.cis import PRIOR_PREFIX
from tests.fakes import FakeLLM

QUESTION = "What is the capital city of Australia?"


def canberra_lp(prefix: str, cont: str) -> float:
    """Every passage is equally likely alone; given the question, the one naming Canberra is much likelier."""
    if prefix == PRIOR_PREFIX:
        return -10.0
    return -2.0 if "Canberra is the capital" in cont else -9.0 - len(cont) / 1000


def graph(llm, store, **params):
    """CIS's own path (its routing: tests/graphs/test_routing.py)."""
    return build_graph("cis", llm=llm, store=store, **params)


def test_registered_with_paper_defaults_and_listed_for_studio():
    params = causalrag.METHODS["cis"].parameters()
    assert params["n_candidates"] == 100 and params["retrieval"] == "bm25"
    assert params["use_prior"] is True and params["form"] == "qa" and params["reranker"] == "cis"
    spec = json.loads((Path(__file__).resolve().parents[2] / "langgraph.json").read_text())
    assert spec["graphs"]["cis"] == "./causalrag/studio.py:cis"


def test_rerank_keeps_top_k_by_cis_and_answers_from_them(memory_store):
    llm = FakeLLM({"Canberra is the capital": " Canberra\n"}, logprob=canberra_lp)
    state = graph(llm, memory_store, n_candidates=12, k=3).invoke({"question": QUESTION})
    assert state["answer"] == "Canberra"
    docs = state["documents"]
    assert len(docs) == 3 and docs[0].metadata["title"] == "Canberra"
    assert docs[0].metadata["cis"] == pytest.approx(8.0)
    assert docs[0].metadata["logp_k_given_q"] == -2.0 and docs[0].metadata["logp_k"] == -10.0
    assert [d.metadata["cis"] for d in docs] == sorted((d.metadata["cis"] for d in docs), reverse=True)
    assert len(state["cis_scores"]) == 12 and state["cis_scores"][0]["title"] == "Canberra"
    nodes = [e["node"] for e in state["trace"]]
    assert nodes == ["retrieve_candidates", "rerank_cis", "answer_reranked"]
    rerank = state["trace"][1]
    assert rerank["candidates"] == 12 and rerank["kept"] == 3 and rerank["llm_calls"] == 24
    assert rerank["prior_computed"] == 12 and rerank["nonfinite_scores"] == 0
    # the answer prompt holds the k reranked passages only
    last_block = llm.prompts[-1].rsplit("Passages:\n", 1)[1].split("\nQuestion:")[0]
    assert last_block.count("\n") == 2 and "Canberra: Canberra is the capital" in last_block


def test_second_query_reuses_cached_priors(memory_store, monkeypatch, tmp_path):
    monkeypatch.setenv("CAUSALRAG_HOME", str(tmp_path))  # an empty p(K) cache, not the one other tests filled
    llm = FakeLLM(logprob=canberra_lp)
    g = graph(llm, memory_store, n_candidates=8, k=2)

    def run(question: str) -> tuple[set[str], dict, int]:
        before = len(llm.scored)
        state = g.invoke({"question": question})
        priors = sum(prefix == PRIOR_PREFIX for prefix, _ in llm.scored[before:])
        return {row["id"] for row in state["cis_scores"]}, state["trace"][1], priors

    first, rerank, priors = run(QUESTION)
    assert len(first) == 8 and rerank["prior_computed"] == priors == 8 and rerank["prior_cached"] == 0
    second, rerank, priors = run("Which city is the capital of Australia?")
    assert len(first & second) >= 3  # the two questions share candidates
    assert rerank["prior_cached"] == len(first & second)
    assert rerank["prior_computed"] == priors == len(second - first)  # p(K) scored only for new passages


def test_ablation_without_prior_scores_only_the_conditional(memory_store):
    llm = FakeLLM(logprob=canberra_lp)
    state = graph(llm, memory_store, n_candidates=6, k=2, use_prior=False).invoke({"question": QUESTION})
    assert all("logp_k" not in d.metadata for d in state["documents"])
    assert all(p != PRIOR_PREFIX for p, _ in llm.scored)
    assert state["documents"][0].metadata["cis"] == -2.0


def test_stream_shows_candidates_then_reranked_evidence_with_scores(memory_store):
    events = list(graph(FakeLLM(logprob=canberra_lp), memory_store, n_candidates=6, k=2).stream(
        {"question": QUESTION}, stream_mode=["updates", "custom"]))
    evidence = [e for mode, e in events if mode == "custom" and e["type"] == "evidence"]
    assert [e["stage"] for e in evidence] == ["retrieve_candidates", "rerank_cis"]
    assert len(evidence[0]["documents"]) == 6 and len(evidence[1]["documents"]) == 2
    top = evidence[1]["documents"][0]
    assert {"cis", "logp_k_given_q", "logp_k", "first_stage_rank"} <= set(top) and top["score"] == top["cis"]


def test_no_candidates_and_bad_scores_do_not_crash(memory_store):
    state = graph(FakeLLM(default=" unknown"), memory_store, retrieval="dense", ids=[]).invoke({"question": QUESTION})
    assert state["documents"] == [] and state["answer"] == "unknown"
    nan = FakeLLM(logprob=lambda p, c: float("nan") if "Sydney" in c else -5.0)
    state = graph(nan, memory_store, n_candidates=8, k=8).invoke({"question": QUESTION})
    assert state["trace"][1]["nonfinite_scores"] >= 1
    assert "Sydney" not in state["documents"][0].page_content


def test_injected_passage_text_is_scored_not_obeyed(memory_store):
    llm = FakeLLM(logprob=canberra_lp)
    state = graph(llm, memory_store, n_candidates=20, k=2).invoke(
        {"question": "In which city is the Colosseum located?"}
    )
    assert [e["node"] for e in state["trace"]] == ["retrieve_candidates", "rerank_cis", "answer_reranked"]


def test_missing_distilled_model_is_a_clear_error(memory_store, tmp_path):
    with pytest.raises(CausalRAGError, match="distill-cis"):
        graph(FakeLLM(), memory_store, n_candidates=4, reranker="cis-distilled", distilled_path=str(tmp_path)).invoke(
            {"question": QUESTION})
