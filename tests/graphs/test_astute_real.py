"""Astute RAG end to end with the real bundled model on a bundled knowledge-conflict question.

Small parameters to stay inside the test budget: k = 3 retrieved passages, t = 1 consolidation
round (the loop count itself is covered by the fake-LLM tests), m̂ = 1. The routed default keeps standard
RAG's answer on this question (two passages, the joint reading and the closed-book answer agree on 1889:
``tests/graphs/test_routing_real.py``), so these tests force the vote route to run Astute's own path.
"""

import pytest

from causalrag.corpus import demo_questions
from causalrag.graphs.registry import build_graph

pytestmark = pytest.mark.slow

EIFFEL = next(q for q in demo_questions() if q["id"] == "conflict-eiffel")


def test_conflict_question_is_consolidated_and_answered(real_llm, demo_store):
    graph = build_graph("astute", llm=real_llm, store=demo_store, k=3, iterations=1)
    state = graph.invoke({"question": EIFFEL["question"]})
    labels = {"ext 1", "ext 2", "ext 3"} | {d.metadata["label"] for d in state["internal"]}
    assert state["groups"], state["trace"]
    assert all(g["sources"] and set(g["sources"]) <= labels for g in state["groups"])
    assert state["candidates"] and all(0 <= c["confidence"] <= 1 for c in state["candidates"])
    assert "1889" in state["answer"], state
    nodes = [e["node"] for e in state["trace"]]
    assert nodes.count("consolidate") == 1 and nodes[-2:] == ["propose", "select"]
    assert state["trace"][-1]["group_confidences"] == [c["confidence"] for c in state["candidates"]]


def test_single_call_shortcut_produces_groups_and_an_answer(real_llm, demo_store):
    graph = build_graph(
        "astute", llm=real_llm, store=demo_store, k=3, iterations=1, combined=True, judge="generate"
    )
    state = graph.invoke({"question": EIFFEL["question"]})
    last = state["trace"][-1]
    assert last["node"] == "answer_combined"
    # one call; a second only when no group carried an answer (the 270M model tends to echo the worked example)
    assert last["llm_calls"] == 1 + last["plain_answer_fallback"]
    assert state["groups"] and all(g["sources"] for g in state["groups"]) and state["answer"], state
