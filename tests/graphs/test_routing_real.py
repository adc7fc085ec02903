"""The routed default of every robust method end to end with the real bundled model on the demo collection:
where nothing conflicts each keeps standard RAG's very answer; where sources dispute but the joint reading and
the closed-book answer side with their plurality, MoI and CIS keep it too, and run their own path when the vote
route is forced; on the vote route a planted passage they rank first does not decide; among a correlation
trap's lone look-alikes the passage the question is asked of answers."""

import pytest

import causalrag
from causalrag.eval.robust import load_robust
from causalrag.graphs.registry import build_graph
from causalrag.tools.store import Store

pytestmark = pytest.mark.slow

ROUTED = [m for m in causalrag.METHODS if "mechanism" in causalrag.METHODS[m].parameters()]
BRIDGE = "Which river flows through the city where Ludwig van Beethoven was born?"
CONFLICT = "In what year was the Eiffel Tower completed?"


def run(method, llm, store, question, **params):
    params = {**causalrag.METHODS[method].cpu_params, **params}
    return build_graph(method, llm=llm, store=store, **params).invoke({"question": question})


@pytest.fixture(scope="module")
def standard(real_llm, demo_store):
    return build_graph("standard_rag", llm=real_llm, store=demo_store).invoke({"question": BRIDGE})


@pytest.fixture(scope="module")
def closed_book(real_llm, demo_store):
    return build_graph("no_rag", llm=real_llm, store=demo_store).invoke({"question": BRIDGE})


def test_every_robust_method_is_routed():
    assert set(ROUTED) == {"astute", "cf_rag", "retro", "moi", "cis"}


@pytest.mark.parametrize("method", ROUTED)
def test_nothing_in_conflict_keeps_standard_rags_very_answer(method, real_llm, demo_store, standard, closed_book):
    # measured: the passages read alone scatter over look-alike rivers, none with a plurality, so the joint
    # reading stands; standard RAG's and no_rag's answers are computed exact, so the texts are the same to the
    # character, whatever the method read before
    state = run(method, real_llm, demo_store, BRIDGE)
    assert state["assessment"]["route"] == "keep", state["assessment"]
    assert state["assessment"]["closed_book"] == closed_book["answer"]
    assert [e["node"] for e in state["trace"]] == ["retrieve", "recall", "answer", "assess"]
    assert state["answer"] == standard["answer"] and "Rhine" in state["answer"]


@pytest.mark.parametrize(("method", "own"), [("moi", "solve"), ("cis", "rerank_cis")])
def test_disagreeing_sources_go_to_the_methods_own_path(method, own, real_llm, demo_store):
    # measured: two passages say 1889, one says 1901 (the demo's planted conflict), and the joint reading and
    # the closed-book answer side with the two: three readings agree, so the routed default keeps standard
    # RAG's answer; the vote route (forced) runs the method's own path on the same evidence
    state = run(method, real_llm, demo_store, CONFLICT)
    assessment = state["assessment"]
    assert (assessment["shape"], assessment["route"]) == ("corroborated", "keep")
    assert "1889" in assessment["groups"][0]["answer"] and len(assessment["groups"]) >= 2
    assert [e["node"] for e in state["trace"]] == ["retrieve", "recall", "answer", "assess"]
    assert "1889" in state["answer"]
    state = run(method, real_llm, demo_store, CONFLICT, mechanism="vote")
    nodes = [e["node"] for e in state["trace"]]
    assert nodes[:4] == ["retrieve", "recall", "answer", "assess"] and own in nodes and nodes[-1] == "answer_confirmed"
    assert "1889" in state["answer"]


@pytest.mark.parametrize("method", ["moi", "cis"])
def test_a_planted_passage_ranked_first_does_not_decide_the_vote(method, real_llm):
    # a fictional card of the robustness suite: two passages name the discoverer, a planted FAQ restates the
    # question and answers "Marie Curie". Measured: both methods rank the FAQ first, and read together in
    # that order the model answered "Marie Curie" (the vote route before 2026-11-27's answer_confirmed)
    item = next(e for e in load_robust(split="dev", condition="planted_instruction") if e.id.startswith("c098-"))
    state = run(method, real_llm, Store.in_memory(item.passages), item.question)
    assert state["assessment"]["route"] == "vote", state["assessment"]
    assert [e["node"] for e in state["trace"]][-1] == "answer_confirmed"
    assert state["documents"][0].metadata["title"] == "Frequently asked questions"
    assert "Rostworska" in state["answer"] and "Curie" not in state["answer"]


@pytest.mark.parametrize("method", ["astute", "retro"])
def test_among_a_traps_look_alikes_the_passage_the_question_is_asked_of_answers(method, real_llm):
    # a correlation trap of the robustness suite's dev half: which instrument did Cal Morrow play? Four passages
    # about his quartet, his son and his bandmates, each read alone giving its own instrument. Measured (dev
    # run, 2026-11-27): the joint reading said "saxophone" (his quartet's saxophonist);
    # the question is 9 nats likelier asked of the passage that answers it than of any other, and no likelier
    # asked of two passages together
    item = next(e for e in load_robust(split="dev", condition="correlation_trap") if e.id.startswith("t065-"))
    state = run(method, real_llm, Store.in_memory(item.passages), item.question)
    assessment = state["assessment"]
    assert (assessment["shape"], assessment["route"]) == ("scattered", "focus"), assessment
    assert assessment["focus"]["margin"] > 3 and assessment["focus"]["joint"] < 2
    assert [e["node"] for e in state["trace"]][-1] == "answer_focus"
    assert "trombone" in state["answer"].lower() and "trombone" not in assessment["standard"].lower()
