"""The baselines end to end with the real bundled model on the real demo collection."""

import pytest

from causalrag.corpus import demo_questions
from causalrag.graphs.registry import build_graph

pytestmark = pytest.mark.slow


def contains(answer: str, expected: list[str]) -> bool:
    return any(e.lower() in answer.lower() for e in expected)


def test_standard_rag_answers_most_demo_questions(real_llm, demo_store):
    graph = build_graph("standard_rag", llm=real_llm, store=demo_store)
    results = {q["id"]: graph.invoke({"question": q["question"]}) for q in demo_questions()}
    right = [qid for q in demo_questions() if contains(results[(qid := q["id"])]["answer"], q["answers"])]
    # measured: 5 of 8 (the injection and the fictional conflict fool plain RAG: that is what the methods are for)
    assert len(right) >= 5, {k: v["answer"] for k, v in results.items()}
    assert {"simple-pride", "bridge-beethoven-river", "trap-australia-capital"} <= set(right)
    trace = results["simple-pride"]["trace"]
    assert trace[-1]["prompt_tokens"] > 100 and trace[-1]["new_tokens"] > 0


def test_no_rag_runs_closed_book(real_llm, demo_store):
    state = build_graph("no_rag", llm=real_llm, store=demo_store).invoke(
        {"question": "Who wrote the novel Pride and Prejudice?"}
    )
    assert state["documents"] == [] and state["answer"]
    assert state["trace"][0]["llm_calls"] == 1
