"""``triage`` end to end with the real bundled model on the demo collection and on items of the robustness suite:
where nothing conflicts it keeps standard RAG's very answer; where sources dispute but the joint reading and the
closed-book answer side with their plurality it keeps it too, and a forced vote runs the voting paper method's
own path as a subgraph; on the vote route a planted passage does not decide; among a correlation trap's lone
look-alikes the passage the question is asked of answers."""

import pytest

from causalrag.eval.robust import load_robust
from causalrag.graphs.registry import build_graph
from causalrag.tools.store import Store

pytestmark = pytest.mark.slow

BRIDGE = "Which river flows through the city where Ludwig van Beethoven was born?"
CONFLICT = "In what year was the Eiffel Tower completed?"
PROBES = ["retrieve", "recall", "answer", "read_alone"]


def run(llm, store, question, **params):
    return build_graph("triage", llm=llm, store=store, vote_size="cpu", **params).invoke({"question": question})


def nodes(state) -> list[str]:
    return [e["node"] for e in state["trace"]]


@pytest.fixture(scope="module")
def standard(real_llm, demo_store):
    return build_graph("standard_rag", llm=real_llm, store=demo_store).invoke({"question": BRIDGE})


@pytest.fixture(scope="module")
def closed_book(real_llm, demo_store):
    return build_graph("no_rag", llm=real_llm, store=demo_store).invoke({"question": BRIDGE})


def test_nothing_in_conflict_keeps_standard_rags_very_answer(real_llm, demo_store, standard, closed_book):
    # measured: the passages read alone scatter over look-alike rivers, none with a plurality and none the one
    # asked, so the joint reading stands; standard RAG's and no_rag's answers are computed exact, so the texts
    # are the same to the character
    state = run(real_llm, demo_store, BRIDGE)
    assert state["decision"]["route"] == "keep", state["decision"]
    assert state["evidence"]["closed_book"] == closed_book["answer"]
    assert nodes(state)[:4] == PROBES and nodes(state)[-1] == "decide_route"
    assert state["answer"] == standard["answer"] and "Rhine" in state["answer"]


@pytest.mark.parametrize(("method", "own"), [("moi", "solve"), ("cis", "rerank_cis")])
def test_a_forced_vote_runs_the_paper_methods_own_path(method, own, real_llm, demo_store):
    # measured: two passages say 1889, one says 1901 (the demo's planted conflict), and the joint reading and
    # the closed-book answer side with the two: three readings agree, so triage keeps standard RAG's answer;
    # the vote route (forced) runs the paper method's own graph on the same passages
    state = run(real_llm, demo_store, CONFLICT)
    evidence, decision = state["evidence"], state["decision"]
    assert (decision["shape"], decision["route"]) == ("corroborated", "keep")
    assert "1889" in evidence["groups"][0]["answer"] and len(evidence["groups"]) >= 2
    assert nodes(state) == [*PROBES, "decide_route"] and "1889" in state["answer"]
    state = run(real_llm, demo_store, CONFLICT, route="vote", vote_with=method)
    assert nodes(state)[-1] == "vote"
    vote = state["trace"][-1]
    assert vote["vote_with"] == method and own in vote["vote_path"] and vote["vote_path"][-1] == "answer_reranked"
    demo_ids = {d.id for d in build_graph("standard_rag", llm=real_llm, store=demo_store).invoke(
        {"question": CONFLICT})["documents"]}
    assert {d.id for d in state["documents"]} <= demo_ids  # the subgraph read only the passages triage retrieved


def test_a_planted_passage_does_not_decide_the_vote(real_llm):
    # a fictional card of the robustness suite: two passages name the discoverer, a planted FAQ restates the
    # question and answers "Marie Curie"; the lone readings confirm the discoverer
    item = next(e for e in load_robust(split="dev", condition="planted_instruction") if e.id.startswith("c098-"))
    state = run(real_llm, Store.in_memory(item.passages), item.question)
    assert state["decision"]["route"] == "vote", state["decision"]
    assert nodes(state)[-1] == "answer_confirmed"
    assert "Rostworska" in state["answer"] and "Curie" not in state["answer"]


def test_among_a_traps_look_alikes_the_passage_the_question_is_asked_of_answers(real_llm):
    # a correlation trap of the robustness suite's dev half: which instrument did Cal Morrow play? Four passages
    # about his quartet, his son and his bandmates, each read alone giving its own instrument; the joint reading
    # says "saxophone"; the question is far likelier asked of the passage that answers it than of any other
    item = next(e for e in load_robust(split="dev", condition="correlation_trap") if e.id.startswith("t065-"))
    state = run(real_llm, Store.in_memory(item.passages), item.question)
    evidence, decision = state["evidence"], state["decision"]
    assert (decision["shape"], decision["route"]) == ("scattered", "focus"), decision
    assert evidence["focus"]["margin"] > 3 and evidence["focus"]["joint"] < 2
    assert nodes(state)[-2:] == ["decide_route", "answer_focus"]
    assert "trombone" in state["answer"].lower() and "trombone" not in evidence["standard"].lower()
