"""RetroRAG end to end with the real bundled model on the real demo collection.

Small parameters keep it inside the time budget: at most 2 iterations, 3 passages per retrieval
and in the evidence, 2 inference candidates.
"""

import pytest

from causalrag.corpus import demo_questions
from causalrag.graphs.registry import build_graph

pytestmark = pytest.mark.slow


def test_retro_runs_the_loop_on_a_bridge_question(real_llm, demo_store):
    question = next(q for q in demo_questions() if q["id"] == "bridge-beethoven-river")
    graph = build_graph("retro", llm=real_llm, store=demo_store, max_iterations=2, evidence_size=3, retrieve_k=3,
                        max_inferences=2)
    state = graph.invoke({"question": question["question"]})
    rounds = state["rounds"]
    assert 1 <= len(rounds) <= 2
    # the stop rule holds on real scores: stop early only above t, otherwise run to the budget
    for r in rounds[:-1]:
        assert r["stop"] == "" and r["sc"]["score"] <= 0.7
    last = rounds[-1]
    assert last["stop"] == "consistent" if last["sc"]["score"] > 0.7 else last["stop"] == "max_iterations"
    # collation kept the question's first-hop passage (Beethoven's birthplace) within N = 3
    assert all(len(r["evidence"]) <= 3 for r in rounds)
    assert "Ludwig van Beethoven" in rounds[0]["evidence"]
    assert state["answer"] and state["answer"] == last["answer"]
    nodes = [e["node"] for e in state["trace"]]
    assert nodes[:5] == ["retrieve", "collate", "discover", "answer_from_evidence", "check"]
    answer_step = next(e for e in state["trace"] if e["node"] == "answer_from_evidence")
    assert answer_step["new_tokens"] > 0 and answer_step["llm_calls"] >= 2  # CoT answer + SC answer
    if last["sc"]["raw"] is not None:
        assert 0.0 <= last["sc"]["raw"] <= 1.0 and 0.0 <= last["sc"]["calibrated"] <= 1.0
